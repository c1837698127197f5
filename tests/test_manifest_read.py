"""Manifest lists and manifests written by Iceberg Java and PyIceberg 0.12 decode correctly."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path
from typing import Any

import fastavro
import pytest

from icefloe.exceptions import CorruptFileError
from icefloe.manifest import (
    entry_views,
    manifest_files,
    read_manifest,
    read_manifest_list,
    read_manifests,
)
from support.manifest_tables import make_table, plain, read_bytes
from support.testdata import TESTDATA

JAVA = TESTDATA / "iceberg-rust" / "manifest_lists"

# Java's writer names 504-506 differently from the spec: the reader resolves by field id.
JAVA_NAMES = {
    "added_data_files_count": "added_files_count",
    "existing_data_files_count": "existing_files_count",
    "deleted_data_files_count": "deleted_files_count",
}


@pytest.mark.parametrize("name", ["manifest-list-v2-1.avro", "manifest-list-v2-2.avro"])
def test_java_manifest_lists_match_fastavro(name: str) -> None:
    data = (JAVA / name).read_bytes()
    batch = read_manifest_list(data, name=name)
    with (JAVA / name).open("rb") as f:
        expected = [{JAVA_NAMES.get(k, k): v for k, v in r.items()} for r in fastavro.reader(f)]
    got = batch.to_pylist()
    assert len(got) == len(expected) == 1
    for g, e in zip(got, expected, strict=True):
        for k, v in e.items():
            assert g[k] == v, k
        assert g["first_row_id"] is None and g["key_metadata"] is None
    md = batch.schema.metadata
    assert md[b"format-version"] == b"2" and md[b"parent-snapshot-id"] == b"null"
    # The views give the same values.
    mf = manifest_files(batch)[0]
    assert mf.added_files_count == 1 and mf.manifest_path == got[0]["manifest_path"]
    assert mf.to_dict() == got[0]


def _day(v: Any) -> Any:
    return dt.date(1970, 1, 1) + dt.timedelta(days=v) if isinstance(v, int) else v


def _entry_values(e: Any, partition_names: list[str]) -> dict[str, Any]:
    df = e.data_file
    return {
        "status": plain(e.status),
        "snapshot_id": e.snapshot_id,
        "sequence_number": e.sequence_number,
        "file_sequence_number": e.file_sequence_number,
        "content": plain(df.content),
        "file_path": df.file_path,
        "file_format": plain(df.file_format),
        "partition": {n: df.partition[i] for i, n in enumerate(partition_names)},
        "record_count": df.record_count,
        "file_size_in_bytes": df.file_size_in_bytes,
        "column_sizes": df.column_sizes,
        "value_counts": df.value_counts,
        "null_value_counts": df.null_value_counts,
        "nan_value_counts": df.nan_value_counts,
        "lower_bounds": df.lower_bounds,
        "upper_bounds": df.upper_bounds,
        "key_metadata": df.key_metadata,
        "split_offsets": df.split_offsets,
        "equality_ids": df.equality_ids or None,
        "sort_order_id": df.sort_order_id,
    }


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("spec", ["unpartitioned", "identity", "multi"])
def test_pyiceberg_tables_decode_like_pyiceberg(tmp_path: Path, version: int, spec: str) -> None:
    table = make_table(tmp_path, version, spec)
    table.delete("id < 5")  # rewrites a file: DELETED and EXISTING entries
    snapshot = table.current_snapshot()
    assert snapshot is not None and snapshot.manifest_list is not None
    lst = read_manifest_list(read_bytes(table, snapshot.manifest_list))
    theirs = snapshot.manifests(table.io)
    ours = manifest_files(lst)
    assert len(ours) == len(theirs) >= 2
    for o, t in zip(ours, theirs, strict=True):
        assert o.manifest_path == t.manifest_path
        assert o.manifest_length == t.manifest_length
        assert o.partition_spec_id == t.partition_spec_id
        assert o.content == plain(t.content)
        assert o.sequence_number == t.sequence_number
        assert o.min_sequence_number == t.min_sequence_number
        assert o.added_snapshot_id == t.added_snapshot_id
        for k in ("added", "existing", "deleted"):
            assert getattr(o, f"{k}_files_count") == getattr(t, f"{k}_files_count")
            assert getattr(o, f"{k}_rows_count") == getattr(t, f"{k}_rows_count")
        assert o.partitions == [
            {
                "contains_null": s.contains_null,
                "contains_nan": s.contains_nan,
                "lower_bound": s.lower_bound,
                "upper_bound": s.upper_bound,
            }
            for s in (t.partitions or [])
        ]
    pnames = [f.name for f in table.spec().fields]
    blobs = [read_bytes(table, m.manifest_path) for m in ours]
    batches = read_manifests(blobs, ours)
    statuses = set()
    for m, t, blob, batch in zip(ours, theirs, blobs, batches, strict=True):
        single = read_manifest(blob, manifest=m)
        assert single.equals(batch)
        assert batch.schema.field("partition").type.num_fields == len(pnames)
        assert batch.schema.metadata[b"format-version"] == str(version).encode()
        expected = [_entry_values(e, pnames) for e in t.fetch_manifest_entry(table.io, False)]
        got = [d.to_dict() for d in entry_views(batch)]
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            statuses.add(g["status"])
            e["partition"] = {k: _day(v) if k == "ts_day" else v for k, v in e["partition"].items()}
            for k, v in e.items():
                assert g[k] == v, (k, g[k], v)
            assert g["first_row_id"] is None and g["referenced_data_file"] is None
    # Merged manifests carry EXISTING entries; the delete leaves DELETED ones.
    assert 2 in statuses and len(statuses) >= 2
    if spec == "unpartitioned":
        assert statuses == {0, 1, 2}


def _without(data: bytes, field: str, inside: str | None = None) -> bytes:
    """``data`` (an Avro file) written again by fastavro with ``field`` (of the record field
    ``inside``, else of the top record) left out of its schema, as a writer lacking it would."""
    reader = fastavro.reader(io.BytesIO(data))
    schema, records = reader.writer_schema, list(reader)
    meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
    record = schema
    if inside is not None:
        record = next(f for f in schema["fields"] if f["name"] == inside)["type"]
    record["fields"] = [f for f in record["fields"] if f["name"] != field]
    out = io.BytesIO()
    fastavro.writer(out, schema, records, codec="deflate", metadata=meta)
    return out.getvalue()


@pytest.mark.parametrize(
    "field", ["file_path", "file_format", "partition", "record_count", "file_size_in_bytes"]
)
def test_a_manifest_lacking_a_required_field_is_corrupt(tmp_path: Path, field: str) -> None:
    """A writer's schema without a field the spec requires decoded as nulls: a missing size
    failed planning with a bare ValueError, a missing partition was read as a null partition
    and filters pruned the file away. PyIceberg refuses such files too."""
    table = make_table(tmp_path, 2, "identity", appends=1)
    snapshot = table.current_snapshot()
    assert snapshot is not None
    manifest = snapshot.manifests(table.io)[0]
    data = read_bytes(table, manifest.manifest_path)
    rows = read_manifest(data).num_rows
    assert read_manifest(_without(data, "split_offsets", "data_file")).num_rows == rows
    with pytest.raises(CorruptFileError, match=f"without {field} "):
        read_manifest(_without(data, field, "data_file"))


@pytest.mark.parametrize(
    "field", ["manifest_path", "manifest_length", "partition_spec_id", "added_snapshot_id"]
)
def test_a_manifest_list_lacking_a_required_field_is_corrupt(tmp_path: Path, field: str) -> None:
    """As for manifests: a missing spec id failed planning with a bare ValueError."""
    table = make_table(tmp_path, 2, "identity", appends=1)
    snapshot = table.current_snapshot()
    assert snapshot is not None
    data = read_bytes(table, snapshot.manifest_list)
    rows = read_manifest_list(data).num_rows
    assert read_manifest_list(_without(data, "partitions")).num_rows == rows
    with pytest.raises(CorruptFileError, match=f"without {field} "):
        read_manifest_list(_without(data, field))
