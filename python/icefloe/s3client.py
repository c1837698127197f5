"""The S3 requests pyarrow's ``S3FileSystem`` cannot make, signed with :mod:`icefloe.sigv4`.

- ``PutObject`` with ``If-None-Match: *``: an atomic create-if-absent, which the file-system
  catalog needs to commit safely on object stores (pyarrow drops the header).
- ``PutObject`` of a small object in one request (atomic replace).
- ``GetObject`` of a whole small file in one request (no ``HEAD`` first, as pyarrow sends).
- ``DeleteObjects`` of up to 1,000 keys per request, with ``Content-MD5`` (which some
  S3-compatible servers require and pyarrow's SDK no longer sends).
- ``ListMultipartUploads`` and ``AbortMultipartUpload`` of one key, to abort the upload a
  failed pyarrow write left behind (pyarrow's stream does not abort it).

The client is configured from the same ``s3.*`` properties as pyarrow. Credentials come from
the properties, else the environment (``AWS_ACCESS_KEY_ID``...), else the shared credentials
file's profile (``AWS_PROFILE``); when none of those has them (an instance role, for example)
:meth:`S3Client.from_properties` returns None and the caller falls back to pyarrow.

HTTPS verifies the server against the system's certificates, or those of ``AWS_CA_BUNDLE`` as
the AWS SDKs do. Errors name the location and never include credentials or signatures.
"""

from __future__ import annotations

import base64
import configparser
import functools
import hashlib
import http.client
import os
import re
import socket
import ssl
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlencode, urlsplit

import pyarrow.fs as pafs

from icefloe.exceptions import (
    AlreadyExistsError,
    FileIOError,
    NotFoundError,
    UnknownWriteStateError,
    ValidationError,
    WrongRegionError,
)
from icefloe.filesystems import check_credential_text, check_s3_keys
from icefloe.properties import parse_flag, parse_seconds, parse_url
from icefloe.sigv4 import Credentials, sign_headers

__all__ = ["DELETE_BATCH", "S3Client", "resolve_credentials"]

DELETE_BATCH = 1000
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_REQUEST_TIMEOUT = 60.0
_ATTEMPTS = 3


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("true", "1", "yes")


def resolve_credentials(props: Mapping[str, str]) -> Credentials | None:
    """Static keys from the properties, else the environment, else the shared profile
    (:class:`~icefloe.exceptions.ValidationError` for a key id without its secret)."""
    check_s3_keys(props)
    key = props.get("s3.access-key-id")
    if key:
        return Credentials(
            key, props["s3.secret-access-key"], props.get("s3.session-token") or None
        )
    env_key = os.environ.get("AWS_ACCESS_KEY_ID")
    env_secret = os.environ.get("AWS_SECRET_ACCESS_KEY")
    if env_key and env_secret:
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            check_credential_text(name, os.environ.get(name), "environment variable")
        return Credentials(env_key, env_secret, os.environ.get("AWS_SESSION_TOKEN") or None)
    named = os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE")
    profile = named or "default"
    path = os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or os.path.expanduser("~/.aws/credentials")
    # values as written, `%` included, as the AWS SDKs read them
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path)
    except configparser.Error:
        return None
    if not parser.has_section(profile):
        if named and named != "default" and not _in_config_file(named):
            # the AWS SDKs refuse it (ProfileNotFound) rather than go on without credentials
            raise ValidationError(
                f"the AWS profile {named!r} (AWS_PROFILE) is in neither the credentials file "
                f"{path} nor the config file {_config_file()}"
            )
        return None
    section = parser[profile]  # without interpolation, reading a value cannot fail
    key = section.get("aws_access_key_id")
    secret = section.get("aws_secret_access_key")
    token = section.get("aws_session_token")
    if key and secret:
        return Credentials(key, secret, token or None)
    return None


def _config_file() -> str:
    return os.environ.get("AWS_CONFIG_FILE") or os.path.expanduser("~/.aws/config")


def _in_config_file(profile: str) -> bool:
    """Whether the shared config file has ``profile`` (``[profile NAME]``, or ``[default]``),
    whose credentials the AWS SDK's chain may find elsewhere (SSO, a role, a process)."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(_config_file())
    except configparser.Error:
        return True  # unreadable here; the SDK's chain decides
    return parser.has_section(f"profile {profile}") or (
        profile == "default" and parser.has_section("default")
    )


class _NotSent(Exception):
    """The request never reached the server (connection refused, connect timeout)."""


class _NoAnswer(Exception):
    """The request may have reached the server, but no answer came back."""


@dataclass(frozen=True)
class _Response:
    status: int
    body: bytes
    #: the ``x-amz-bucket-region`` header: S3 names the bucket's region in its answers
    region: str | None = None

    def error(self) -> tuple[str, str]:
        """(code, message) of an S3 XML error body."""
        try:
            root = ET.fromstring(self.body)
        except ET.ParseError:
            return "", ""
        return root.findtext("Code") or "", root.findtext("Message") or ""


class S3Client:
    """Signed S3 requests to one endpoint (AWS or an S3-compatible server)."""

    def __init__(
        self,
        *,
        region: str,
        credentials: Credentials | None,
        endpoint: str | None = None,
        path_style: bool | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    ) -> None:
        self.region = region
        self._credentials = credentials
        if endpoint:
            parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
            self._scheme, self._host = parts.scheme, parts.netloc
            self._base_path = parts.path.rstrip("/")
            self._path_style = True if path_style is None else path_style
        else:
            self._scheme, self._host = "https", f"s3.{region}.amazonaws.com"
            self._base_path = ""
            self._path_style = bool(path_style)
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self._local = threading.local()  # kept-alive connections, per thread and process

    def __repr__(self) -> str:
        return f"S3Client({self._scheme}://{self._host}, region={self.region!r})"

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> S3Client | None:
        """A client for the ``s3.*`` properties, or None when no credentials can be resolved
        here (pyarrow may still find some, e.g. an instance role)."""
        check_s3_keys(props)
        anonymous = _truthy(props.get("s3.anonymous"))
        credentials = None if anonymous else resolve_credentials(props)
        if credentials is None and not anonymous:
            return None
        region = props.get("s3.region") or props.get("client.region") or default_region()
        style = props.get("s3.path-style-access")
        endpoint = props.get("s3.endpoint")
        if endpoint:
            parse_url("s3.endpoint", endpoint, "FileIO property")
        return S3Client(
            region=region,
            credentials=credentials,
            endpoint=endpoint,
            path_style=None if style is None else parse_flag("s3.path-style-access", style),
            connect_timeout=parse_seconds(
                "s3.connect-timeout",
                props.get("s3.connect-timeout", str(DEFAULT_CONNECT_TIMEOUT)),
                what="FileIO property",
            ),
            request_timeout=parse_seconds(
                "s3.request-timeout",
                props.get("s3.request-timeout", str(DEFAULT_REQUEST_TIMEOUT)),
                what="FileIO property",
            ),
        )

    # -- transport ------------------------------------------------------------------------------
    def _target(self, bucket: str, key: str, query: str) -> tuple[str, str]:
        """(host, path with query) of an object or bucket request."""
        if not bucket.isascii():  # no request line can carry it
            raise ValidationError(f"{bucket!r} is not a valid bucket name: it is not ASCII")
        encoded = quote(key, safe="/-_.~")
        if self._path_style or "." in bucket:
            host = self._host
            path = f"{self._base_path}/{bucket}" + (f"/{encoded}" if key else "/")
        else:
            host = f"{bucket}.{self._host}"
            path = f"{self._base_path}/{encoded}"
        return host, path + (f"?{query}" if query else "")

    def _send(
        self,
        method: str,
        bucket: str,
        key: str,
        *,
        query: str = "",
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
    ) -> _Response:
        host, target = self._target(bucket, key, query)
        payload_hash = hashlib.sha256(body).hexdigest()
        all_headers = {"x-amz-content-sha256": payload_hash, **(headers or {})}
        if body or method in ("PUT", "POST"):
            all_headers["content-length"] = str(len(body))
        url = f"{self._scheme}://{host}{target}"
        if self._credentials is not None:
            all_headers = sign_headers(
                method, url, {"host": host, **all_headers}, payload_hash, self._credentials,
                self.region,
            )  # fmt: skip
        for attempt in (0, 1):
            conn, reused = self._connection(host)
            try:
                if conn.sock is not None:
                    conn.sock.settimeout(self.request_timeout)
                conn.request(method, target, body=body, headers=all_headers)
                response = conn.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as exc:
                self._discard(host)
                # A kept-alive connection the server closed meanwhile: a read or a delete is
                # sent again at once; a write is left to the caller, who can check its outcome.
                if reused and attempt == 0 and method != "PUT":
                    continue
                raise _NoAnswer(_describe(exc)) from None
            if response.will_close:
                self._discard(host)
            return _Response(response.status, data, response.getheader("x-amz-bucket-region"))
        raise AssertionError("unreachable")

    def _connection(self, host: str) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's kept-alive connection to ``host`` (new after a fork), and whether it
        was used before."""
        pool: dict[str, http.client.HTTPConnection] | None = getattr(self._local, "pool", None)
        if pool is None or getattr(self._local, "pid", None) != os.getpid():
            pool = self._local.pool = {}
            self._local.pid = os.getpid()
        kept = pool.get(host)
        if kept is not None:
            return kept, True
        conn: http.client.HTTPConnection
        if self._scheme == "https":
            context = ssl.create_default_context(cafile=os.environ.get("AWS_CA_BUNDLE") or None)
            conn = http.client.HTTPSConnection(host, timeout=self.connect_timeout, context=context)
        else:
            conn = http.client.HTTPConnection(host, timeout=self.connect_timeout)
        try:
            conn.connect()
        except OSError as exc:
            conn.close()
            raise _NotSent(_describe(exc)) from None
        pool[host] = conn
        return conn, False

    def _discard(self, host: str) -> None:
        pool = getattr(self._local, "pool", None)
        conn = pool.pop(host, None) if pool is not None else None
        if conn is not None:
            conn.close()

    def _location(self, bucket: str, key: str) -> str:
        return f"s3://{bucket}/{key}"

    def _fail(self, response: _Response, location: str, action: str) -> FileIOError:
        code, message = response.error()
        detail = self._scrub(f"{response.status} {code}: {message}".strip().rstrip(":"))
        if code == "NoSuchBucket":
            bucket = location.split("/")[2]
            return NotFoundError(f"cannot {action} {location}: bucket {bucket!r} does not exist")
        if code == "PermanentRedirect" or (response.status == 301 and response.region):
            # S3's answer for a bucket in another region (a 301 of another server, say a
            # proxy sending http to https, is not: it names no region)
            bucket = location.split("/")[2]
            return WrongRegionError.at(location, action, bucket, response.region, self.region)
        if code == "NoSuchKey" or (response.status == 404 and not code):
            return NotFoundError(f"cannot {action} {location}: file not found")
        if response.status == 403 or code in ("SignatureDoesNotMatch", "InvalidAccessKeyId"):
            return FileIOError(
                f"cannot {action} {location}: access denied ({detail}); check the S3 "
                "credentials and their permissions"
            )
        return FileIOError(f"cannot {action} {location}: {detail}")

    def _unreachable(self, bucket: str, location: str, action: str, why: str) -> FileIOError:
        """The error of a request to ``bucket`` that got no answer, naming the host it was
        sent to: with virtual-host addressing the bucket's own host, not the endpoint's."""
        host = self._target(bucket, "", "")[0]
        where = f"S3 endpoint {self._scheme}://{host}"
        if host != self._host:
            where = (
                f"S3 host {self._scheme}://{host} (bucket {bucket!r} as a virtual host of "
                f"endpoint {self._scheme}://{self._host}; s3.path-style-access=true sends "
                "requests to the endpoint itself)"
            )
        return FileIOError(f"cannot {action} {location}: {where} did not answer ({why})")

    # -- operations -----------------------------------------------------------------------------
    #: 5xx answers that say the server did not process the request (501 Not Implemented: for
    #: example s3proxy refusing ``X-Amz-Security-Token``; 505 HTTP Version Not Supported): the
    #: object was not written, and a retry would be refused the same way.
    _NOT_PROCESSED = (501, 505)

    def _refused(self, response: _Response, location: str, earlier: str) -> FileIOError:
        """The error for a PUT the server refused outright: definite, unless an earlier
        attempt (``earlier``: why it may have written) leaves the outcome unknown."""
        code, message = response.error()
        detail = self._scrub(f"{response.status} {code}: {message}".strip().rstrip(":"))
        if earlier:
            return UnknownWriteStateError(
                f"cannot tell whether {location} was written: {earlier}; then {detail}"
            )
        return FileIOError(f"cannot write {location}: {detail} (nothing was written)")

    def secrets(self) -> list[str]:
        """The secret key and session token, for scrubbing messages made elsewhere."""
        creds = self._credentials
        return [s for s in (creds.secret_access_key, creds.session_token) if s] if creds else []

    def _scrub(self, text: str) -> str:
        """``text`` without the credentials' secrets, should a server echo what it was sent
        (secrets too short to tell apart from other text are left alone)."""
        creds = self._credentials
        for secret in (creds.secret_access_key, creds.session_token) if creds else ():
            if secret and len(secret) >= 8:
                text = text.replace(secret, "***")
        return text

    def put_object(self, bucket: str, key: str, body: bytes, *, if_absent: bool = False) -> None:
        """Write the object in one request; with ``if_absent`` only if no object exists
        (:class:`AlreadyExistsError` otherwise).

        A request that may have reached the server without an answer is retried; if the retry
        finds the object, its content decides whether the earlier attempt wrote it, and a 409
        (a conditional write of the key in progress) is asked again (on the last attempt, it
        is :class:`AlreadyExistsError` unless an earlier attempt may have written). When the
        outcome stays unknown the error is :class:`UnknownWriteStateError`. A refusal that
        means the request was not processed (501, 505) is not retried: :class:`FileIOError`.
        """
        location = self._location(bucket, key)
        headers = {"if-none-match": "*"} if if_absent else {}
        maybe_written = False
        last = ""
        for attempt in range(_ATTEMPTS):
            if attempt:
                time.sleep(0.1 * 2**attempt)
            try:
                response = self._send("PUT", bucket, key, headers=headers, body=body)
            except _NotSent as exc:
                last = str(exc)
                continue
            except _NoAnswer as exc:
                maybe_written, last = True, str(exc)
                continue
            if response.status in (200, 201, 204):
                return
            if if_absent and response.status in (409, 412):
                if response.status == 409 and (maybe_written or attempt + 1 < _ATTEMPTS):
                    # a conditional write of the key is in progress (perhaps the earlier
                    # attempt's), no proof that another one won: ask again once it has ended,
                    # as S3 advises
                    last = f"{response.status} {response.error()[0]}".strip()
                    continue
                if maybe_written and self._holds(bucket, key, body):
                    return  # our own earlier attempt created it
                raise AlreadyExistsError(f"cannot create {location}: file already exists")
            if response.status in self._NOT_PROCESSED:
                raise self._refused(response, location, last if maybe_written else "")
            if response.status >= 500:
                maybe_written, last = True, f"{response.status} {response.error()[0]}".strip()
                continue
            raise self._fail(response, location, "write")
        if maybe_written:
            raise UnknownWriteStateError(f"cannot tell whether {location} was written: {last}")
        raise self._unreachable(bucket, location, "write", last)

    def bucket_region(self, bucket: str) -> str | None:
        """The region S3 names for ``bucket`` (its ``x-amz-bucket-region`` header, which a
        ``HEAD`` of the bucket carries from any region), or None when it does not say."""
        try:
            return self._send("HEAD", bucket, "").region
        except (_NotSent, _NoAnswer):
            return None

    def get_object(self, bucket: str, key: str) -> bytes:
        """The whole object, in one ``GET`` (retried when the server does not answer)."""
        location = self._location(bucket, key)
        response, last = self._get_retried(bucket, key, lambda status: status >= 500)
        if response is not None and response.status == 200:
            return response.body
        if response is not None and response.status < 500:
            raise self._fail(response, location, "read")
        raise self._unreachable(bucket, location, "read", last)

    def _holds(self, bucket: str, key: str, body: bytes) -> bool:
        """Whether the object that refused a conditional create is ``body`` (an earlier attempt
        of ours that may have been stored wrote it). A read-back that fails or finds nothing is
        retried; when it never tells, :class:`UnknownWriteStateError`: taking it as another
        writer's would make a commit that landed look lost."""
        response, last = self._get_retried(
            bucket, key, lambda status: status == 404 or status >= 500
        )
        if response is not None and response.status == 200:
            return response.body == body
        raise UnknownWriteStateError(
            f"cannot tell whether {self._location(bucket, key)} was written: it exists, but "
            f"reading it back failed ({last})"
        )

    def _get_retried(
        self, bucket: str, key: str, again: Callable[[int], bool]
    ) -> tuple[_Response | None, str]:
        """``GET`` the object, asked again (up to :data:`_ATTEMPTS` times) while the server
        does not answer or answers a status ``again`` accepts: the last answer (``None`` when
        none came) and the last failure's text."""
        last = ""
        response: _Response | None = None
        for attempt in range(_ATTEMPTS):
            if attempt:
                time.sleep(0.1 * 2**attempt)
            try:
                response = self._send("GET", bucket, key)
            except (_NotSent, _NoAnswer) as exc:
                response, last = None, str(exc)
                continue
            if response.status == 200:
                break
            last = f"{response.status} {response.error()[0]}".strip()
            if not again(response.status):
                break
        return response, last

    def delete_objects(
        self,
        bucket: str,
        keys: Iterable[str],
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        """Delete ``keys`` with ``DeleteObjects`` requests of up to 1,000 keys (missing keys are
        not an error); ``on_batch(n)`` is called after each request.

        A key that XML 1.0 cannot carry (``U+FFFE``, a control character) or would not keep
        (CR, LF) is deleted with a ``DeleteObject`` request of its own."""
        todo = []
        for key in keys:
            if _NOT_IN_XML.search(key):
                self._delete_one(bucket, key)
                if on_batch is not None:
                    on_batch(1)
            else:
                todo.append(key)
        for start in range(0, len(todo), DELETE_BATCH):
            batch = todo[start : start + DELETE_BATCH]
            self._delete_batch(bucket, batch)
            if on_batch is not None:
                on_batch(len(batch))

    def _delete_one(self, bucket: str, key: str) -> None:
        """Delete one object (a missing one is not an error)."""
        location = self._location(bucket, key)
        response = self._retried("DELETE", bucket, key, "", location, "delete")
        if response.status not in (200, 204, 404):
            raise self._fail(response, location, "delete")

    def _delete_batch(self, bucket: str, keys: list[str]) -> None:
        root = ET.Element("Delete")
        ET.SubElement(root, "Quiet").text = "true"
        for key in keys:
            ET.SubElement(ET.SubElement(root, "Object"), "Key").text = key
        body = ET.tostring(root, encoding="utf-8", xml_declaration=True)
        md5 = base64.b64encode(hashlib.md5(body).digest()).decode()  # S3 requires Content-MD5
        location = self._location(bucket, keys[0])
        what = f"{len(keys)} files from s3://{bucket}/ (first {location})"
        last = ""
        for attempt in range(_ATTEMPTS):
            if attempt:
                time.sleep(0.1 * 2**attempt)
            try:
                response = self._send(
                    "POST",
                    bucket,
                    "",
                    query="delete=",
                    headers={"content-md5": md5, "content-type": "application/xml"},
                    body=body,
                )
            except (_NotSent, _NoAnswer) as exc:  # deleting is idempotent: retry
                last = str(exc)
                continue
            if response.status >= 500:
                last = f"{response.status} {response.error()[0]}".strip()
                continue
            if response.status != 200:
                raise self._fail(response, location, f"delete {what}:")
            errors = _delete_errors(response.body)
            if errors:
                key, code, message = errors[0]
                raise FileIOError(
                    f"cannot delete {self._location(bucket, key)}: "
                    f"{self._scrub(f'{code} {message}')} ({len(errors)} of {len(keys)} keys failed)"
                )
            return
        raise self._unreachable(bucket, location, f"delete {what}", last)

    def abort_uploads(self, bucket: str, key: str) -> int:
        """Abort the incomplete multipart uploads of ``key``; how many there were."""
        location = self._location(bucket, key)
        query = urlencode({"uploads": "", "prefix": key}, quote_via=quote)
        response = self._retried("GET", bucket, "", query, location, "list the uploads of")
        if response.status != 200:
            raise self._fail(response, location, "list the uploads of")
        ids = _upload_ids(response.body, key)
        for upload_id in ids:
            query = urlencode({"uploadId": upload_id}, quote_via=quote)
            response = self._retried("DELETE", bucket, key, query, location, "abort the upload of")
            if response.status not in (200, 204, 404):  # 404: gone meanwhile
                raise self._fail(response, location, "abort the upload of")
        return len(ids)

    def _retried(
        self, method: str, bucket: str, key: str, query: str, location: str, action: str
    ) -> _Response:
        """The answer to an idempotent request, sent again (up to :data:`_ATTEMPTS` times)
        while the server does not answer or answers 5xx."""
        last = ""
        for attempt in range(_ATTEMPTS):
            if attempt:
                time.sleep(0.1 * 2**attempt)
            try:
                response = self._send(method, bucket, key, query=query)
            except (_NotSent, _NoAnswer) as exc:
                last = str(exc)
                continue
            if response.status < 500:
                return response
            last = f"{response.status} {response.error()[0]}".strip()
        raise self._unreachable(bucket, location, action, last)


def _xml_records(body: bytes, tag: str) -> list[dict[str, str]]:
    """The child elements' texts of every ``tag`` element of an S3 XML answer, by local name
    (no namespace); none when the body is not XML."""
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        return []
    return [
        {child.tag.rsplit("}", 1)[-1]: child.text or "" for child in element}
        for element in root.iter()
        if element.tag.rsplit("}", 1)[-1] == tag
    ]


def _upload_ids(body: bytes, key: str) -> list[str]:
    """The ids of the uploads of exactly ``key`` in a ``ListMultipartUploads`` answer."""
    return [
        r["UploadId"]
        for r in _xml_records(body, "Upload")
        if r.get("Key") == key and r.get("UploadId")
    ]


#: Characters an XML 1.0 document cannot hold, and CR and LF, which its parsers normalise.
_NOT_IN_XML = re.compile("[^\t\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _delete_errors(body: bytes) -> list[tuple[str, str, str]]:
    return [
        (r.get("Key", ""), r.get("Code", ""), r.get("Message", ""))
        for r in _xml_records(body, "Error")
        if r.get("Code") != "NoSuchKey"
    ]


def _describe(exc: BaseException) -> str:
    if isinstance(exc, socket.timeout | TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}"


_REGION_ENV = ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_CONFIG_FILE", "HOME")


def default_region() -> str:
    """The region pyarrow's S3 file system resolves when no ``s3.region`` is given (the AWS
    SDK's chain: ``AWS_DEFAULT_REGION``, ``AWS_REGION``, the shared config file's profile), so
    that icefloe's own requests and pyarrow's reach the bucket the same way."""
    return _sdk_region(tuple(os.environ.get(k) for k in _REGION_ENV))


@functools.lru_cache(maxsize=8)
def _sdk_region(_env: tuple[str | None, ...]) -> str:
    try:
        return pafs.S3FileSystem(anonymous=True).region or "us-east-1"
    except Exception:  # an SDK that cannot start: the environment alone
        return os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION") or "us-east-1"
