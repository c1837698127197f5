"""Table metadata JSON, format versions 1, 2 and 3 (spec "Table Metadata", Appendix C and E).

:class:`TableMetadata` is an immutable value holding every field of the spec's table. Reading
(:meth:`TableMetadata.from_json`, :meth:`TableMetadata.parse`) follows the Java reference:

* a ``format-version`` above 3 raises :class:`~icefloe.exceptions.UnsupportedFeatureError`;
* fields that v2 made required (``schemas``, ``partition-specs``, ``last-partition-id``,
  ``sort-orders`` ...) raise :class:`~icefloe.exceptions.ValidationError` naming the field when
  missing from v2/v3 files, and take the Appendix E defaults when missing from v1 files;
* ``current-snapshot-id`` of ``-1``, ``null`` or absent all mean "no current snapshot";
* ``refs`` without ``main`` gets a ``main`` branch at the current snapshot;
* unknown fields are ignored; gzip-compressed bytes are detected by their magic number.

Writing (:meth:`TableMetadata.to_json`, :meth:`TableMetadata.dumps`) uses the Java writer's key
order, writes v1's deprecated ``schema`` / ``partition-spec`` copies, and writes "no current
snapshot" as ``-1`` for v1/v2 and ``null`` for v3.
"""

from __future__ import annotations

import datetime
import gzip
import json
import time
import uuid as _uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from icefloe.exceptions import NoSuchSnapshotError, UnsupportedFeatureError, ValidationError
from icefloe.metadata._json import (
    check_int32,
    compact,
    get_int,
    get_int32,
    get_list,
    get_str,
    leading_value,
    opt_int,
    opt_int32,
    opt_list,
    opt_str,
    opt_str_map,
    parse_document,
    require_object,
)
from icefloe.metadata.snapshots import (
    BRANCH,
    MAIN_BRANCH,
    EncryptedKey,
    MetadataLogEntry,
    PartitionStatisticsFile,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
    StatisticsFile,
)
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema
from icefloe.sorting import UNSORTED_SORT_ORDER, SortOrder
from icefloe.values import epoch_ms

__all__ = [
    "INITIAL_SEQUENCE_NUMBER",
    "SUPPORTED_FORMAT_VERSION",
    "TableMetadata",
    "is_gzip_metadata_path",
]

#: The highest table format version icefloe reads and writes.
SUPPORTED_FORMAT_VERSION = 3
INITIAL_SEQUENCE_NUMBER = 0
#: ``last-partition-id`` of a table that never had a partition field (ids start at 1000).
PARTITION_DATA_ID_START = 1000
_ONE_MINUTE_MS = 60_000
_WHAT = "table metadata"


def is_gzip_metadata_path(path: str) -> bool:
    """Whether a metadata file name says GZIP: ``*.gz.metadata.json`` or ``*.metadata.json.gz``."""
    if path.endswith(".metadata.json.gz"):
        return True
    return path.endswith(".gz.metadata.json")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, eq=True)
class TableMetadata:
    """Every field of the spec's table metadata; see the module docstring for read/write rules.

    ``table_uuid`` may be ``None`` only in v1. ``next_row_id`` is ``None`` below v3.
    ``current_snapshot_id`` is ``None`` when the table has no current snapshot.
    """

    format_version: int
    table_uuid: str | None
    location: str
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    partition_specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    sort_orders: tuple[SortOrder, ...] = (UNSORTED_SORT_ORDER,)
    default_sort_order_id: int = 0
    last_sequence_number: int = INITIAL_SEQUENCE_NUMBER
    properties: Mapping[str, str] = field(default_factory=dict)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = ()
    refs: Mapping[str, SnapshotRef] = field(default_factory=dict)
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    statistics: tuple[StatisticsFile, ...] = ()
    partition_statistics: tuple[PartitionStatisticsFile, ...] = ()
    next_row_id: int | None = None
    encryption_keys: tuple[EncryptedKey, ...] = ()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        # a summary: a table's full metadata can hold thousands of snapshots (and encryption
        # keys); ``to_json()`` gives all of it
        return (
            f"TableMetadata(format_version={self.format_version}, "
            f"table_uuid={self.table_uuid!r}, location={self.location!r}, "
            f"current_snapshot_id={self.current_snapshot_id}, "
            f"current_schema_id={self.current_schema_id}, default_spec_id={self.default_spec_id}, "
            f"snapshots={len(self.snapshots)}, refs={len(self.refs)}, "
            f"schemas={len(self.schemas)}, partition_specs={len(self.partition_specs)}, "
            f"properties={len(self.properties)})"
        )

    def __post_init__(self) -> None:
        for name in (
            "schemas",
            "partition_specs",
            "sort_orders",
            "snapshots",
            "snapshot_log",
            "metadata_log",
            "statistics",
            "partition_statistics",
            "encryption_keys",
        ):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "properties", dict(self.properties))
        refs = dict(self.refs)
        if self.current_snapshot_id is not None and MAIN_BRANCH not in refs:
            refs[MAIN_BRANCH] = SnapshotRef(self.current_snapshot_id, BRANCH)
        object.__setattr__(self, "refs", refs)
        if self.format_version >= 3 and self.next_row_id is None:
            object.__setattr__(self, "next_row_id", 0)
        self._validate()

    # ------------------------------------------------------------------ validation

    def _validate(self) -> None:
        v = self.format_version
        if v > SUPPORTED_FORMAT_VERSION:
            raise UnsupportedFeatureError(f"Cannot read unsupported version {v}")
        if v < 1:
            raise ValidationError(f"format-version must be 1, 2 or 3, got {v}")
        if v >= 2 and self.table_uuid is None:
            raise ValidationError(f"table-uuid is required in format v{v}")
        if v == 1 and self.last_sequence_number != 0:
            raise ValidationError(
                f"last-sequence-number must be 0 in v1, got {self.last_sequence_number}"
            )
        if v < 3 and self.next_row_id is not None:
            raise ValidationError(f"next-row-id is only allowed from format v3, not v{v}")
        if self.next_row_id is not None and self.next_row_id < 0:
            raise ValidationError(f"next-row-id must not be negative: {self.next_row_id}")
        _unique((s.schema_id for s in self.schemas), "schemas", "schema-id")
        _unique((s.spec_id for s in self.partition_specs), "partition-specs", "spec-id")
        _unique((o.order_id for o in self.sort_orders), "sort-orders", "order-id")
        _unique((s.snapshot_id for s in self.snapshots), "snapshots", "snapshot-id")
        if not self.schemas:
            raise ValidationError("schemas must not be empty")
        if self.schema_by_id(self.current_schema_id) is None:
            raise ValidationError(
                f"Cannot find schema with current-schema-id={self.current_schema_id} from schemas"
            )
        if not self.partition_specs:
            raise ValidationError("partition-specs must not be empty")
        if self.spec_by_id(self.default_spec_id) is None:
            raise ValidationError(
                f"Cannot find spec with default-spec-id={self.default_spec_id} from partition-specs"
            )
        if self.sort_order_by_id(self.default_sort_order_id) is None:
            raise ValidationError(
                f"Cannot find sort order with default-sort-order-id={self.default_sort_order_id}"
                " from sort-orders"
            )
        by_id = {s.snapshot_id: s for s in self.snapshots}
        if self.current_snapshot_id is not None and self.current_snapshot_id not in by_id:
            raise ValidationError(
                f"current-snapshot-id {self.current_snapshot_id} is not in snapshots"
            )
        for s in self.snapshots:
            if s.sequence_number > self.last_sequence_number:
                raise ValidationError(
                    f"snapshot {s.snapshot_id} has sequence-number {s.sequence_number} greater "
                    f"than last-sequence-number {self.last_sequence_number}"
                )
            if (
                self.next_row_id is not None
                and s.first_row_id is not None
                and s.first_row_id + (s.added_rows or 0) > self.next_row_id
            ):
                # a writer on top would hand out row ids this snapshot already assigned
                raise ValidationError(
                    f"snapshot {s.snapshot_id} assigns row ids up to "
                    f"{s.first_row_id + (s.added_rows or 0) - 1}, at or beyond next-row-id "
                    f"{self.next_row_id}"
                )
        for name, ref in self.refs.items():
            if ref.snapshot_id not in by_id:
                raise ValidationError(
                    f"refs: snapshot {ref.snapshot_id} of ref {name!r} is not in snapshots"
                )
        self._validate_log_times()
        main = self.refs.get(MAIN_BRANCH)
        if main is not None:
            if not main.is_branch:
                raise ValidationError("refs: 'main' must be a branch")
            if self.current_snapshot_id is None:
                raise ValidationError(
                    "refs: current-snapshot-id is not set but the main branch exists"
                )
            if main.snapshot_id != self.current_snapshot_id:
                raise ValidationError(
                    f"refs: current-snapshot-id {self.current_snapshot_id} does not match the "
                    f"main branch ({main.snapshot_id})"
                )

    def _validate_log_times(self) -> None:
        """Both logs are in time order and not after ``last-updated-ms``, with the reference's
        one-minute tolerance for clock skew between writers."""
        for key, entries in (
            ("snapshot-log", self.snapshot_log),
            ("metadata-log", self.metadata_log),
        ):
            prev: int | None = None
            for e in entries:
                if prev is not None and e.timestamp_ms - prev < -_ONE_MINUTE_MS:
                    raise ValidationError(f"{key} entries are not sorted by timestamp-ms")
                prev = e.timestamp_ms
            if prev is not None and self.last_updated_ms - prev < -_ONE_MINUTE_MS:
                raise ValidationError(
                    f"last-updated-ms {self.last_updated_ms} is before the last {key} entry "
                    f"at {prev}"
                )

    # ------------------------------------------------------------------ lookups

    def schema_by_id(self, schema_id: int) -> Schema | None:
        return next((s for s in self.schemas if s.schema_id == schema_id), None)

    def current_schema(self) -> Schema:
        s = self.schema_by_id(self.current_schema_id)
        assert s is not None  # checked in _validate
        return s

    def spec_by_id(self, spec_id: int) -> PartitionSpec | None:
        return next((s for s in self.partition_specs if s.spec_id == spec_id), None)

    def spec(self) -> PartitionSpec:
        """The default partition spec."""
        s = self.spec_by_id(self.default_spec_id)
        assert s is not None
        return s

    def sort_order_by_id(self, order_id: int) -> SortOrder | None:
        return next((o for o in self.sort_orders if o.order_id == order_id), None)

    def sort_order(self) -> SortOrder:
        """The default sort order."""
        o = self.sort_order_by_id(self.default_sort_order_id)
        assert o is not None
        return o

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        # indexed once per metadata object: walking a long history looks up every entry
        index = self.__dict__.get("_snapshot_index")
        if index is None:
            index = {s.snapshot_id: s for s in reversed(self.snapshots)}  # the first one wins
            self.__dict__["_snapshot_index"] = index
        found: Snapshot | None = index.get(snapshot_id)
        return found

    def snapshot_by_name(self, name: str) -> Snapshot | None:
        """The snapshot a branch or tag points at, or ``None`` when there is no such ref."""
        ref = self.refs.get(name)
        return self.snapshot_by_id(ref.snapshot_id) if ref is not None else None

    def current_snapshot(self) -> Snapshot | None:
        if self.current_snapshot_id is None:
            return None
        return self.snapshot_by_id(self.current_snapshot_id)

    def snapshot(self, snapshot_id: int) -> Snapshot:
        """The snapshot with that id; raises :class:`NoSuchSnapshotError` when there is none."""
        s = self.snapshot_by_id(snapshot_id)
        if s is None:
            raise NoSuchSnapshotError(f"no snapshot with id {snapshot_id}")
        return s

    def ancestors_of(self, snapshot_id: int) -> list[Snapshot]:
        """``snapshot_id``'s snapshot and its ancestors, newest first, following
        ``parent-snapshot-id`` until a snapshot without a (still existing) parent."""
        by_id = {s.snapshot_id: s for s in self.snapshots}
        out: list[Snapshot] = []
        seen: set[int] = set()
        current = by_id.get(snapshot_id)
        while current is not None and current.snapshot_id not in seen:
            out.append(current)
            seen.add(current.snapshot_id)
            parent = current.parent_snapshot_id
            current = by_id.get(parent) if parent is not None else None
        return out

    def snapshot_as_of(self, timestamp_ms: int | datetime.datetime) -> Snapshot:
        """The snapshot that was current at ``timestamp_ms`` (epoch ms or a datetime), from
        ``snapshot-log`` (spec Appendix F "Point in Time Reads"): the last entry at or before
        the time.

        Raises :class:`NoSuchSnapshotError` when the log has no such entry or its snapshot has
        been expired.
        """
        timestamp_ms = epoch_ms(timestamp_ms, "timestamp_ms")
        found: SnapshotLogEntry | None = None
        for e in self.snapshot_log:
            if e.timestamp_ms <= timestamp_ms:
                found = e
        if found is None:
            raise NoSuchSnapshotError(
                f"no snapshot was current at {timestamp_ms}: the snapshot log "
                + ("starts later" if self.snapshot_log else "is empty")
            )
        snapshot = self.snapshot_by_id(found.snapshot_id)
        if snapshot is None:
            raise NoSuchSnapshotError(
                f"snapshot {found.snapshot_id}, current at {timestamp_ms}, has been expired"
            )
        return snapshot

    def encryption_key(self, key_id: str) -> EncryptedKey | None:
        return next((k for k in self.encryption_keys if k.key_id == key_id), None)

    def property_as_int(self, key: str, default: int) -> int:
        """Integer property ``key`` (see :func:`icefloe.properties.int_property`)."""
        from icefloe.properties import int_property

        return int_property(self.properties, key, default)

    # ------------------------------------------------------------------ writing

    def to_json(self) -> dict[str, Any]:
        """The metadata as a JSON object, with keys in the Java writer's order."""
        v = self.format_version
        out = self._head_json()
        out["snapshots"] = [s.to_json(v) for s in self.snapshots]
        out["statistics"] = [s.to_json() for s in self.statistics]
        out["partition-statistics"] = [s.to_json() for s in self.partition_statistics]
        out["snapshot-log"] = [e.to_json() for e in self.snapshot_log]
        out["metadata-log"] = [e.to_json() for e in self.metadata_log]
        return out

    def _head_json(self) -> dict[str, Any]:
        """The keys of :meth:`to_json` before ``snapshots``, in order."""
        v = self.format_version
        out: dict[str, Any] = {"format-version": v}
        if self.table_uuid is not None:
            out["table-uuid"] = self.table_uuid
        out["location"] = self.location
        if v > 1:
            out["last-sequence-number"] = self.last_sequence_number
        out["last-updated-ms"] = self.last_updated_ms
        out["last-column-id"] = self.last_column_id
        if v == 1:
            out["schema"] = self.current_schema().to_json()
        out["current-schema-id"] = self.current_schema_id
        out["schemas"] = [s.to_json() for s in self.schemas]
        if v == 1:
            out["partition-spec"] = self.spec().fields_json()
        out["default-spec-id"] = self.default_spec_id
        out["partition-specs"] = [s.to_json() for s in self.partition_specs]
        out["last-partition-id"] = self.last_partition_id
        out["default-sort-order-id"] = self.default_sort_order_id
        out["sort-orders"] = [o.to_json() for o in self.sort_orders]
        out["properties"] = dict(self.properties)
        if self.current_snapshot_id is not None:
            out["current-snapshot-id"] = self.current_snapshot_id
        else:
            out["current-snapshot-id"] = None if v >= 3 else -1
        if v >= 3:
            out["next-row-id"] = self.next_row_id
        out["refs"] = {name: ref.to_json() for name, ref in self.refs.items()}
        if self.encryption_keys:
            out["encryption-keys"] = [k.to_json() for k in self.encryption_keys]
        return out

    def dumps(self, indent: int | None = None) -> str:
        """The JSON text; compact like the Java ``toJson`` unless ``indent`` is given.

        The compact text is the encoding of :meth:`to_json`, assembled from the text each
        snapshot and log entry keeps of itself: a commit re-encodes only what it changed, not
        the table's whole history.
        """
        if indent is not None:
            return json.dumps(self.to_json(), indent=indent, ensure_ascii=False)
        v = self.format_version
        head = compact(self._head_json())  # an object: ends with "}"
        return "".join(
            (
                head[:-1],
                ',"snapshots":[',
                ",".join(s.json_text(v) for s in self.snapshots),
                '],"statistics":',
                compact([s.to_json() for s in self.statistics]),
                ',"partition-statistics":',
                compact([s.to_json() for s in self.partition_statistics]),
                ',"snapshot-log":[',
                ",".join(e.json_text() for e in self.snapshot_log),
                '],"metadata-log":[',
                ",".join(e.json_text() for e in self.metadata_log),
                "]}",
            )
        )

    def to_bytes(self, compress: bool = False) -> bytes:
        """UTF-8 JSON bytes, gzip-compressed when ``compress`` (for ``*.gz.metadata.json``)."""
        data = self.dumps().encode("utf-8")
        return gzip.compress(data, mtime=0) if compress else data

    # ------------------------------------------------------------------ reading

    @staticmethod
    def parse(data: str | bytes | bytearray | memoryview) -> TableMetadata:
        """Parses metadata JSON text or bytes; gzip-compressed bytes are detected by magic."""
        # every failure is a ValidationError: damaged gzip, not UTF-8, not JSON, over-long
        # integer literals, strings with lone surrogates (never written back as UTF-8)
        return TableMetadata.from_json(parse_document(data, _WHAT))

    @staticmethod
    def parse_uuid(data: bytes, whole: bool = True) -> tuple[bool, str | None]:
        """The ``table-uuid`` of metadata JSON bytes (None when absent), without building the
        rest: for looking at many old versions, each of which lists every snapshot before
        it. With ``whole=False`` the bytes are the file's first ones and the answer comes
        from the keys before they end (writers put ``table-uuid`` near the start); the flag
        returned is False when they do not settle it: parse the whole file then."""
        if whole:
            uuid = require_object(parse_document(data, _WHAT), _WHAT).get("table-uuid")
        else:
            found, uuid = leading_value(data, "table-uuid")
            if not found:
                return False, None
        return True, uuid if isinstance(uuid, str) else None

    @staticmethod
    def from_json(obj: Any) -> TableMetadata:
        """Builds metadata from a parsed JSON object (see the module docstring for the rules).

        Integer fields are range-checked like the Java parser: ids and ``format-version`` must
        fit a 32-bit int, every other integer a 64-bit long.
        """
        m = require_object(obj, _WHAT)
        v = get_int32(m, "format-version", _WHAT)
        if v > SUPPORTED_FORMAT_VERSION:
            raise UnsupportedFeatureError(f"Cannot read unsupported version {v}")
        if v < 1:
            raise ValidationError(f"format-version must be 1, 2 or 3, got {v}")
        table_uuid = opt_str(m, "table-uuid", _WHAT)
        if v >= 2 and table_uuid is None:
            raise ValidationError(f"table-uuid must exist in format v{v}")
        location = get_str(m, "location", _WHAT)
        last_seq = get_int(m, "last-sequence-number", _WHAT) if v >= 2 else 0
        last_column_id = get_int32(m, "last-column-id", _WHAT)
        schemas, current_schema_id = _read_schemas(m, v)
        specs, default_spec_id = _read_specs(m, v, schemas, current_schema_id)
        last_partition_id = opt_int32(m, "last-partition-id", _WHAT)
        if last_partition_id is None:
            if v >= 2:
                raise ValidationError(f"last-partition-id must exist in format v{v}")
            last_partition_id = max(
                (s.last_assigned_field_id for s in specs), default=PARTITION_DATA_ID_START - 1
            )
        orders, default_order_id = _read_sort_orders(m, v)
        properties = opt_str_map(m, "properties", _WHAT)
        current = opt_int(m, "current-snapshot-id", _WHAT)
        if current == -1:
            current = None
        last_updated_ms = get_int(m, "last-updated-ms", _WHAT)
        snapshots = tuple(Snapshot.from_json(s, v) for s in opt_list(m, "snapshots", _WHAT))
        for snap in snapshots:
            if snap.schema_id is not None:  # Java: getIntOrNull
                check_int32(snap.schema_id, f"snapshot {snap.snapshot_id} schema-id")
        refs_obj = m.get("refs")
        refs: dict[str, SnapshotRef] = {}
        if refs_obj is not None:
            for name, ref in require_object(refs_obj, "refs").items():
                refs[str(name)] = r = SnapshotRef.from_json(ref, str(name))
                if r.min_snapshots_to_keep is not None:  # Java: getIntOrNull
                    check_int32(r.min_snapshots_to_keep, f"ref {name!r} min-snapshots-to-keep")
        statistics = tuple(StatisticsFile.from_json(e) for e in opt_list(m, "statistics", _WHAT))
        for stats in statistics:
            for blob in stats.blob_metadata:  # Java: getIntegerList
                for fid in blob.fields:
                    check_int32(fid, f"statistics file {stats.statistics_path!r} blob field id")
        next_row_id: int | None = None
        if v >= 3:
            next_row_id = get_int(m, "next-row-id", _WHAT)
        return TableMetadata(
            format_version=v,
            table_uuid=table_uuid,
            location=location,
            last_updated_ms=last_updated_ms,
            last_column_id=last_column_id,
            schemas=schemas,
            current_schema_id=current_schema_id,
            partition_specs=specs,
            default_spec_id=default_spec_id,
            last_partition_id=last_partition_id,
            sort_orders=orders,
            default_sort_order_id=default_order_id,
            last_sequence_number=last_seq,
            properties=properties,
            current_snapshot_id=current,
            snapshots=snapshots,
            refs=refs,
            snapshot_log=tuple(
                SnapshotLogEntry.from_json(e) for e in opt_list(m, "snapshot-log", _WHAT)
            ),
            metadata_log=tuple(
                MetadataLogEntry.from_json(e) for e in opt_list(m, "metadata-log", _WHAT)
            ),
            statistics=statistics,
            partition_statistics=tuple(
                PartitionStatisticsFile.from_json(e)
                for e in opt_list(m, "partition-statistics", _WHAT)
            ),
            next_row_id=next_row_id,
            encryption_keys=tuple(
                EncryptedKey.from_json(e) for e in opt_list(m, "encryption-keys", _WHAT)
            ),
        )


# ---------------------------------------------------------------------- read helpers


def _unique(ids: Iterable[int], where: str, key: str) -> None:
    seen: set[int] = set()
    for i in ids:
        if i in seen:
            raise ValidationError(f"{where}: duplicate {key} {i}")
        seen.add(i)


def _schema_from_json(obj: Any) -> Schema:
    # The REST reference accepts a v1 `schema` object without `"type": "struct"`.
    if isinstance(obj, Mapping) and "type" not in obj and "fields" in obj:
        obj = {"type": "struct", **obj}
    return Schema.from_json(obj)


def _read_schemas(m: Mapping[str, Any], v: int) -> tuple[tuple[Schema, ...], int]:
    if m.get("schemas") is not None:
        schemas = tuple(_schema_from_json(s) for s in get_list(m, "schemas", _WHAT))
        current = opt_int32(m, "current-schema-id", _WHAT)
        if current is None:
            if v >= 2:
                raise ValidationError(f"current-schema-id must exist in format v{v}")
            # v1 written by some engines: `schemas` plus the deprecated `schema`; the current
            # schema is the one `schema` names (iceberg-rust behaviour).
            if m.get("schema") is None:
                raise ValidationError(
                    "current-schema-id is missing and there is no 'schema' to take it from"
                )
            legacy = _schema_from_json(m["schema"])
            current = legacy.schema_id
            named = next((s for s in schemas if s.schema_id == current), None)
            if named is not None and not named.same_schema(legacy):
                # `schema` without a schema-id reads as id 0: the schema it holds is current
                same = [s.schema_id for s in schemas if s.same_schema(legacy)]
                if not same:
                    raise ValidationError(
                        "current-schema-id is missing and 'schema' is none of 'schemas'"
                    )
                current = same[-1]
        if not any(s.schema_id == current for s in schemas):
            raise ValidationError(
                f"Cannot find schema with current-schema-id={current} from schemas"
            )
        return schemas, current
    if v >= 2:
        raise ValidationError(f"schemas must exist in format v{v}")
    if m.get("schema") is None:
        raise ValidationError("schema must exist in format v1 when schemas is missing")
    schema = _schema_from_json(m["schema"])
    return (schema,), schema.schema_id


def _read_specs(
    m: Mapping[str, Any], v: int, schemas: tuple[Schema, ...], current_schema_id: int
) -> tuple[tuple[PartitionSpec, ...], int]:
    if m.get("partition-specs") is not None:
        specs = tuple(PartitionSpec.from_json(s) for s in get_list(m, "partition-specs", _WHAT))
        for spec in specs:
            _check_spec_ids(spec)
        default = opt_int32(m, "default-spec-id", _WHAT)
        if default is None:
            if v >= 2:
                raise ValidationError(f"default-spec-id must exist in format v{v}")
            # v1 lenience (iceberg-rust): the highest spec id is the default.
            default = max((s.spec_id for s in specs), default=0)
        return specs, default
    if v >= 2:
        raise ValidationError(f"partition-specs must exist in format v{v}")
    if m.get("partition-spec") is None:
        raise ValidationError(
            "partition-spec must exist in format v1 when partition-specs is missing"
        )
    raw = m["partition-spec"]
    spec = PartitionSpec.fields_from_json(raw, spec_id=0)
    _check_spec_ids(spec)
    return (spec,), 0


def _check_spec_ids(spec: PartitionSpec) -> None:
    """The ids Java's PartitionSpecParser reads with ``getInt`` fit a 32-bit int."""
    check_int32(spec.spec_id, "partition spec spec-id")
    for f in spec.fields:
        check_int32(f.field_id, f"partition field {f.name!r} field-id")
        for i in f.all_source_ids:
            check_int32(i, f"partition field {f.name!r} source-id")


def _check_order_ids(order: SortOrder) -> None:
    """The ids Java's SortOrderParser reads with ``getInt`` fit a 32-bit int."""
    check_int32(order.order_id, "sort order order-id")
    for f in order.fields:
        for i in f.source_ids if f.source_ids is not None else (f.source_id,):
            check_int32(i, f"sort order {order.order_id} source-id")


def _read_sort_orders(m: Mapping[str, Any], v: int) -> tuple[tuple[SortOrder, ...], int]:
    if m.get("sort-orders") is not None:
        orders = tuple(SortOrder.from_json(o) for o in get_list(m, "sort-orders", _WHAT))
        for order in orders:
            _check_order_ids(order)
        default = opt_int32(m, "default-sort-order-id", _WHAT)
        if default is None:
            if v >= 2:
                raise ValidationError(f"default-sort-order-id must exist in format v{v}")
            default = UNSORTED_SORT_ORDER.order_id
        if not orders:
            orders = (UNSORTED_SORT_ORDER,)
        return orders, default
    if v >= 2:
        raise ValidationError(f"sort-orders must exist in format v{v}")
    return (UNSORTED_SORT_ORDER,), UNSORTED_SORT_ORDER.order_id


def new_uuid() -> str:
    """A fresh random table UUID."""
    return str(_uuid.uuid4())
