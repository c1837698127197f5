"""Errors of file IO: pyarrow's and the OS's failures as icefloe's typed errors, naming the
location, with the secrets of every file IO made so far removed from their text."""

from __future__ import annotations

import errno
import os
import re
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import quote, quote_plus, urlparse

from icefloe.exceptions import (
    AlreadyExistsError,
    FileIOError,
    IcebergError,
    NotFoundError,
    WrongRegionError,
)
from icefloe.filesystems import AZURE_SCHEMES, S3_SCHEMES
from icefloe.properties import URL_QUERY_SECRET

if TYPE_CHECKING:
    from icefloe.io.fileio import FileIO

#: How pyarrow's file systems word a failure to reach or use the storage (as opposed to bytes
#: that do not decode): the S3 SDK, curl, GCS, Azure, HDFS and the OS.
_IO_FAILURE = re.compile(
    r"AWS Error|curlCode|google::cloud|Azure Error|HDFS|\[Errno \d+\]|errno|Input/output error"
    r"|Connection reset|Broken pipe|timed out|Timeout was reached",
    re.IGNORECASE,
)


#: Error messages name at most this many characters of a location (and of the store's text).
_MESSAGE_PART = 600


def shortened(text: str) -> str:
    """``text`` cut in the middle when longer than :data:`_MESSAGE_PART` (a partition value of
    megabytes makes a path of megabytes)."""
    if len(text) <= _MESSAGE_PART:
        return text
    keep = _MESSAGE_PART // 2
    return f"{text[:keep]}...[{len(text) - 2 * keep} characters]...{text[-keep:]}"


#: error messages, where a store may echo them (at most :data:`_SECRETS_KEPT` are kept).
_SECRETS: dict[str, None] = {}
_SECRETS_KEPT = 64
_SECRETS_LOCK = threading.Lock()


def remember_secrets(values: Iterable[str]) -> None:
    """Remember secrets for :func:`_scrub` (those too short to tell apart from other text are
    left alone)."""
    with _SECRETS_LOCK:
        for value in (v for v in values if len(v) >= 8):
            _SECRETS.pop(value, None)
            _SECRETS[value] = None
        while len(_SECRETS) > _SECRETS_KEPT:
            del _SECRETS[next(iter(_SECRETS))]


def _written_forms(secret: str) -> set[str]:
    """``secret`` as it is and as a form body or a URL carries it (a server or a proxy that
    echoes a request shows it encoded: ``Zk8%2Bq%2FWd3s%3D`` for ``Zk8+q/Wd3s=``)."""
    return {secret, quote_plus(secret, safe=""), quote(secret, safe=""), quote(secret)}


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every known secret (and the environment's AWS secrets), and ``secrets``
    (a caller's own, of 4 characters or more), as ``***``, also URL-encoded, and the value of
    a URL's credential query parameters (``sig=``, ``X-Amz-Signature=``...) too. Scrub a text
    before cutting it short: a secret cut in two is no longer found."""
    with _SECRETS_LOCK:
        known = list(_SECRETS)
    env = (os.environ.get("AWS_SECRET_ACCESS_KEY"), os.environ.get("AWS_SESSION_TOKEN"))
    known += [v for v in env if v and len(v) >= 8]
    known += [v for v in secrets if v and len(v) >= 4]
    forms = {form for secret in known for form in _written_forms(secret)}
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, "***")
    # a client quotes a request's URL with its query re-ordered and re-encoded (pyarrow's
    # Azure errors, with a SAS token's parameters sorted): its signature is not found above
    text = URL_QUERY_SECRET.sub(r"\1***", text)
    return _URL_PASSWORD.sub(r"\1***@", text)


#: The password of a URL's userinfo (``s3://key:secret@bucket/...``, which pyarrow reads),
#: up to the first ``@``: AWS secrets hold ``/`` and ``+`` (text between a port and an ``@``
#: later in a path is masked too, which loses nothing secret).
_URL_PASSWORD = re.compile(r"(://[^/@:\s]*:)[^@\s]+@")


#: How the stores word a refused credential: S3 (the SDK and the XML codes) and Azure (a
#: wrong key or SAS token, a SAS or role without the permission).
_ACCESS_DENIED = re.compile(
    r"ACCESS_DENIED|AccessDenied|SignatureDoesNotMatch"
    r"|AuthenticationFailed|AuthorizationFailure|AuthorizationPermissionMismatch"
)


def is_io_failure(exc: BaseException) -> bool:
    """Whether ``exc`` (from pyarrow or the OS) is a failure to reach or use the storage (a
    network error, a timeout, an error the store answered, ``EIO``) rather than bytes that do
    not decode: pyarrow raises ``OSError`` for both."""
    if isinstance(exc, FileIOError):
        return True
    if not isinstance(exc, OSError):
        return False
    return exc.errno is not None or bool(_IO_FAILURE.search(str(exc)))


def file_io_error(exc: BaseException, location: str, action: str) -> FileIOError:
    """The typed error (:class:`FileIOError` or a subclass) for the I/O failure ``exc`` at
    ``location``, naming it, without secrets."""
    error = map_error(exc, location, action)
    if isinstance(error, FileIOError):
        return error
    return FileIOError(f"cannot {action} {shortened(scrub(location))}: {scrub(str(error))}")


def scrub_exception(exc: BaseException) -> None:
    """Remove every known secret from the text of ``exc`` and of the errors it was raised
    from, in place: the typed error is raised from ``exc``, and a traceback (a log's
    ``logging.exception``, the CLI's ``--debug``) prints the whole chain."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(isinstance(a, str) and scrub(a) != a for a in current.args):
            current.args = tuple(scrub(a) if isinstance(a, str) else a for a in current.args)
        if isinstance(current, OSError) and isinstance(current.strerror, str):
            current.strerror = scrub(current.strerror)
        current = current.__cause__ or current.__context__


#: How stores' clients say no connection was made (curl's codes 6 and 7 as pyarrow's S3 and
#: GCS clients report them, the socket's own words): the request never left.
_NEVER_CONNECTED = re.compile(
    r"Could(?: not|n't) (?:connect|resolve host)|Connection refused|CURL error \[[67]\]"
    r"|curlCode: [67]\b|Name or service not known|nodename nor servname"
)


#: The host a client's words say it tried to reach (curl's, as pyarrow's S3 client reports
#: them): with virtual-host addressing the bucket's own host, not the configured endpoint.
_CONTACTED_HOST = re.compile(r"(?:Failed to connect to|Could not resolve host:) ([^\s;,]+)")


def never_connected(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error it was raised from) says the store was never reached, so
    the operation wrote nothing and no clean-up of it is needed (one would only wait on the
    same unreachable endpoint)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError) or _NEVER_CONNECTED.search(str(current)):
            return True
        current = current.__cause__ or current.__context__
    return False


#: How pyarrow's S3 client words S3's answer that a bucket is in another region (a ``301``,
#: with the ``PermanentRedirect`` code when the answer has a body), and the bucket's region
#: when its SDK found it in the answer.
_WRONG_REGION = re.compile(r"HTTP status 301\b|PermanentRedirect")
_BUCKET_REGION = re.compile(r"bucket is located in '([A-Za-z0-9-]+)'")
_QUOTED = re.compile(r"'[^']*'")


def map_error(exc: BaseException, location: str, action: str) -> Exception:
    """Translate an OS/Arrow error into the icefloe class, naming the location (an icefloe
    error is returned as it is). Secrets are removed from the text of ``exc`` too (it is
    chained to the typed error)."""
    if isinstance(exc, IcebergError):
        return exc
    scrub_exception(exc)
    location = shortened(scrub(location))  # a location may hold a secret as its userinfo
    if isinstance(exc, FileNotFoundError) or (
        isinstance(exc, OSError) and exc.errno == errno.ENOENT
    ):
        return NotFoundError(f"cannot {action} {location}: file not found")
    if isinstance(exc, FileExistsError):
        return AlreadyExistsError(f"cannot {action} {location}: file already exists")
    full = scrub(str(exc))
    text = shortened(full)
    parsed = urlparse(location)
    if "NO_SUCH_BUCKET" in text or "NoSuchBucket" in text:
        bucket = urlparse(location).netloc
        return NotFoundError(f"cannot {action} {location}: bucket {bucket!r} does not exist")
    azure = parsed.scheme.lower() in AZURE_SCHEMES
    if azure and "AuthenticationException" in full:  # no Azure AD token could be had
        return FileIOError(
            f"cannot {action} {location}: no Azure credential; set adls.account-key, "
            f"adls.sas-token or adls.connection-string, or configure Azure's default "
            f"credential (environment, managed identity, Azure CLI) ({text})"
        )
    if _ACCESS_DENIED.search(full):
        return FileIOError(
            f"cannot {action} {location}: access denied; check the credentials and their "
            f"permissions ({text})"
        )
    # quoted parts (pyarrow quotes the key and bucket) are left out: a key may hold the words
    if parsed.scheme.lower() in S3_SCHEMES and _WRONG_REGION.search(_QUOTED.sub("''", full)):
        found = _BUCKET_REGION.search(full)
        region = found.group(1) if found else None
        return WrongRegionError.at(location, action, parsed.netloc, region)
    if "NETWORK_CONNECTION" in text or "curlCode" in text:
        contacted = _CONTACTED_HOST.search(text)
        host = f"host {contacted.group(1)}" if contacted else "the endpoint"
        return FileIOError(f"cannot {action} {location}: {host} did not answer ({text})")
    if "Path does not exist" in text or "NoSuchKey" in text or "not found" in text.lower():
        return NotFoundError(f"cannot {action} {location}: {text}")
    return FileIOError(f"cannot {action} {location}: {text}")


def explain_region(io: FileIO, location: str, action: str, error: Exception) -> Exception:
    """``error``, or, when it is a :class:`WrongRegionError` that does not name the bucket's
    region (pyarrow's client does not show the answer's headers), the same error naming the
    region S3 gives for the bucket, asked with ``io``'s own S3 client."""
    if not isinstance(error, WrongRegionError) or error.region or not error.bucket:
        return error
    try:
        client = io.s3_client(location)
        if client is None:
            return error
        region = client.bucket_region(error.bucket)
    except IcebergError:  # the original error is the better one (credentials, settings)
        return error
    if not region:
        return error
    return WrongRegionError.at(
        shortened(scrub(location)), action, error.bucket, region, client.region
    )
