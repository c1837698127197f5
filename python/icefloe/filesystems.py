"""pyarrow file systems for each location scheme, configured from Iceberg's properties.

:func:`make_filesystem` builds the file system :class:`~icefloe.io.FileIO` uses for a scheme:
local, S3 (``s3``, ``s3a``, ``s3n``, ``oss``), GCS, Azure (``abfs[s]``, ``wasb[s]``) and HDFS.
:func:`redacted` hides the credentials among such properties for reprs and messages.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

import pyarrow.fs as pafs

from icefloe.exceptions import FileIOError, UnsupportedFeatureError, ValidationError
from icefloe.properties import AZURE_SCHEMES as AZURE_SCHEMES  # the schemes of Azure locations
from icefloe.properties import parse_flag, parse_seconds, parse_url, redact_url

S3_ENDPOINT = "s3.endpoint"
S3_ACCESS_KEY_ID = "s3.access-key-id"
S3_SECRET_ACCESS_KEY = "s3.secret-access-key"
S3_SESSION_TOKEN = "s3.session-token"
S3_TOKEN_EXPIRES_AT_MS = "s3.session-token-expires-at-ms"
S3_REGION = "s3.region"
S3_PATH_STYLE_ACCESS = "s3.path-style-access"
S3_CONNECT_TIMEOUT = "s3.connect-timeout"
S3_REQUEST_TIMEOUT = "s3.request-timeout"
S3_ROLE_ARN = "s3.role-arn"
S3_ANONYMOUS = "s3.anonymous"

#: How long the GCS client retries a failing request (``gcs.retry-time-limit-seconds``);
#: google-cloud-cpp's own limit is 15 minutes, which an unreachable endpoint waits out.
GCS_RETRY_TIME_LIMIT_SECONDS = 30.0


LOCAL_SCHEMES = ("", "file")
S3_SCHEMES = ("s3", "s3a", "s3n", "oss")
GCS_SCHEMES = ("gs", "gcs")
HDFS_SCHEMES = ("hdfs", "viewfs")
ADLS_ACCOUNT_NAME = "adls.account-name"
ADLS_ACCOUNT_KEY = "adls.account-key"
ADLS_SAS_TOKEN = "adls.sas-token"
ADLS_CONNECTION_STRING = "adls.connection-string"
#: Iceberg Java's shared key: used for the account it names.
ADLS_SHARED_KEY_ACCOUNT_NAME = "adls.auth.shared-key.account.name"
ADLS_SHARED_KEY_ACCOUNT_KEY = "adls.auth.shared-key.account.key"
_ADLS_OPTIONS = {  # Iceberg/PyIceberg property -> pyarrow.fs.AzureFileSystem argument
    "adls.blob-storage-authority": "blob_storage_authority",
    "adls.dfs-storage-authority": "dfs_storage_authority",
    "adls.blob-storage-scheme": "blob_storage_scheme",
    "adls.dfs-storage-scheme": "dfs_storage_scheme",
    "adls.tenant-id": "tenant_id",
    "adls.client-id": "client_id",
    "adls.client-secret": "client_secret",
}
_SECRET_KEYS = (
    "secret",
    "token",
    "password",
    "credential",
    "key",
    "sas",
    "connection-string",
    "authorization",
)


def _is_secret(key: str) -> bool:
    """Whether property ``key`` holds a credential (a shared key's account name aside)."""
    name = key.lower()
    return any(s in name for s in _SECRET_KEYS) and name != ADLS_SHARED_KEY_ACCOUNT_NAME


def redacted(properties: Mapping[str, str]) -> dict[str, str]:
    """The properties with every credential value replaced by ``***`` (and the password of a
    URL, such as a SQL catalog's ``uri``, hidden)."""
    return {k: "***" if _is_secret(k) else redact_url(v) for k, v in properties.items()}


def secret_values(properties: Mapping[str, str]) -> list[str]:
    """The credential values among ``properties`` (access key ids aside), for removing them
    from error messages."""
    return [
        v for k, v in properties.items() if v and _is_secret(k) and not k.lower().endswith("key-id")
    ]


#: A key that looks like a TLS setting (``ssl.*``, ``s3.ssl.*``, ``*.tls.*``, ``s3.ssl-enabled``):
#: icefloe reads none, so one given is ignored with a warning (``jdbc.*`` keys are the SQL
#: catalog's, which reads or refuses them itself).
_TLS_KEY = re.compile(r"(?:^|\.)(?:ssl|tls)(?:$|[._-])", re.IGNORECASE)
#: TLS-like keys already warned about (once per process each).
_WARNED_TLS_KEYS: set[str] = set()
_WARNED_LOCK = threading.Lock()
_log = logging.getLogger(__name__)


def warn_unread_tls_keys(properties: Mapping[str, str]) -> None:
    """Log one warning for each key of ``properties`` that looks like a TLS setting icefloe
    does not read (once per process per key), naming the key, never its value: a setting
    that turns certificate checks on or off, or names a CA bundle, would otherwise be ignored
    without a word."""
    for key in properties:
        if not _TLS_KEY.search(key) or key.lower().startswith("jdbc."):
            continue
        with _WARNED_LOCK:
            if key in _WARNED_TLS_KEYS:
                continue
            _WARNED_TLS_KEYS.add(key)
        _log.warning(
            "property %r looks like a TLS setting, which icefloe does not read: it is ignored", key
        )


#: What no credential holds, and an HTTP header cannot carry: a line break or another control
#: character (a YAML block scalar, or a file read without stripping, ends a value in one).
_NOT_IN_CREDENTIALS = re.compile(r"[\x00-\x1f\x7f]")


def check_credential_text(name: str, value: str | None, what: str) -> None:
    """Refuse a credential holding a line break or another control character with a
    :class:`ValidationError` naming ``name`` (never the value, a secret)."""
    if value and _NOT_IN_CREDENTIALS.search(value):
        raise ValidationError(
            f"{what} {name} contains a line break or another control character (a trailing "
            "newline, say); remove it"
        )


def check_s3_keys(props: Mapping[str, str]) -> None:
    """Refuse one of ``s3.access-key-id`` and ``s3.secret-access-key`` without the other
    (:class:`ValidationError`): requests would be signed with an empty secret, or the secret
    ignored for other credentials found in the environment. Refuse keys together with
    ``s3.anonymous=true`` or ``s3.role-arn``, which pyarrow cannot combine with them."""
    key, secret = bool(props.get(S3_ACCESS_KEY_ID)), bool(props.get(S3_SECRET_ACCESS_KEY))
    if key != secret:
        given, missing = (
            (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY)
            if key
            else (S3_SECRET_ACCESS_KEY, S3_ACCESS_KEY_ID)
        )
        raise ValidationError(f"FileIO property {given} is set without {missing}; set both")
    for name in (S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_SESSION_TOKEN):
        check_credential_text(name, props.get(name), "FileIO property")
    keys = [k for k in (S3_ACCESS_KEY_ID, S3_SESSION_TOKEN) if props.get(k)]
    if keys and truthy(props.get(S3_ANONYMOUS)):
        raise ValidationError(
            f"FileIO property {S3_ANONYMOUS}=true is set with {' and '.join(keys)}: unsigned "
            "requests cannot use credentials; remove one or the other"
        )
    if keys and props.get(S3_ROLE_ARN):
        raise ValidationError(
            f"FileIO property {S3_ROLE_ARN} is set with {' and '.join(keys)}: a role is "
            "assumed with the credentials the AWS SDK finds itself (an instance role, the "
            "environment); remove one or the other"
        )


def truthy(value: str | None) -> bool:
    """Whether a property is set to true (``true``, ``1`` or ``yes``)."""
    return value is not None and value.strip().lower() in ("true", "1", "yes")


def make_filesystem(scheme: str, netloc: str, props: Mapping[str, str]) -> pafs.FileSystem:
    """The pyarrow file system for ``scheme`` (and, for HDFS and Azure, ``netloc``; for S3,
    whether the bucket ``netloc`` holds a dot) configured by Iceberg's ``s3.*``, ``gcs.*``,
    ``adls.*`` and ``hdfs.*`` properties."""
    if scheme in LOCAL_SCHEMES:
        return pafs.LocalFileSystem()
    if scheme in S3_SCHEMES:
        kwargs: dict[str, Any] = {}
        endpoint = props.get(S3_ENDPOINT)
        if endpoint:
            parse_url(S3_ENDPOINT, endpoint, "FileIO property")
            parsed = urlparse(endpoint)
            if parsed.scheme in ("http", "https"):
                kwargs["scheme"] = parsed.scheme
                kwargs["endpoint_override"] = parsed.netloc + parsed.path.rstrip("/")
            else:
                kwargs["endpoint_override"] = endpoint
            # Arrow uses path-style requests with an endpoint override unless told otherwise.
            # A bucket name with a dot stays path-style (no TLS certificate or DNS name holds
            # it as a host), as icefloe's own S3 client and the AWS SDKs address it.
            path_style = props.get(S3_PATH_STYLE_ACCESS)
            if (
                path_style is not None
                and not parse_flag(S3_PATH_STYLE_ACCESS, path_style)
                and "." not in netloc
            ):
                kwargs["force_virtual_addressing"] = True
        check_s3_keys(props)
        if props.get(S3_ACCESS_KEY_ID):
            kwargs["access_key"] = props[S3_ACCESS_KEY_ID]
            kwargs["secret_key"] = props[S3_SECRET_ACCESS_KEY]
            if S3_SESSION_TOKEN in props:
                kwargs["session_token"] = props[S3_SESSION_TOKEN]
        if truthy(props.get(S3_ANONYMOUS)):
            kwargs["anonymous"] = True
        region = props.get(S3_REGION) or props.get("client.region")
        if region:
            kwargs["region"] = region
        if S3_ROLE_ARN in props:
            kwargs["role_arn"] = props[S3_ROLE_ARN]
        if S3_CONNECT_TIMEOUT in props:
            kwargs["connect_timeout"] = parse_seconds(
                S3_CONNECT_TIMEOUT, props[S3_CONNECT_TIMEOUT], what="FileIO property"
            )
        if S3_REQUEST_TIMEOUT in props:
            kwargs["request_timeout"] = parse_seconds(
                S3_REQUEST_TIMEOUT, props[S3_REQUEST_TIMEOUT], what="FileIO property"
            )
        return pafs.S3FileSystem(**kwargs)
    if scheme in GCS_SCHEMES:
        return _gcs_filesystem(props)
    if scheme in AZURE_SCHEMES:
        return _azure_filesystem(netloc, props)
    host, _, port = netloc.partition(":")
    try:
        return pafs.HadoopFileSystem(
            host=props.get("hdfs.host", host or "default"),
            port=int(props.get("hdfs.port", port or 0)),
            user=props.get("hdfs.user"),
            kerb_ticket=props.get("hdfs.kerberos_ticket"),
        )
    except Exception as exc:
        raise FileIOError(f"cannot connect to HDFS at {scheme}://{netloc}: {exc}") from exc


class TokenCredentialAzureFileSystem(pafs.AzureFileSystem):  # type: ignore[misc]
    """An Azure file system that authenticates with an Azure AD token (the default credential
    chain, or ``adls.client-id``/``adls.client-secret``/``adls.tenant-id``), not with a key or a
    SAS token. pyarrow's ``open_input_file`` lets a failure to get the token escape as a C++
    exception, which aborts the process; :meth:`~icefloe.io.InputFile.open` asks for a file's
    info first (:meth:`token_checked`), which reports that failure as an error, once per
    :data:`TOKEN_CHECK_SECONDS` (the SDK keeps a token it got for about an hour)."""

    _token_checked_at: float | None = None

    def token_checked(self, path: str) -> None:
        """Ask for ``path``'s info if no request got a token in the last
        :data:`TOKEN_CHECK_SECONDS` (its errors raise as pyarrow raises them)."""
        now = time.monotonic()
        last = self._token_checked_at
        if last is not None and now - last < TOKEN_CHECK_SECONDS:
            return
        self.get_file_info(path)
        self._token_checked_at = now


#: How long a token an Azure AD read got counts as there (the SDK refreshes it minutes
#: before its expiry, which is an hour or more away when it is issued).
TOKEN_CHECK_SECONDS = 300.0


#: Iceberg Java's GCS settings icefloe's client (pyarrow's) cannot apply; ignoring them would
#: write objects without the customer-supplied key the user asked for.
_GCS_UNSUPPORTED = ("gcs.encryption-key", "gcs.decryption-key")
#: A token with no ``gcs.oauth2.token-expires-at`` is taken as good for this long (pyarrow
#: needs an expiry; the store refuses the token when it really expires).
_GCS_TOKEN_DAYS = 365


def _gcs_filesystem(props: Mapping[str, str]) -> pafs.FileSystem:
    """The GCS file system of Iceberg's ``gcs.*`` properties (PyIceberg's and Java's names):
    ``gcs.project-id``, ``gcs.service.host``, ``gcs.oauth2.token`` with
    ``gcs.oauth2.token-expires-at`` (epoch ms), ``gcs.anonymous`` or Java's ``gcs.no-auth``,
    ``gcs.impersonate.service-account``, ``gcs.default-bucket-location`` and
    ``gcs.retry-time-limit-seconds``."""
    from datetime import datetime, timedelta, timezone

    for key in _GCS_UNSUPPORTED:
        if props.get(key):
            raise UnsupportedFeatureError(
                f"FileIO property {key}: customer-supplied encryption keys are not supported "
                "by icefloe's GCS client (pyarrow); objects would be written or read without it"
            )
    gcs: dict[str, Any] = {}
    if props.get("gcs.project-id"):
        gcs["project_id"] = props["gcs.project-id"]
    if props.get("gcs.service.host"):
        host = props["gcs.service.host"]
        try:
            parsed = urlparse(host)
            parsed.port  # noqa: B018 - a port that is not a number raises here
        except ValueError as exc:
            raise ValidationError(f"FileIO property gcs.service.host {host!r}: {exc}") from None
        gcs["scheme"] = parsed.scheme or "https"
        gcs["endpoint_override"] = parsed.netloc or host
    anonymous = any(
        parse_flag(key, props[key]) for key in ("gcs.anonymous", "gcs.no-auth") if key in props
    )
    token = props.get("gcs.oauth2.token")
    if token and anonymous:
        raise ValidationError(
            "FileIO properties gcs.oauth2.token and gcs.anonymous (or gcs.no-auth) contradict "
            "each other: give one of them"
        )
    if anonymous:
        gcs["anonymous"] = True
    elif token:
        gcs["access_token"] = token
        expires = props.get("gcs.oauth2.token-expires-at")
        if expires:
            try:
                at = datetime.fromtimestamp(int(expires) / 1000, timezone.utc)
            except (ValueError, OverflowError, OSError):
                raise ValidationError(
                    f"FileIO property gcs.oauth2.token-expires-at must be epoch milliseconds, "
                    f"got {expires!r}"
                ) from None
        else:
            at = datetime.now(timezone.utc) + timedelta(days=_GCS_TOKEN_DAYS)
        gcs["credential_token_expiration"] = at
    if props.get("gcs.impersonate.service-account"):
        gcs["target_service_account"] = props["gcs.impersonate.service-account"]
    if props.get("gcs.default-bucket-location"):
        gcs["default_bucket_location"] = props["gcs.default-bucket-location"]
    key, seconds = "gcs.retry-time-limit-seconds", GCS_RETRY_TIME_LIMIT_SECONDS
    if key in props:
        seconds = parse_seconds(key, props[key], what="FileIO property")
    try:
        gcs["retry_time_limit"] = timedelta(seconds=seconds)
    except OverflowError:
        raise ValidationError(
            f"FileIO property {key} must be a number of seconds a timedelta holds, "
            f"got {props[key]!r}"
        ) from None
    return pafs.GcsFileSystem(**gcs)


def azure_account_option(
    props: Mapping[str, str], prefix: str, account: str, shared: bool = True
) -> str | None:
    """The value of ``<prefix>.<account>`` or ``<prefix>.<account>.<host suffix>`` (Iceberg
    Java's per-account forms, ``adls.sas-token.myaccount.dfs.core.windows.net``), else (with
    ``shared``) of ``<prefix>`` itself."""
    per_account = f"{prefix}.{account}".lower()
    for key, value in props.items():
        name = key.lower()
        if value and (name == per_account or name.startswith(per_account + ".")):
            return value
    return (props.get(prefix) or None) if shared else None


def _shared_credentials_for(props: Mapping[str, str], account: str) -> bool:
    """Whether the credentials given for no account in particular (``adls.sas-token``,
    ``adls.account-key``, ``adls.connection-string``) are for ``account``: with
    ``adls.account-name`` set they are that account's, and a location naming another account
    gets only its own ``<property>.<account>`` ones (a metadata file must not draw a token to
    an account it names)."""
    named = props.get("adls.account-name")
    return not named or named.lower() == account.lower()


def _connection_string(props: Mapping[str, str], account: str) -> dict[str, str]:
    """The parts of an Azure connection string (``adls.connection-string[.<account>]``,
    ``AccountName=...;AccountKey=...;BlobEndpoint=...``) as lower-case names; an endpoint URL
    alone (Iceberg Java's form) as ``blobendpoint`` or ``dfsendpoint``, a query it has as
    ``sharedaccesssignature``."""
    shared = _shared_credentials_for(props, account)
    raw = azure_account_option(props, ADLS_CONNECTION_STRING, account, shared)
    if not raw:
        return {}
    if "=" not in raw.split("?", 1)[0]:
        endpoint, _, query = raw.strip().partition("?")
        kind = "dfs" if ".dfs." in urlparse(endpoint).netloc.lower() else "blob"
        return {f"{kind}endpoint": endpoint, "sharedaccesssignature": query}
    parts: dict[str, str] = {}
    for item in raw.split(";"):
        name, eq, value = item.partition("=")
        if eq and name.strip():
            parts[name.strip().lower()] = value.strip()
    return parts


def _endpoint_authority(endpoint: str, account: str) -> tuple[str, str]:
    """(scheme, authority) for pyarrow from a connection string's endpoint URL: the host of
    ``https://<account>.blob.core.windows.net`` as ``.blob.core.windows.net`` (pyarrow puts the
    account in front), an emulator's ``http://127.0.0.1:10000/<account>`` as
    ``127.0.0.1:10000`` (pyarrow puts the account in the path)."""
    parsed = urlparse(endpoint)
    host = parsed.netloc
    if host.lower().startswith(account.lower() + "."):
        host = host[len(account) :]
    return parsed.scheme or "https", host


def _azure_filesystem(account: str, props: Mapping[str, str]) -> pafs.FileSystem:
    """The file system for Azure storage account ``account`` (named by the location, else
    ``adls.account-name``), with the credential given for it: its own
    ``adls.sas-token.<account>[...]``, else ``adls.sas-token``, ``adls.account-key``, or a
    connection string; without one pyarrow uses Azure AD (``adls.client-id`` and co., or the
    default credential chain)."""
    shared = _shared_credentials_for(props, account)
    azure: dict[str, Any] = {a: props[k] for k, a in _ADLS_OPTIONS.items() if props.get(k)}
    if not shared:
        azure.pop("sas_token", None)
        azure.pop("account_key", None)
    props_args = set(azure)
    conn = _connection_string(props, account)
    if conn.get("accountname") and conn["accountname"].lower() != account.lower():
        if azure_account_option(props, ADLS_CONNECTION_STRING, account, shared=False):
            raise ValidationError(
                f"FileIO property {ADLS_CONNECTION_STRING}.{account} is for storage account "
                f"{conn['accountname']!r}, not {account!r}"
            )
        conn = {}  # the shared string is another account's: not this one's credential
    endpoints = {kind: conn.get(f"{kind}endpoint") for kind in ("blob", "dfs")}
    for kind, other in (("blob", "dfs"), ("dfs", "blob")):
        given = endpoints[other]
        if not endpoints[kind] and given:  # an emulator serves both at one address
            endpoints[kind] = given.replace(f".{other}.", f".{kind}.", 1)
    protocol, suffix = conn.get("defaultendpointsprotocol"), conn.get("endpointsuffix")
    for kind, endpoint in endpoints.items():
        if endpoint:
            scheme, authority = _endpoint_authority(endpoint, account)
        elif protocol or suffix:
            scheme, authority = protocol or "https", f".{kind}.{suffix or 'core.windows.net'}"
        else:
            continue
        azure.setdefault(f"{kind}_storage_scheme", scheme)
        azure.setdefault(f"{kind}_storage_authority", authority)
    sas = azure_account_option(props, ADLS_SAS_TOKEN, account, shared) or conn.get(
        "sharedaccesssignature"
    )
    key = (props.get(ADLS_ACCOUNT_KEY) if shared else None) or conn.get("accountkey")
    shared_name = props.get(ADLS_SHARED_KEY_ACCOUNT_NAME)
    if not key and shared_name and shared_name.lower() == account.lower():
        key = props.get(ADLS_SHARED_KEY_ACCOUNT_KEY)
    if sas:
        check_credential_text(ADLS_SAS_TOKEN, sas, "FileIO property")
        # pyarrow appends the token to each URL as it is; Azure gives it without the "?"
        azure["sas_token"] = sas if sas.startswith("?") else "?" + sas
    elif key:
        check_credential_text(ADLS_ACCOUNT_KEY, key, "FileIO property")
        azure["account_key"] = key
    else:
        plain = [k for k in ("blob_storage_scheme", "dfs_storage_scheme") if azure.get(k) == "http"]
        if plain:
            # Azure AD tokens are refused over http (pyarrow would abort the process)
            http = [f"adls.{k.replace('_', '-')}=http" for k in plain if k in props_args]
            raise ValidationError(
                f"Azure storage account {account!r} is reached over http ("
                + (", ".join(http) or f"its {ADLS_CONNECTION_STRING}")
                + f") without a key or SAS token: set {ADLS_ACCOUNT_KEY}, {ADLS_SAS_TOKEN} "
                f"(or {ADLS_SAS_TOKEN}.<account>) or {ADLS_CONNECTION_STRING}; Azure AD "
                "credentials need https"
            )
    cls = (
        pafs.AzureFileSystem
        if ("sas_token" in azure or "account_key" in azure)
        else (TokenCredentialAzureFileSystem)
    )
    try:
        return cls(account, **azure)
    except Exception as exc:
        text = redact_url(str(exc))
        for secret in (azure.get(k) for k in ("sas_token", "account_key", "client_secret")):
            if secret and len(secret) >= 4:
                text = text.replace(secret, "***").replace(secret.lstrip("?"), "***")
        raise FileIOError(f"cannot configure Azure storage account {account!r}: {text}") from exc
