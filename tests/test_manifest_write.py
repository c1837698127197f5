"""icefloe-written manifests and lists read back identically by icefloe, fastavro and PyIceberg."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import ManifestFile as PIManifestFile
from pyiceberg.manifest import read_manifest_list as pi_read_manifest_list

from icefloe.manifest import (
    read_manifest,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from support.manifest_tables import make_table, plain, read_bytes

SCHEMA = json.dumps(
    {
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "required": False, "type": "long"},
            {"id": 2, "name": "name", "required": False, "type": "string"},
            {"id": 3, "name": "ts", "required": False, "type": "timestamp"},
        ],
    }
)
SPEC = json.dumps(
    {
        "spec-id": 0,
        "fields": [
            {"name": "name", "transform": "identity", "source-id": 2, "field-id": 1000},
            {"name": "ts_day", "transform": "day", "source-id": 3, "field-id": 1001},
        ],
    }
)


def _rewrite(batch: pa.RecordBatch, version: int, path: Path, codec: str) -> tuple[bytes, Any]:
    md = batch.schema.metadata
    return write_manifest(
        batch,
        format_version=version,
        schema_json=md[b"schema"].decode(),
        spec_json=md[b"partition-spec"].decode(),
        spec_id=int(md[b"partition-spec-id"]),
        path=str(path),
        content=0,
        snapshot_id=None,
        codec=codec,
    )


@pytest.mark.parametrize("version", [1, 2])
# Peers need extra packages for zstd and snappy; those codecs are covered by test_manifest_props.
@pytest.mark.parametrize("codec", ["deflate", "uncompressed"])
def test_rewritten_pyiceberg_manifests_read_back_everywhere(
    tmp_path: Path, version: int, codec: str
) -> None:
    table = make_table(tmp_path, version, "multi")
    table.delete("id < 5")
    snap = table.current_snapshot()
    assert snap is not None and snap.manifest_list is not None
    lst = read_manifest_list(read_bytes(table, snap.manifest_list))
    rows = []
    originals = []
    for i, mf in enumerate(lst.to_pylist()):
        blob = read_bytes(table, mf["manifest_path"])
        # Decode without inheritance so re-encoding keeps the file's own values.
        batch = read_manifest(blob)
        out = tmp_path / f"ours-{i}.avro"
        data, row = _rewrite(batch, version, out, codec)
        out.write_bytes(data)
        # icefloe reads its own file identically.
        again = read_manifest(data)
        assert again.drop_columns([]).to_pylist() == batch.to_pylist()
        # fastavro reads it with the same values.
        recs = list(fastavro.reader(io.BytesIO(data)))
        assert len(recs) == batch.num_rows
        for r, b in zip(recs, batch.to_pylist(), strict=True):
            assert r["status"] == b["status"]
            assert r["data_file"]["file_path"] == b["file_path"]
            assert r["data_file"]["record_count"] == b["record_count"]
            cs = r["data_file"]["column_sizes"]
            assert {e["key"]: e["value"] for e in cs or []} == dict(b["column_sizes"] or [])
        # The summary row agrees with the original manifest_file.
        r = row.to_pylist()[0]
        for k in ("added", "existing", "deleted"):
            assert r[f"{k}_files_count"] == mf[f"{k}_files_count"]
            assert r[f"{k}_rows_count"] == mf[f"{k}_rows_count"]
        assert r["partitions"] == mf["partitions"]
        row = row.set_column(
            row.schema.get_field_index("added_snapshot_id"),
            "added_snapshot_id",
            pa.array([mf["added_snapshot_id"]], pa.int64()),
        )
        row = row.set_column(
            row.schema.get_field_index("sequence_number"),
            "sequence_number",
            pa.array([mf["sequence_number"]], pa.int64()),
        )
        rows.append(row)
        originals.append((mf, blob))
    # A manifest list of our manifests, read by PyIceberg.
    lst_bytes, _ = write_manifest_list(
        pa.Table.from_batches(rows).combine_chunks().to_batches()[0],
        format_version=version,
        snapshot_id=snap.snapshot_id,
        sequence_number=snap.sequence_number or 0,
        parent_snapshot_id=snap.parent_snapshot_id,
        codec=codec,
    )
    lst_path = tmp_path / "ours-list.avro"
    lst_path.write_bytes(lst_bytes)
    fio = PyArrowFileIO()
    pi_list = list(pi_read_manifest_list(fio.new_input(str(lst_path))))
    theirs = snap.manifests(table.io)
    assert len(pi_list) == len(theirs)
    for ours, orig in zip(pi_list, theirs, strict=True):
        assert isinstance(ours, PIManifestFile)
        for attr in (
            "partition_spec_id",
            "added_snapshot_id",
            "added_files_count",
            "existing_files_count",
            "deleted_files_count",
            "added_rows_count",
            "existing_rows_count",
            "deleted_rows_count",
            "partitions",
        ):
            assert getattr(ours, attr) == getattr(orig, attr), attr
        if version == 2:
            assert ours.sequence_number == orig.sequence_number
        got = ours.fetch_manifest_entry(fio, discard_deleted=False)
        want = orig.fetch_manifest_entry(table.io, discard_deleted=False)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert plain(g.status) == plain(w.status)
            assert g.snapshot_id == w.snapshot_id
            assert g.sequence_number == w.sequence_number
            assert g.file_sequence_number == w.file_sequence_number
            assert g.data_file == w.data_file
    # And icefloe reads the list back identically.
    back = read_manifest_list(lst_bytes).to_pylist()
    assert [b["manifest_path"] for b in back] == [r.to_pylist()[0]["manifest_path"] for r in rows]


def _v3_entries() -> pa.RecordBatch:
    batch = read_manifest(_empty_manifest(3))
    schema = batch.schema
    rows = [
        {
            "status": 1,
            "snapshot_id": None,
            "sequence_number": None,
            "file_sequence_number": None,
            "content": 0,
            "file_path": f"s3://b/d{i}.parquet",
            "file_format": "PARQUET",
            "partition": {"name": f"n{i % 2}", "ts_day": None},
            "record_count": 10 + i,
            "file_size_in_bytes": 1000,
            "column_sizes": [(1, 5)],
            "lower_bounds": [(1, b"\x01\x00\x00\x00\x00\x00\x00\x00")],
            "first_row_id": 7 if i == 1 else None,
        }
        for i in range(3)
    ] + [
        {
            "status": 1,
            "content": 1,
            "file_path": "s3://b/dv.puffin",
            "file_format": "PUFFIN",
            "partition": {"name": "n0", "ts_day": None},
            "record_count": 2,
            "file_size_in_bytes": 55,
            "referenced_data_file": "s3://b/d0.parquet",
            "content_offset": 4,
            "content_size_in_bytes": 40,
        }
    ]
    return pa.RecordBatch.from_pylist(rows, schema=schema)


def _empty_manifest(version: int) -> bytes:
    empty = pa.RecordBatch.from_pylist(
        [],
        schema=pa.schema([pa.field("status", pa.int32())]),
    )
    data, _ = write_manifest(
        empty,
        format_version=version,
        schema_json=SCHEMA,
        spec_json=SPEC,
        spec_id=0,
        path="m.avro",
    )
    return data


def test_v3_fields_survive_fastavro_and_inheritance() -> None:
    batch = _v3_entries()
    data, row = write_manifest(
        batch.slice(0, 3),
        format_version=3,
        schema_json=SCHEMA,
        spec_json=SPEC,
        spec_id=0,
        path="s3://b/m.avro",
        snapshot_id=42,
    )
    # the DV goes to a delete manifest (data manifests hold data files only)
    deletes, _ = write_manifest(
        batch.slice(3),
        format_version=3,
        schema_json=SCHEMA,
        spec_json=SPEC,
        spec_id=0,
        path="s3://b/d.avro",
        content=1,
        snapshot_id=42,
    )
    recs = list(fastavro.reader(io.BytesIO(data)))
    df = [r["data_file"] for r in recs]
    assert [d["first_row_id"] for d in df] == [None, 7, None]
    dv = next(iter(fastavro.reader(io.BytesIO(deletes))))["data_file"]
    assert dv["referenced_data_file"] == "s3://b/d0.parquet"
    assert (dv["content_offset"], dv["content_size_in_bytes"]) == (4, 40)
    assert dv["content"] == 1
    assert fastavro.reader(io.BytesIO(deletes)).metadata["content"] == "deletes"
    reader = fastavro.reader(io.BytesIO(data))
    assert reader.metadata["format-version"] == "3"
    assert reader.metadata["content"] == "data"
    assert reader.writer_schema["name"] == "manifest_entry"  # type: ignore[index]
    back = read_manifest(data, snapshot_id=42, sequence_number=9, first_row_id=100)
    got = back.to_pylist()
    # first_row_id: 100, then the file with its own 7, then 100 + 10 = 110.
    assert [g["first_row_id"] for g in got] == [100, 7, 110]
    assert all(g["snapshot_id"] == 42 and g["sequence_number"] == 9 for g in got)
    # delete files get no row ids, even when given a first row id
    dv_back = read_manifest(deletes, snapshot_id=42, sequence_number=9, first_row_id=100)
    assert dv_back.to_pylist()[0]["first_row_id"] is None
    assert dv_back.to_pylist()[0]["content_size_in_bytes"] == 40
    r = row.to_pylist()[0]
    assert r["added_files_count"] == 3 and r["added_rows_count"] == 10 + 11 + 12
    assert r["partitions"][0] == {
        "contains_null": False,
        "contains_nan": False,
        "lower_bound": b"n0",
        "upper_bound": b"n1",
    }
    assert r["partitions"][1]["contains_null"] is True
    # A v3 list assigns first_row_id to the data manifest.
    lst, next_id = write_manifest_list(
        row, format_version=3, snapshot_id=42, sequence_number=9, first_row_id=1000
    )
    assert next_id == 1000 + 33
    rec = next(iter(fastavro.reader(io.BytesIO(lst))))
    assert rec["first_row_id"] == 1000 and rec["sequence_number"] == 9
    assert fastavro.reader(io.BytesIO(lst)).metadata["first-row-id"] == "1000"
    assert read_manifest_list(lst).to_pylist()[0]["first_row_id"] == 1000


def test_missing_required_column_is_a_validation_error() -> None:
    from icefloe.exceptions import ValidationError

    batch = _v3_entries().drop_columns(["file_path"])
    with pytest.raises(ValidationError, match="file_path"):
        write_manifest(
            batch, format_version=2, schema_json=SCHEMA, spec_json=SPEC, spec_id=0, path="m"
        )


def test_partition_fields_of_one_named_type_are_valid_avro(tmp_path: Path, duckdb_con: Any) -> None:
    """Two partition fields of one decimal or fixed type (identity and truncate of one column,
    identities of two columns): Avro allows a named type one definition, so the second is
    named apart; fastavro parses the manifests and PyIceberg and DuckDB read the table."""
    import decimal

    from support.write_util import catalog, duckdb_checksum, pyiceberg_read

    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("dec", pa.decimal128(5, 2)),
            ("u", pa.binary(16)),
            ("v", pa.binary(16)),
        ]
    )
    t = catalog(tmp_path).create_table("ns.named", schema, format_version=2)
    with t.update_spec() as s:
        s.add_field("dec", "identity")
        s.add_field("dec", "truncate[100]", "dec_trunc")
        s.add_field("u", "identity")
        s.add_field("v", "identity")
    rows = pa.table(
        {
            "id": [1, 2],
            "dec": pa.array([decimal.Decimal("1.23")] * 2, pa.decimal128(5, 2)),
            "u": pa.array([b"\x01" * 16] * 2, pa.binary(16)),
            "v": pa.array([b"\x02" * 16] * 2, pa.binary(16)),
        },
        schema=schema,
    )
    t.append(rows)
    t.delete("id = 2")
    manifests = list((tmp_path).rglob("*-m*.avro"))
    assert manifests
    for path in manifests:
        with open(path, "rb") as f:
            reader = fastavro.reader(f)
            fields = reader.writer_schema["fields"]  # type: ignore[index]
            list(reader)
        part = next(x for x in fields if x["name"] == "data_file")["type"]["fields"]
        names = [
            t["name"]
            for f in next(x for x in part if x["name"] == "partition")["type"]["fields"]
            for t in f["type"]
            if isinstance(t, dict)
        ]
        assert len(names) == len(set(names)) == 4, names
    assert pyiceberg_read(t).num_rows == 1
    assert duckdb_checksum(duckdb_con, t) == (1, 1)
