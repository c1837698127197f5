"""REST error bodies <-> :mod:`icefloe.exceptions`.

The wire form is ``{"error": {"message", "type", "code"}}``; ``type`` names the Java exception
(``NoSuchTableException``, ...), which tells apart errors that share a status code (a 404 for a
missing namespace or a missing table). The server side uses :func:`error_for_exception` and the
client side :func:`exception_for_error`.

A failure of the server's own storage (its object store unreachable, a file it cannot read or
write) is a 500 of type ``RuntimeIOException``, as Iceberg Java's server answers its
``RuntimeIOException`` (Java clients raise ``ServiceFailureException``); icefloe's client raises
:class:`FileIOError` for it, as for a failure of its own storage. A file that does not exist
stays a 404 ``NotFoundException``. A file the server read but cannot parse (a damaged metadata
file) is a 500 of type ``CorruptFileException``: a server-side failure the client cannot fix
(the REST spec's 5XX answer; Java clients raise ``ServiceFailureException`` for it as for any
500); icefloe's client raises :class:`CorruptFileError` for it, as for a damaged file it read
itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from icefloe.exceptions import (
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
    CorruptFileError,
    FileIOError,
    ForbiddenError,
    IcebergError,
    MetadataWriteError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchSnapshotError,
    NoSuchTableError,
    NoSuchViewError,
    NotFoundError,
    ServiceUnavailableError,
    TableAlreadyExistsError,
    UnauthorizedError,
    UnsupportedFeatureError,
    ValidationError,
    ViewAlreadyExistsError,
)
from icefloe.io.errors import scrub

__all__ = [
    "CORRUPT_FILE_ERROR_TYPE",
    "STORAGE_ERROR_TYPE",
    "UNKNOWN_OUTCOME_STATUS",
    "IllegalArgumentError",
    "UnprocessableEntityError",
    "error_body",
    "error_for_exception",
    "exception_for_error",
    "is_error_response",
]

#: Answers to a commit after which the server may or may not have committed (as Iceberg
#: Java's commit error handlers say).
UNKNOWN_OUTCOME_STATUS = (500, 502, 503, 504)

#: The error ``type`` of a failure of the server's storage (Iceberg Java's exception).
STORAGE_ERROR_TYPE = "RuntimeIOException"
#: Error types a server answers for its storage failing (Java's own and the JDK's).
_STORAGE_ERROR_TYPES = (STORAGE_ERROR_TYPE, "UncheckedIOException")
#: The error ``type`` of a damaged file on the server's storage (one it cannot parse).
CORRUPT_FILE_ERROR_TYPE = "CorruptFileException"


class IllegalArgumentError(ValidationError):
    """A request a server refuses as Iceberg Java refuses an illegal argument: answered 400
    ``IllegalArgumentException``, which Java clients raise as that exception."""


class UnprocessableEntityError(ValidationError):
    """A well-formed request whose content contradicts itself (a namespace property both
    removed and set): answered 422 ``UnprocessableEntityException``, as Iceberg Java's server
    and the REST spec answer it."""


# icefloe exception -> (HTTP status, Java exception type), most specific first.
_TO_WIRE: list[tuple[type[BaseException], int, str]] = [
    (NoSuchNamespaceError, 404, "NoSuchNamespaceException"),
    (NoSuchTableError, 404, "NoSuchTableException"),
    (NoSuchViewError, 404, "NoSuchViewException"),
    (NamespaceAlreadyExistsError, 409, "AlreadyExistsException"),
    (TableAlreadyExistsError, 409, "AlreadyExistsException"),
    (ViewAlreadyExistsError, 409, "AlreadyExistsException"),
    (NamespaceNotEmptyError, 409, "NamespaceNotEmptyException"),
    (CommitConflictError, 409, "CommitFailedException"),
    (CommitFailedError, 409, "CommitFailedException"),
    (CommitStateUnknownError, 500, "CommitStateUnknownException"),
    (UnauthorizedError, 401, "NotAuthorizedException"),
    (ForbiddenError, 403, "ForbiddenException"),
    (UnsupportedFeatureError, 406, "UnsupportedOperationException"),
    (ServiceUnavailableError, 503, "ServiceUnavailableException"),
    # a metadata file the server could not write (its bucket missing too) is the server's
    # storage failing, not a missing namespace or table (as a 404 would be read)
    (MetadataWriteError, 500, STORAGE_ERROR_TYPE),
    (NotFoundError, 404, "NotFoundException"),
    (FileIOError, 500, STORAGE_ERROR_TYPE),  # the server's storage failed
    (CorruptFileError, 500, CORRUPT_FILE_ERROR_TYPE),  # a file on it is damaged
    (UnprocessableEntityError, 422, "UnprocessableEntityException"),
    (IllegalArgumentError, 400, "IllegalArgumentException"),
    (NoSuchSnapshotError, 400, "IllegalArgumentException"),  # as Java: a bad snapshot id
    (ValidationError, 400, "BadRequestException"),
]


def error_for_exception(exc: BaseException) -> tuple[int, str]:
    """The HTTP status and error ``type`` a server answers for ``exc`` (500 if unknown)."""
    for cls, status, name in _TO_WIRE:
        if isinstance(exc, cls):
            return status, name
    return 500, "ServerError"


def error_body(status: int, type_: str, message: str) -> dict[str, Any]:
    """The ``IcebergErrorResponse`` JSON object."""
    return {"error": {"message": message, "type": type_, "code": status}}


#: Of a body that is not JSON (an HTML page of a proxy), the message quotes this many
#: characters; this many bytes of it are read, and their secrets removed, before the cut.
_QUOTED_CHARS = 200
_SCRUBBED_BYTES = 65536


def is_error_response(body: bytes) -> bool:
    """Whether ``body`` is a catalog server's error response: Iceberg's (``{"error": {...}}``)
    or the same fields unwrapped (``{"message": ..., "type": ...}``, as some catalogs send
    them). A gateway's or proxy's own page (HTML, an empty body, other JSON) is not, and its
    status says nothing about what the server did with the request."""
    try:
        obj = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        return False
    if not isinstance(obj, dict):
        return False
    if isinstance(obj.get("error"), dict):
        return True
    return isinstance(obj.get("message"), str) and isinstance(obj.get("type"), str)


def _parse(body: bytes, secrets: Iterable[str] = ()) -> tuple[str, str]:
    """``(type, message)`` from an error body; tolerant of non-JSON bodies and OAuth errors."""
    try:
        obj = json.loads(body) if body else {}
    except (ValueError, UnicodeDecodeError):
        text = scrub(body[:_SCRUBBED_BYTES].decode("utf-8", "replace"), secrets)
        return "", text.strip()[:_QUOTED_CHARS].strip()
    if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
        err = obj["error"]
        return str(err.get("type") or ""), str(err.get("message") or "")
    if isinstance(obj, dict) and isinstance(obj.get("error"), str):  # OAuth2 error response
        return obj["error"], str(obj.get("error_description") or obj["error"])
    return "", ""


def exception_for_error(
    status: int,
    body: bytes,
    what: str,
    exists: type[IcebergError] = TableAlreadyExistsError,
    secrets: Iterable[str] = (),
) -> IcebergError:
    """The icefloe exception for an error response to operation ``what``.

    ``exists`` is the error for a 409 ``AlreadyExistsException`` (a table or a namespace). The
    message names the operation, the status and the server's message, with ``secrets`` (the
    credentials the request carried, which a server or proxy may echo) and every other known
    secret as ``***``; it never contains request headers (where credentials travel).
    """
    secrets = list(secrets)
    type_, message = _parse(body, secrets)
    text = scrub(
        f"{what}: HTTP {status}"
        + (f" {type_}" if type_ else "")
        + (f": {message}" if message else ""),
        secrets,
    )
    if status == 404:
        if type_ == "NoSuchNamespaceException":
            return NoSuchNamespaceError(text)
        if type_ == "NoSuchViewException":
            return NoSuchViewError(text)
        if type_ in ("NoSuchTableException", "NoSuchIcebergTableException"):
            return NoSuchTableError(text)
        return NotFoundError(text)
    if status == 409:
        if type_ == "NamespaceNotEmptyException":
            return NamespaceNotEmptyError(text)
        if type_ == "CommitFailedException":
            return CommitFailedError(text)
        return exists(text)
    if status in (401, 419):
        return UnauthorizedError(text)
    if status == 403:
        return ForbiddenError(text)
    if status == 406:
        return UnsupportedFeatureError(text)
    if status == 503:
        return ServiceUnavailableError(text)
    if status >= 500 and type_ in _STORAGE_ERROR_TYPES:
        return FileIOError(text)
    if status >= 500 and type_ == CORRUPT_FILE_ERROR_TYPE:
        return CorruptFileError(text)
    if status in (400, 422):
        return ValidationError(text)
    return IcebergError(text)
