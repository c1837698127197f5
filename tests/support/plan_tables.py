"""Hand-built tables for the planning tests: manifests written with icefloe's manifest writer,
snapshots and metadata assembled directly (no catalog), readable by PyIceberg's StaticTable.

A :class:`HandTable` has ``metadata`` and ``io`` (what :class:`icefloe.table.scan.TableScan`
needs). :meth:`HandTable.commit` adds a snapshot whose manifest list is the previous snapshot's
manifests plus new ones; entries are dicts laid out as :func:`icefloe.manifest.read_manifest`
returns them (status 1 = added and a null sequence number inherit the snapshot's values).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa

from icefloe.io import FileIO
from icefloe.manifest import read_manifest, write_manifest, write_manifest_list
from icefloe.metadata import TableMetadata
from icefloe.partitioning import PartitionSpec
from icefloe.schema import Schema


def entry(path: str, partition: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """A data (or, with ``content``, delete) file entry with defaults."""
    e: dict[str, Any] = {
        "status": 1,
        "snapshot_id": None,
        "sequence_number": None,
        "file_sequence_number": None,
        "content": 0,
        "file_path": path,
        "file_format": "PARQUET",
        "partition": partition or {},
        "record_count": 10,
        "file_size_in_bytes": 1000,
    }
    e.update(kw)
    return e


class HandTable:
    """An in-memory table whose files live under ``tmp_path``."""

    def __init__(
        self,
        tmp_path: Path,
        schema: Schema,
        specs: list[PartitionSpec],
        version: int,
        properties: dict[str, str] | None = None,
    ) -> None:
        self.dir = tmp_path
        self.schema = schema
        self.specs = {s.spec_id: s for s in specs}
        self.version = version
        self.properties = dict(properties or {})
        self.io = FileIO()
        self.snapshots: list[dict[str, Any]] = []
        self.log: list[dict[str, Any]] = []
        self.refs: dict[str, dict[str, Any]] = {}
        self.manifests: list[dict[str, Any]] = []  # rows of the current manifest list
        self.seq = 0
        self.next_row_id = 0
        self.count = 0
        self.list_schema: pa.Schema | None = None
        self.metadata = self._metadata(None)
        self.metadata_path = ""

    def _empty_schema(self, spec_id: int) -> pa.Schema:
        data, _ = write_manifest(
            pa.RecordBatch.from_pylist([], schema=pa.schema([pa.field("status", pa.int32())])),
            format_version=self.version,
            schema_json=json.dumps(self.schema.to_json()),
            spec_json=json.dumps(self.specs[spec_id].fields_json()),
            spec_id=spec_id,
            path="empty.avro",
        )
        return read_manifest(data).schema

    def commit(
        self,
        manifests: list[tuple[int, int, list[dict[str, Any]]]],
        *,
        timestamp_ms: int | None = None,
        replace: bool = False,
        branch: str | None = "main",
    ) -> int:
        """Adds a snapshot with new manifests ``(spec_id, content, entries)`` (after the
        current ones unless ``replace``); returns its id."""
        self.count += 1
        self.seq += 1
        snapshot_id = 1000 + self.count
        rows = [] if replace else list(self.manifests)
        new_rows = []
        for k, (spec_id, content, entries) in enumerate(manifests):
            batch = pa.RecordBatch.from_pylist(entries, schema=self._empty_schema(spec_id))
            path = self.dir / f"m-{snapshot_id}-{k}.avro"
            data, row = write_manifest(
                batch,
                format_version=self.version,
                schema_json=json.dumps(self.schema.to_json()),
                spec_json=json.dumps(self.specs[spec_id].fields_json()),
                spec_id=spec_id,
                path=str(path),
                content=content,
                snapshot_id=snapshot_id,
            )
            path.write_bytes(data)
            self.list_schema = row.schema
            new_rows.extend(row.to_pylist())
        rows = new_rows + rows
        list_path = self.dir / f"snap-{snapshot_id}.avro"
        lst, next_id = write_manifest_list(
            pa.RecordBatch.from_pylist(rows, schema=self.list_schema),
            format_version=self.version,
            snapshot_id=snapshot_id,
            sequence_number=self.seq,
            parent_snapshot_id=self.snapshots[-1]["snapshot-id"] if self.snapshots else None,
            first_row_id=self.next_row_id if self.version >= 3 else None,
        )
        list_path.write_bytes(lst)
        from icefloe.manifest import read_manifest_list

        self.manifests = read_manifest_list(lst).to_pylist()
        ts = timestamp_ms if timestamp_ms is not None else 1_700_000_000_000 + self.count * 1000
        snap: dict[str, Any] = {
            "snapshot-id": snapshot_id,
            "timestamp-ms": ts,
            "manifest-list": str(list_path),
            "summary": {"operation": "append"},
            "schema-id": self.schema.schema_id,
        }
        if self.version >= 2:
            snap["sequence-number"] = self.seq
        if self.snapshots:
            snap["parent-snapshot-id"] = self.snapshots[-1]["snapshot-id"]
        if self.version >= 3:
            snap["first-row-id"] = self.next_row_id
            snap["added-rows"] = (next_id or self.next_row_id) - self.next_row_id
            self.next_row_id = next_id or self.next_row_id
        self.snapshots.append(snap)
        if branch is not None:
            self.refs[branch] = {"snapshot-id": snapshot_id, "type": "branch"}
            if branch == "main":
                self.log.append({"snapshot-id": snapshot_id, "timestamp-ms": ts})
        self.metadata = self._metadata(self.refs.get("main", {}).get("snapshot-id"))
        self.metadata_path = str(self.dir / f"v{self.count}.metadata.json")
        Path(self.metadata_path).write_text(json.dumps(self.metadata.to_json()))
        return snapshot_id

    def tag(self, name: str, snapshot_id: int) -> None:
        """Adds a tag."""
        self.refs[name] = {"snapshot-id": snapshot_id, "type": "tag"}
        self.metadata = self._metadata(self.refs.get("main", {}).get("snapshot-id"))

    def _metadata(self, current: int | None) -> TableMetadata:
        obj: dict[str, Any] = {
            "format-version": self.version,
            "table-uuid": str(uuid.UUID(int=7)),
            "location": str(self.dir),
            "last-updated-ms": 1_700_000_000_000 + self.count * 1000,
            "last-column-id": self.schema.highest_field_id,
            "schemas": [self.schema.to_json()],
            "current-schema-id": self.schema.schema_id,
            "partition-specs": [s.to_json() for s in self.specs.values()],
            "default-spec-id": max(self.specs),
            "last-partition-id": max(
                [f.field_id for s in self.specs.values() for f in s.fields] or [999]
            ),
            "sort-orders": [{"order-id": 0, "fields": []}],
            "default-sort-order-id": 0,
            "properties": self.properties,
            "current-snapshot-id": current if current is not None else -1,
            "snapshots": self.snapshots,
            "snapshot-log": self.log,
            "refs": self.refs,
            "metadata-log": [],
        }
        if self.version >= 2:
            obj["last-sequence-number"] = self.seq
        if self.version == 1:
            obj["schema"] = self.schema.to_json()
            obj["partition-spec"] = self.specs[max(self.specs)].fields_json()
        if self.version >= 3:
            obj["next-row-id"] = self.next_row_id
        return TableMetadata.from_json(obj)
