"""The description of a written content file and its manifest-entry form.

:class:`DataFile` is a plain, picklable value (Spark executors return it to the driver) with the
``data_file`` fields of the spec; :func:`entries_batch` turns a list of them into the columnar
manifest layout of :mod:`icefloe.manifest` so a producer can write them into a manifest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import pyarrow as pa

from icefloe.manifest import read_manifest, write_manifest
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema

__all__ = [
    "DATA",
    "EQUALITY_DELETES",
    "POSITION_DELETES",
    "DataFile",
    "entries_batch",
    "manifest_arrow_schema",
]

DATA = 0
POSITION_DELETES = 1
EQUALITY_DELETES = 2

_MAP_FIELDS = (
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
)


@dataclass
class DataFile:
    """A data or delete file to add to a table (the spec's ``data_file`` struct).

    ``partition`` maps partition field names to values of the partition type's Python form
    (``datetime.date`` for ``day``, ints for ``year``/``month``/``hour``/``bucket``, the source
    value for ``identity``/``truncate``). ``content`` is 0 data, 1 position deletes (and
    deletion vectors, with ``file_format`` ``PUFFIN``), 2 equality deletes.
    """

    file_path: str
    record_count: int
    file_size_in_bytes: int
    spec_id: int = 0
    partition: dict[str, Any] = field(default_factory=dict)
    content: int = DATA
    file_format: str = "PARQUET"
    column_sizes: dict[int, int] | None = None
    value_counts: dict[int, int] | None = None
    null_value_counts: dict[int, int] | None = None
    nan_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: list[int] | None = None
    equality_ids: list[int] | None = None
    sort_order_id: int | None = None
    first_row_id: int | None = None
    referenced_data_file: str | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None
    #: An explicit data sequence number (None: the snapshot's, inherited), as a compaction that
    #: keeps its starting sequence number writes it.
    data_sequence_number: int | None = None

    def to_entry(self) -> dict[str, Any]:
        """The manifest-layout row (without status, snapshot id and sequence numbers)."""
        out: dict[str, Any] = {
            "content": self.content,
            "file_path": self.file_path,
            "file_format": self.file_format,
            "partition": dict(self.partition),
            "record_count": self.record_count,
            "file_size_in_bytes": self.file_size_in_bytes,
            "key_metadata": self.key_metadata,
            "split_offsets": self.split_offsets,
            "equality_ids": self.equality_ids,
            "sort_order_id": self.sort_order_id,
            "first_row_id": self.first_row_id,
            "referenced_data_file": self.referenced_data_file,
            "content_offset": self.content_offset,
            "content_size_in_bytes": self.content_size_in_bytes,
        }
        for name in _MAP_FIELDS:
            m = getattr(self, name)
            out[name] = None if m is None else sorted(m.items())
        return out

    @staticmethod
    def from_entry(row: dict[str, Any], spec_id: int = 0) -> DataFile:
        """A :class:`DataFile` of one decoded manifest row (``read_manifest(...).to_pylist()``)."""
        kwargs: dict[str, Any] = {k: row.get(k) for k in _SCALARS}
        for name in _MAP_FIELDS:
            v = row.get(name)
            kwargs[name] = None if v is None else dict(v)
        kwargs["partition"] = dict(row.get("partition") or {})
        return DataFile(spec_id=spec_id, **kwargs)


_SCALARS = (
    "file_path",
    "record_count",
    "file_size_in_bytes",
    "content",
    "file_format",
    "key_metadata",
    "split_offsets",
    "equality_ids",
    "sort_order_id",
    "first_row_id",
    "referenced_data_file",
    "content_offset",
    "content_size_in_bytes",
)


@lru_cache(maxsize=64)
def _schema_for(version: int, schema_json: str, spec_json: str, spec_id: int) -> pa.Schema:
    empty = pa.RecordBatch.from_pylist([], schema=pa.schema([pa.field("status", pa.int32())]))
    data, _ = write_manifest(
        empty,
        format_version=version,
        schema_json=schema_json,
        spec_json=spec_json,
        spec_id=spec_id,
        path="<schema>",
    )
    return read_manifest(data).schema


def manifest_arrow_schema(version: int, schema: Schema, spec: PartitionSpec) -> pa.Schema:
    """The Arrow schema :func:`icefloe.manifest.read_manifest` gives for such a manifest."""
    return _schema_for(
        version, json.dumps(schema.to_json()), json.dumps(spec.to_json()), spec.spec_id
    )


def entries_batch(
    files: list[DataFile],
    *,
    version: int,
    schema: Schema,
    spec: PartitionSpec,
    status: int = 1,
    snapshot_id: int | None = None,
) -> pa.RecordBatch:
    """Manifest entries for ``files`` with ``status`` (1 added by default, inheriting the
    snapshot id and sequence numbers from the manifest list)."""
    target = manifest_arrow_schema(version, schema, spec)
    rows = []
    for f in files:
        row = f.to_entry()
        row["status"] = status
        row["snapshot_id"] = snapshot_id
        if f.data_sequence_number is not None:
            row["sequence_number"] = f.data_sequence_number
        rows.append(row)
    return pa.RecordBatch.from_pylist(rows, schema=target)
