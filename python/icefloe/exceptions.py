"""The exception hierarchy of icefloe.

Every error icefloe raises on purpose is a subclass of :class:`IcebergError`; errors from the Rust
core arrive as the matching subclass, and a Rust panic arrives as :class:`InternalError`.
"""

from __future__ import annotations

__all__ = [
    "AlreadyExistsError",
    "CommitConflictError",
    "CommitFailedError",
    "CommitStateUnknownError",
    "CorruptFileError",
    "FileIOError",
    "ForbiddenError",
    "IcebergError",
    "InternalError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NoSuchNamespaceError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "NoSuchViewError",
    "NotFoundError",
    "ParseError",
    "ServiceUnavailableError",
    "TableAlreadyExistsError",
    "UnauthorizedError",
    "UnknownWriteStateError",
    "UnsupportedFeatureError",
    "ValidationError",
]


class IcebergError(Exception):
    """Root of every error icefloe raises on purpose."""


class ValidationError(IcebergError, ValueError):
    """Input that breaks a rule of the Iceberg spec or of the API; the message names the value."""


class ParseError(ValidationError):
    """Text (an expression, a type string, JSON) that cannot be parsed.

    ``position`` is the 0-based offset of the problem in the text, when known.
    """

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message)
        self.position = position


class CorruptFileError(IcebergError):
    """A file whose bytes cannot be what they claim to be (truncated, bad magic, CRC mismatch)."""


class UnsupportedFeatureError(IcebergError):
    """Valid input that this version of icefloe does not support (for example format version 4)."""


class InternalError(IcebergError):
    """A broken invariant inside icefloe, including a Rust panic: always a bug, please report it."""


class NoSuchNamespaceError(IcebergError):
    """The namespace does not exist."""


class NamespaceAlreadyExistsError(IcebergError):
    """A namespace with that name already exists."""


class NamespaceNotEmptyError(IcebergError):
    """The namespace still holds tables or namespaces."""


class NoSuchTableError(IcebergError):
    """The table does not exist."""


class TableAlreadyExistsError(IcebergError):
    """A table with that identifier already exists."""


class NoSuchViewError(IcebergError):
    """The view does not exist."""


class UnauthorizedError(IcebergError):
    """The catalog did not accept the credentials (HTTP 401), or none were given."""


class ForbiddenError(IcebergError):
    """The credentials are valid but do not allow the operation (HTTP 403)."""


class ServiceUnavailableError(IcebergError):
    """The catalog service is down or overloaded (HTTP 503); trying again later may succeed."""


class NoSuchSnapshotError(IcebergError):
    """The snapshot, branch, tag or point in time does not resolve to a snapshot."""


class CommitFailedError(IcebergError):
    """A commit lost a race with another writer; it is safe to refresh and retry."""


class CommitConflictError(IcebergError):
    """A commit conflicts with a change another writer committed; retrying cannot succeed."""


class CommitStateUnknownError(IcebergError):
    """The commit may or may not have succeeded (for example the catalog did not answer).

    Files written by the attempt are kept, since the new metadata may reference them.
    """


class FileIOError(IcebergError):
    """A file system operation failed; the message names the location."""


class NotFoundError(FileIOError):
    """No file exists at the location."""


class AlreadyExistsError(FileIOError):
    """A file exists at the location and an exclusive create was asked for."""


class UnknownWriteStateError(FileIOError):
    """A write may or may not have happened (the store did not answer); the message names it."""
