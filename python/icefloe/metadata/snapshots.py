"""Snapshots, refs, history logs, statistics files and encryption keys (spec "Snapshots",
"Snapshot References", "Table Statistics", "Partition Statistics", "Encryption Keys", Appendix C
and the snapshot summary keys of Appendix F).

Every class is an immutable value with ``from_json`` / ``to_json``; ``to_json`` writes keys in
the order the Java reference writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from icefloe.exceptions import ValidationError
from icefloe.metadata._json import (
    INT32_MAX,
    INT64_MAX,
    cached_compact,
    get_int,
    get_int_list,
    get_list,
    get_str,
    opt_int,
    opt_str,
    opt_str_map,
    require_object,
)

__all__ = [
    "BRANCH",
    "MAIN_BRANCH",
    "TAG",
    "BlobMetadata",
    "EncryptedKey",
    "MetadataLogEntry",
    "Operation",
    "PartitionStatisticsFile",
    "Snapshot",
    "SnapshotLogEntry",
    "SnapshotRef",
    "StatisticsFile",
    "Summary",
    "SummaryKeys",
    "update_snapshot_totals",
]

MAIN_BRANCH = "main"
BRANCH = "branch"
TAG = "tag"


class Operation:
    """The spec's snapshot operations (the summary's ``operation`` value)."""

    APPEND = "append"
    REPLACE = "replace"
    OVERWRITE = "overwrite"
    DELETE = "delete"
    ALL: ClassVar[tuple[str, ...]] = (APPEND, REPLACE, OVERWRITE, DELETE)


class SummaryKeys:
    """Optional snapshot summary keys (spec Appendix F); values are decimal strings."""

    ADDED_DATA_FILES = "added-data-files"
    DELETED_DATA_FILES = "deleted-data-files"
    TOTAL_DATA_FILES = "total-data-files"
    ADDED_DELETE_FILES = "added-delete-files"
    ADDED_EQUALITY_DELETE_FILES = "added-equality-delete-files"
    REMOVED_EQUALITY_DELETE_FILES = "removed-equality-delete-files"
    ADDED_POSITION_DELETE_FILES = "added-position-delete-files"
    REMOVED_POSITION_DELETE_FILES = "removed-position-delete-files"
    ADDED_DVS = "added-dvs"
    REMOVED_DVS = "removed-dvs"
    REMOVED_DELETE_FILES = "removed-delete-files"
    TOTAL_DELETE_FILES = "total-delete-files"
    ADDED_RECORDS = "added-records"
    DELETED_RECORDS = "deleted-records"
    TOTAL_RECORDS = "total-records"
    ADDED_FILES_SIZE = "added-files-size"
    REMOVED_FILES_SIZE = "removed-files-size"
    TOTAL_FILES_SIZE = "total-files-size"
    ADDED_POSITION_DELETES = "added-position-deletes"
    REMOVED_POSITION_DELETES = "removed-position-deletes"
    TOTAL_POSITION_DELETES = "total-position-deletes"
    ADDED_EQUALITY_DELETES = "added-equality-deletes"
    REMOVED_EQUALITY_DELETES = "removed-equality-deletes"
    TOTAL_EQUALITY_DELETES = "total-equality-deletes"
    DELETED_DUPLICATE_FILES = "deleted-duplicate-files"
    CHANGED_PARTITION_COUNT = "changed-partition-count"
    MANIFESTS_CREATED = "manifests-created"
    MANIFESTS_KEPT = "manifests-kept"
    MANIFESTS_REPLACED = "manifests-replaced"
    ENTRIES_PROCESSED = "entries-processed"
    WAP_ID = "wap.id"
    PUBLISHED_WAP_ID = "published-wap-id"
    SOURCE_SNAPSHOT_ID = "source-snapshot-id"
    ENGINE_NAME = "engine-name"
    ENGINE_VERSION = "engine-version"

    #: (total key, added key, removed key) triples kept as running totals across snapshots.
    TOTALS: ClassVar[tuple[tuple[str, str, str], ...]] = (
        (TOTAL_DATA_FILES, ADDED_DATA_FILES, DELETED_DATA_FILES),
        (TOTAL_DELETE_FILES, ADDED_DELETE_FILES, REMOVED_DELETE_FILES),
        (TOTAL_RECORDS, ADDED_RECORDS, DELETED_RECORDS),
        (TOTAL_FILES_SIZE, ADDED_FILES_SIZE, REMOVED_FILES_SIZE),
        (TOTAL_POSITION_DELETES, ADDED_POSITION_DELETES, REMOVED_POSITION_DELETES),
        (TOTAL_EQUALITY_DELETES, ADDED_EQUALITY_DELETES, REMOVED_EQUALITY_DELETES),
    )


@dataclass(frozen=True)
class Summary:
    """A snapshot summary: the ``operation`` plus other string properties.

    ``operation`` is required by the spec from v2 on; like the Java reader, a summary without
    one is accepted on read (``operation`` is then ``None``).
    """

    operation: str | None
    properties: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if "operation" in self.properties:
            raise ValidationError("summary properties must not repeat 'operation'")
        object.__setattr__(self, "properties", dict(self.properties))

    def get(self, key: str) -> str | None:
        """A property value (``"operation"`` included), or ``None``."""
        if key == "operation":
            return self.operation
        return self.properties.get(key)

    def get_int(self, key: str) -> int | None:
        """A numeric property as an int; ``None`` when absent; ValidationError when not numeric."""
        v = self.properties.get(key)
        if v is None:
            return None
        try:
            return int(v)
        except ValueError:
            raise ValidationError(f"summary property {key!r} is not a number: {v!r}") from None

    def to_json(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.operation is not None:
            out["operation"] = self.operation
        out.update(self.properties)
        return out

    @staticmethod
    def from_json(obj: Any) -> Summary:
        m = require_object(obj, "snapshot summary")
        operation: str | None = None
        props: dict[str, str] = {}
        for k, v in m.items():
            if not isinstance(v, str):
                raise ValidationError(f"snapshot summary: value of {k!r} must be a string: {v!r}")
            if k == "operation":
                operation = v
            else:
                props[k] = v
        return Summary(operation, props)


def update_snapshot_totals(summary: Summary, previous: Summary | None) -> Summary:
    """``summary`` with the ``total-*`` keys carried forward from the previous snapshot's summary.

    For each total (data files, delete files, records, files size, position and equality
    deletes) the new total is the previous total plus the added count minus the removed count,
    as Java's ``SnapshotProducer.updateTotal`` computes it. The total is left out (so a chain
    with an unknown total does not invent one) when the previous summary lacks it (with no
    previous snapshot it starts at 0), when the previous total or a count is not a number, or
    when the total is or becomes negative (a previous total already too low, as Java's
    ``add_files`` leaves ``total-files-size``, minus what a replace removes).
    """
    props = dict(summary.properties)
    for total_key, added_key, removed_key in SummaryKeys.TOTALS:
        prev = "0" if previous is None else previous.properties.get(total_key)
        total = _updated_total(
            prev, summary.properties.get(added_key), summary.properties.get(removed_key)
        )
        if total is None:
            props.pop(total_key, None)
        else:
            props[total_key] = str(total)
    return Summary(summary.operation, props)


_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1


def _parse_long(text: str) -> int | None:
    """``text`` as Java's ``Long.parseLong`` reads it (an optional sign and ASCII digits, in
    the 64-bit range), or ``None`` where Java would raise ``NumberFormatException``."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not (digits.isascii() and digits.isdigit()):
        return None
    value = int(text)
    return value if _LONG_MIN <= value <= _LONG_MAX else None


def _updated_total(prev: str | None, added: str | None, removed: str | None) -> int | None:
    """The new running total from the previous total and this snapshot's added and removed
    counts, or ``None`` when it is left out, step for step as Java's ``updateTotal``: the
    counts are only applied while the total is not negative, a value that is not a number
    drops the total, and so does a negative (or, as Java's wrapping ``long`` would make it,
    overflowing) result."""
    if prev is None:
        return None
    total = _parse_long(prev)
    if total is None:
        return None
    for count, sign in ((added, 1), (removed, -1)):
        if total >= 0 and count is not None:
            n = _parse_long(count)
            if n is None:
                return None
            total += sign * n
            if total > _LONG_MAX:
                return None  # Java's long wraps to a negative total, which is left out
    return total if total >= 0 else None


@dataclass(frozen=True)
class Snapshot:
    """One snapshot of a table (spec "Snapshots").

    ``sequence_number`` is 0 for v1 snapshots (Appendix E read default). ``manifests`` is the
    v1-only list of manifest paths used when there is no ``manifest_list``. ``first_row_id``,
    ``added_rows`` (row lineage) and ``key_id`` (encryption) are v3 fields.
    """

    snapshot_id: int
    timestamp_ms: int
    manifest_list: str | None = None
    sequence_number: int = 0
    parent_snapshot_id: int | None = None
    summary: Summary | None = None
    schema_id: int | None = None
    manifests: tuple[str, ...] | None = None
    first_row_id: int | None = None
    added_rows: int | None = None
    key_id: str | None = None

    @property
    def operation(self) -> str | None:
        return self.summary.operation if self.summary is not None else None

    def to_json(self, format_version: int = 2) -> dict[str, Any]:
        """The snapshot's JSON; ``sequence-number`` is written from v2 on, as Appendix E says."""
        out: dict[str, Any] = {}
        if format_version >= 2:
            out["sequence-number"] = self.sequence_number
        out["snapshot-id"] = self.snapshot_id
        if self.parent_snapshot_id is not None:
            out["parent-snapshot-id"] = self.parent_snapshot_id
        out["timestamp-ms"] = self.timestamp_ms
        if self.summary is not None:
            out["summary"] = self.summary.to_json()
        if self.manifest_list is not None:
            out["manifest-list"] = self.manifest_list
        elif self.manifests is not None:
            out["manifests"] = list(self.manifests)
        if self.schema_id is not None:
            out["schema-id"] = self.schema_id
        if self.first_row_id is not None:
            out["first-row-id"] = self.first_row_id
        if self.added_rows is not None:
            out["added-rows"] = self.added_rows
        if self.key_id is not None:
            out["key-id"] = self.key_id
        return out

    def json_text(self, format_version: int = 2) -> str:
        """:meth:`to_json` as compact text, encoded once per format version and kept."""
        return cached_compact(
            self, f"_json_v{format_version}", lambda: self.to_json(format_version)
        )

    @staticmethod
    def from_json(obj: Any, format_version: int = 2) -> Snapshot:
        """Parses a snapshot; ``format_version`` decides which fields are required."""
        m = require_object(obj, "snapshot")
        snapshot_id = get_int(m, "snapshot-id", "snapshot")
        what = f"snapshot {snapshot_id}"
        if format_version >= 2:
            seq = opt_int(m, "sequence-number", what)
            sequence_number = 0 if seq is None else seq
        else:
            sequence_number = 0
        manifest_list = opt_str(m, "manifest-list", what)
        manifests: tuple[str, ...] | None = None
        if "manifests" in m and m["manifests"] is not None:
            raw = get_list(m, "manifests", what)
            for p in raw:
                if not isinstance(p, str):
                    raise ValidationError(f"{what}: 'manifests' must hold strings, got {p!r}")
            manifests = tuple(raw)
        if manifest_list is None:
            if format_version >= 2:
                raise ValidationError(
                    f"{what}: manifest-list must exist in format v{format_version}"
                )
            if manifests is None:
                raise ValidationError(f"{what}: needs 'manifest-list' or 'manifests'")
        elif manifests is not None:
            raise ValidationError(f"{what}: 'manifests' must be omitted with 'manifest-list'")
        summary = Summary.from_json(m["summary"]) if m.get("summary") is not None else None
        added_rows = opt_int(m, "added-rows", what)
        if added_rows is not None and added_rows < 0:
            raise ValidationError(f"{what}: added-rows must not be negative: {added_rows}")
        first_row_id = opt_int(m, "first-row-id", what)
        if first_row_id is not None and first_row_id < 0:
            raise ValidationError(f"{what}: first-row-id must not be negative: {first_row_id}")
        return Snapshot(
            snapshot_id=snapshot_id,
            timestamp_ms=get_int(m, "timestamp-ms", what),
            manifest_list=manifest_list,
            sequence_number=sequence_number,
            parent_snapshot_id=opt_int(m, "parent-snapshot-id", what),
            summary=summary,
            schema_id=opt_int(m, "schema-id", what),
            manifests=manifests,
            first_row_id=first_row_id,
            added_rows=added_rows,
            key_id=opt_str(m, "key-id", what),
        )


@dataclass(frozen=True)
class SnapshotRef:
    """A branch or tag (spec "Snapshot References") with its retention settings.

    Retention values must be positive; tags cannot carry ``min_snapshots_to_keep`` or
    ``max_snapshot_age_ms`` (those only make sense for a branch's history).
    """

    snapshot_id: int
    ref_type: str = BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    def __post_init__(self) -> None:
        rt = self.ref_type.lower() if isinstance(self.ref_type, str) else self.ref_type
        if rt not in (BRANCH, TAG):
            raise ValidationError(f"ref type must be 'branch' or 'tag', got {self.ref_type!r}")
        object.__setattr__(self, "ref_type", rt)
        for name in ("min_snapshots_to_keep", "max_snapshot_age_ms", "max_ref_age_ms"):
            v = getattr(self, name)
            if v is None:
                continue
            key = name.replace("_", "-")
            if v <= 0:
                raise ValidationError(f"ref {key} must be greater than 0, got {v}")
            # what the metadata field holds (Java reads an int and two longs)
            limit = INT32_MAX if name == "min_snapshots_to_keep" else INT64_MAX
            if v > limit:
                raise ValidationError(f"ref {key} must be at most {limit}, got {v}")
        if rt == TAG and self.min_snapshots_to_keep is not None:
            raise ValidationError("tags do not support setting min-snapshots-to-keep")
        if rt == TAG and self.max_snapshot_age_ms is not None:
            raise ValidationError("tags do not support setting max-snapshot-age-ms")

    @property
    def is_branch(self) -> bool:
        return self.ref_type == BRANCH

    @staticmethod
    def branch(snapshot_id: int, **retention: int | None) -> SnapshotRef:
        return SnapshotRef(snapshot_id, BRANCH, **retention)

    @staticmethod
    def tag(snapshot_id: int, max_ref_age_ms: int | None = None) -> SnapshotRef:
        return SnapshotRef(snapshot_id, TAG, max_ref_age_ms=max_ref_age_ms)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"snapshot-id": self.snapshot_id, "type": self.ref_type}
        if self.min_snapshots_to_keep is not None:
            out["min-snapshots-to-keep"] = self.min_snapshots_to_keep
        if self.max_snapshot_age_ms is not None:
            out["max-snapshot-age-ms"] = self.max_snapshot_age_ms
        if self.max_ref_age_ms is not None:
            out["max-ref-age-ms"] = self.max_ref_age_ms
        return out

    @staticmethod
    def from_json(obj: Any, name: str = "") -> SnapshotRef:
        what = f"ref {name!r}" if name else "ref"
        m = require_object(obj, what)
        return SnapshotRef(
            snapshot_id=get_int(m, "snapshot-id", what),
            ref_type=get_str(m, "type", what),
            min_snapshots_to_keep=opt_int(m, "min-snapshots-to-keep", what),
            max_snapshot_age_ms=opt_int(m, "max-snapshot-age-ms", what),
            max_ref_age_ms=opt_int(m, "max-ref-age-ms", what),
        )


@dataclass(frozen=True)
class SnapshotLogEntry:
    """One ``snapshot-log`` entry: when the current snapshot became ``snapshot_id``."""

    timestamp_ms: int
    snapshot_id: int

    def to_json(self) -> dict[str, Any]:
        return {"timestamp-ms": self.timestamp_ms, "snapshot-id": self.snapshot_id}

    def json_text(self) -> str:
        """:meth:`to_json` as compact text, encoded once and kept."""
        return cached_compact(self, "_json", self.to_json)

    @staticmethod
    def from_json(obj: Any) -> SnapshotLogEntry:
        m = require_object(obj, "snapshot-log entry")
        return SnapshotLogEntry(
            timestamp_ms=get_int(m, "timestamp-ms", "snapshot-log entry"),
            snapshot_id=get_int(m, "snapshot-id", "snapshot-log entry"),
        )


@dataclass(frozen=True)
class MetadataLogEntry:
    """One ``metadata-log`` entry: a previous metadata file and its ``last-updated-ms``."""

    timestamp_ms: int
    metadata_file: str

    def to_json(self) -> dict[str, Any]:
        return {"timestamp-ms": self.timestamp_ms, "metadata-file": self.metadata_file}

    def json_text(self) -> str:
        """:meth:`to_json` as compact text, encoded once and kept."""
        return cached_compact(self, "_json", self.to_json)

    @staticmethod
    def from_json(obj: Any) -> MetadataLogEntry:
        m = require_object(obj, "metadata-log entry")
        return MetadataLogEntry(
            timestamp_ms=get_int(m, "timestamp-ms", "metadata-log entry"),
            metadata_file=get_str(m, "metadata-file", "metadata-log entry"),
        )


@dataclass(frozen=True)
class BlobMetadata:
    """Metadata of one Puffin blob of a table statistics file."""

    type: str
    snapshot_id: int
    sequence_number: int
    fields: tuple[int, ...]
    properties: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "properties", dict(self.properties))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "fields": list(self.fields),
        }
        if self.properties:
            out["properties"] = dict(self.properties)
        return out

    @staticmethod
    def from_json(obj: Any) -> BlobMetadata:
        what = "blob-metadata"
        m = require_object(obj, what)
        return BlobMetadata(
            type=get_str(m, "type", what),
            snapshot_id=get_int(m, "snapshot-id", what),
            sequence_number=get_int(m, "sequence-number", what),
            fields=get_int_list(m, "fields", what),
            properties=opt_str_map(m, "properties", what),
        )


@dataclass(frozen=True)
class StatisticsFile:
    """A table statistics (Puffin) file registered in ``statistics``."""

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int
    file_footer_size_in_bytes: int
    blob_metadata: tuple[BlobMetadata, ...] = ()
    key_metadata: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "blob_metadata", tuple(self.blob_metadata))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "snapshot-id": self.snapshot_id,
            "statistics-path": self.statistics_path,
            "file-size-in-bytes": self.file_size_in_bytes,
            "file-footer-size-in-bytes": self.file_footer_size_in_bytes,
        }
        if self.key_metadata is not None:
            out["key-metadata"] = self.key_metadata
        out["blob-metadata"] = [b.to_json() for b in self.blob_metadata]
        return out

    @staticmethod
    def from_json(obj: Any) -> StatisticsFile:
        what = "statistics file"
        m = require_object(obj, what)
        return StatisticsFile(
            snapshot_id=get_int(m, "snapshot-id", what),
            statistics_path=get_str(m, "statistics-path", what),
            file_size_in_bytes=get_int(m, "file-size-in-bytes", what),
            file_footer_size_in_bytes=get_int(m, "file-footer-size-in-bytes", what),
            blob_metadata=tuple(
                BlobMetadata.from_json(b) for b in get_list(m, "blob-metadata", what)
            ),
            key_metadata=opt_str(m, "key-metadata", what),
        )


@dataclass(frozen=True)
class PartitionStatisticsFile:
    """A partition statistics file registered in ``partition-statistics``."""

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int

    def to_json(self) -> dict[str, Any]:
        return {
            "snapshot-id": self.snapshot_id,
            "statistics-path": self.statistics_path,
            "file-size-in-bytes": self.file_size_in_bytes,
        }

    @staticmethod
    def from_json(obj: Any) -> PartitionStatisticsFile:
        what = "partition statistics file"
        m = require_object(obj, what)
        return PartitionStatisticsFile(
            snapshot_id=get_int(m, "snapshot-id", what),
            statistics_path=get_str(m, "statistics-path", what),
            file_size_in_bytes=get_int(m, "file-size-in-bytes", what),
        )


@dataclass(frozen=True)
class EncryptedKey:
    """An entry of the v3 ``encryption-keys`` list.

    ``encrypted_key_metadata`` stays in its base64 text form. The wrapping key is written as
    ``encrypted-by-id`` (as the Java and Rust references do); the spec table's
    ``encrypted-by-id-metadata`` spelling is also accepted on read.
    """

    key_id: str
    encrypted_key_metadata: str
    encrypted_by_id: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "properties", dict(self.properties))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "key-id": self.key_id,
            "encrypted-key-metadata": self.encrypted_key_metadata,
        }
        if self.encrypted_by_id is not None:
            out["encrypted-by-id"] = self.encrypted_by_id
        if self.properties:
            out["properties"] = dict(self.properties)
        return out

    @staticmethod
    def from_json(obj: Any) -> EncryptedKey:
        what = "encryption key"
        m = require_object(obj, what)
        by_id = opt_str(m, "encrypted-by-id", what)
        if by_id is None:
            by_id = opt_str(m, "encrypted-by-id-metadata", what)
        return EncryptedKey(
            key_id=get_str(m, "key-id", what),
            encrypted_key_metadata=get_str(m, "encrypted-key-metadata", what),
            encrypted_by_id=by_id,
            properties=opt_str_map(m, "properties", what),
        )
