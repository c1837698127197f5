"""The exception hierarchy of icefloe.

Every error icefloe raises on purpose is a subclass of :class:`IcebergError`; errors from the Rust
core arrive as the matching subclass, and a Rust panic arrives as :class:`InternalError`.
"""

from __future__ import annotations

__all__ = [
    "AlreadyExistsError",
    "CatalogReadOnlyError",
    "CommitConflictError",
    "CommitFailedError",
    "CommitStateUnknownError",
    "CorruptFileError",
    "DeltaLogError",
    "FileIOError",
    "ForbiddenError",
    "IcebergError",
    "InternalError",
    "MetadataBucketNotFoundError",
    "MetadataWriteError",
    "MissingDependencyError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NoSuchNamespaceError",
    "NoSuchSnapshotError",
    "NoSuchTableError",
    "NoSuchViewError",
    "NotFoundError",
    "NotIcebergCompatibleError",
    "OperationNotOfferedError",
    "ParseError",
    "ScanPlanningError",
    "ServiceUnavailableError",
    "StaleReadError",
    "TableAlreadyExistsError",
    "UnauthorizedError",
    "UnknownWriteStateError",
    "UnsupportedDeltaFeatureError",
    "UnsupportedFeatureError",
    "ValidationError",
    "ViewAlreadyExistsError",
    "WrongRegionError",
    "commit_did_not_happen",
    "state_read_failed",
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


class OperationNotOfferedError(UnsupportedFeatureError):
    """The catalog does not offer an operation: a REST server that does not list its endpoint,
    a catalog that cannot commit several tables at once. Raised before any request is sent or
    pointer touched, so a commit refused with it changed nothing (its files may be deleted)."""


class DeltaLogError(CorruptFileError):
    """A Delta table's log cannot be read: a missing commit file, a corrupt checkpoint, a
    deletion vector whose checksum is wrong. ``path`` names the file."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class UnsupportedDeltaFeatureError(UnsupportedFeatureError):
    """A Delta table needs a reader feature icefloe does not implement; reading it anyway
    could return wrong rows. ``features`` lists the unsupported ones."""

    def __init__(self, message: str, features: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.features = features


class InternalError(IcebergError):
    """A broken invariant inside icefloe, including a Rust panic: always a bug, please report it."""


class MissingDependencyError(IcebergError, ImportError):
    """An optional dependency of the feature used is not installed; the message names the extra
    that installs it (``pip install 'icefloe[<extra>]'``).

    A subclass of :class:`ImportError`, so ``except ImportError`` still catches it. ``extra`` is
    the extra to install, ``name`` (as for any :class:`ImportError`) the missing module.
    """

    def __init__(self, message: str, *, extra: str | None = None, name: str | None = None) -> None:
        super().__init__(message, name=name)
        self.extra = extra

    @classmethod
    def install(cls, what: str, extra: str, *, name: str | None = None) -> MissingDependencyError:
        """The error for ``what`` (a sentence saying which feature needs which module), ending in
        the command that installs ``extra``."""
        return cls(f"{what}: pip install 'icefloe[{extra}]'", extra=extra, name=name)


class NotIcebergCompatibleError(ValidationError):
    """A Delta table that does not satisfy IcebergCompatV3; ``failures`` names each unmet
    requirement."""

    def __init__(self, message: str, failures: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.failures = failures


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


class ViewAlreadyExistsError(IcebergError):
    """A view, or a table (they share names), with that identifier already exists."""


class UnauthorizedError(IcebergError):
    """The catalog did not accept the credentials (HTTP 401), or none were given."""


class ForbiddenError(IcebergError):
    """The credentials are valid but do not allow the operation (HTTP 403)."""


class ServiceUnavailableError(IcebergError):
    """The catalog service is down or overloaded (HTTP 503); trying again later may succeed."""


class CatalogReadOnlyError(IcebergError):
    """The catalog's database refused a write because it is read-only (a SQLite file the
    process may not write, a PostgreSQL read-only transaction or replica); nothing changed,
    and trying again will not help."""


class NoSuchSnapshotError(IcebergError):
    """The snapshot, branch, tag or point in time does not resolve to a snapshot."""


class ScanPlanningError(IcebergError):
    """A catalog server's plan of a scan was cancelled or did not complete in time."""


class CommitFailedError(IcebergError):
    """A commit lost a race with another writer; it is safe to refresh and retry."""

    #: False when nothing was committed but retrying at once cannot help (the catalog
    #: database stayed locked through its whole busy timeout): the commit loop gives up.
    retryable: bool = True
    #: True when the catalog knows the pointer did not move (its compare-and-swap was refused,
    #: rolled back or never sent); False when a store that lost the answer to a write it did
    #: may report the race as lost, so only the refreshed table can tell.
    nothing_committed: bool = False


class CommitConflictError(IcebergError):
    """A commit conflicts with a change another writer committed; retrying cannot succeed."""


class CommitStateUnknownError(IcebergError):
    """The commit may or may not have succeeded (for example the catalog did not answer).

    Files written by the attempt are kept, since the new metadata may reference them.
    """


def state_read_failed(exc: BaseException) -> CommitFailedError:
    """The error of a commit that stopped before sending anything because reading the
    table's current state raised ``exc`` (``nothing_committed``: its files may go)."""
    failed = CommitFailedError(
        f"nothing was committed: reading the table's current state failed: {exc}"
    )
    failed.nothing_committed = True
    return failed


def commit_did_not_happen(exc: BaseException) -> bool:
    """Whether ``exc``, raised out of a catalog commit, proves the table did not change.

    Catalogs raise :class:`CommitFailedError`, :class:`CommitConflictError` and
    :class:`ValidationError` only before the pointer can have moved, so the files the attempt
    wrote may be deleted; so is :class:`TableAlreadyExistsError` (a staged create whose name
    was taken: its table never existed), :class:`NoSuchTableError` (the table was dropped: no
    catalog raises it once its pointer moved), :class:`MetadataWriteError` (the new
    metadata file could not be written, before any swap) and :class:`CatalogReadOnlyError`
    (raised once the pointer is known not to have moved). Every other exception,
    :class:`CommitStateUnknownError`, an I/O error or a ``KeyboardInterrupt``/``SystemExit``
    arriving during or after the swap, leaves the outcome unknown: the new metadata may
    reference those files and they are kept.
    """
    return isinstance(
        exc,
        CommitFailedError
        | CommitConflictError
        | ValidationError
        | TableAlreadyExistsError
        | NoSuchTableError
        | MetadataWriteError
        | CatalogReadOnlyError,
    )


class FileIOError(IcebergError):
    """A file system operation failed; the message names the location."""


class NotFoundError(FileIOError):
    """No file exists at the location."""


class StaleReadError(NotFoundError):
    """A file a read was planned with is gone: the plan is of an older state of the table
    (Spark keeps a DataFrame's first plan of a read for its later queries)."""


class AlreadyExistsError(FileIOError):
    """A file exists at the location and an exclusive create was asked for."""


class UnknownWriteStateError(FileIOError):
    """A write may or may not have happened (the store did not answer); the message names it."""


class MetadataWriteError(FileIOError):
    """A commit's new metadata file could not be written, so the commit did not happen: the
    table is unchanged and the files the attempt wrote were deleted. Retrying may succeed."""


class MetadataBucketNotFoundError(MetadataWriteError, NotFoundError):
    """The new metadata file of a create or commit could not be written because the bucket
    (or container) of the table's location does not exist: a :class:`NotFoundError` naming
    ``bucket``, and a :class:`MetadataWriteError` (nothing was registered or changed)."""

    def __init__(self, message: str, bucket: str | None = None) -> None:
        super().__init__(message)
        self.bucket = bucket


class WrongRegionError(FileIOError):
    """The S3 bucket is in another region than the one requests were sent to (S3 answered
    ``301 PermanentRedirect``); ``region`` is the bucket's, when S3 said it (set ``s3.region``
    to it), ``bucket`` names the bucket."""

    def __init__(self, message: str, bucket: str | None = None, region: str | None = None) -> None:
        super().__init__(message)
        self.bucket = bucket
        self.region = region

    @classmethod
    def at(
        cls,
        location: str,
        action: str,
        bucket: str,
        region: str | None,
        configured: str | None = None,
    ) -> WrongRegionError:
        """The error for S3's ``301 PermanentRedirect`` to ``action`` at ``location``: the
        bucket is in another region (``region``, when S3 said which) than the one requests
        went to (``configured``, when known)."""
        configured_one = f"{configured}, the one configured" if configured else "the one configured"
        if region:
            fix = f"set s3.region to {region!r}"
            where = f"in region {region!r}, not {configured_one}"
        else:
            fix = "set s3.region to the bucket's region"
            where = f"in another region than {configured_one}"
        return cls(
            f"cannot {action} {location}: bucket {bucket!r} is {where} (S3 answered 301 "
            f"PermanentRedirect); {fix}",
            bucket=bucket,
            region=region,
        )
