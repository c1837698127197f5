"""Partition statistics files: rows checked against an oracle written here as a plain loop over
``inspect.entries()`` following Iceberg Java's rules (full and incremental), through appends,
deletion vectors, v2 position and equality delete files, a partition delete, spec evolution and
compaction; the file's Parquet schema (field ids, v2/v3 nullability), commits and reuse, the
fallback from an unreadable file, and ``inspect.partitions()`` served from the file."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import support.write_util as w
from icefloe.exceptions import NoSuchSnapshotError, ValidationError
from icefloe.table.partition_statistics import partition_statistics_rows

COUNTS = (
    "data_record_count",
    "data_file_count",
    "total_data_file_size_in_bytes",
    "position_delete_record_count",
    "position_delete_file_count",
    "equality_delete_record_count",
    "equality_delete_file_count",
    "dv_count",
)


def _key(partition: dict[str, Any]) -> tuple[tuple[bool, Any], ...]:
    return tuple((v is not None, v) for v in partition.values())


def _oracle(
    t: Any, snapshot_id: int, entries: list[dict[str, Any]], sign_of: Any
) -> dict[Any, Any]:
    """Java's per-entry rules over ``entries``; ``sign_of(status)`` is +1, -1 or 0, None when
    the entry does not touch the last update."""
    ts = {s.snapshot_id: s.timestamp_ms for s in t.metadata.snapshots}
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for e in entries:
        f = e["data_file"]
        key = (f["spec_id"], _key(f["partition"]))
        row = out.setdefault(
            key,
            {
                "partition": f["partition"],
                "spec_id": f["spec_id"],
                **dict.fromkeys(COUNTS, 0),
                "last_updated_at": None,
                "last_updated_snapshot_id": None,
            },
        )
        sign, touches = sign_of(e["status"])
        puffin = f["file_format"].upper() == "PUFFIN"
        if f["content"] == 0:
            row["data_record_count"] += sign * f["record_count"]
            row["data_file_count"] += sign
            row["total_data_file_size_in_bytes"] += sign * f["file_size_in_bytes"]
        elif f["content"] == 1:
            row["position_delete_record_count"] += sign * f["record_count"]
            row["dv_count" if puffin else "position_delete_file_count"] += sign
        else:
            row["equality_delete_record_count"] += sign * f["record_count"]
            row["equality_delete_file_count"] += sign
        at = ts.get(e["snapshot_id"])
        if (
            touches
            and at is not None
            and (row["last_updated_at"] is None or row["last_updated_at"] < at)
        ):
            row["last_updated_at"] = at
            row["last_updated_snapshot_id"] = e["snapshot_id"]
    return out


def full_oracle(t: Any, snapshot_id: int) -> dict[Any, Any]:
    entries = t.inspect.entries(snapshot_id).to_pylist()
    return _oracle(t, snapshot_id, entries, lambda s: (0 if s == 2 else 1, True))


def incremental_oracle(
    t: Any, base: dict[Any, Any], base_id: int, snapshot_id: int
) -> dict[Any, Any]:
    """``base`` rows plus what each later ancestor added (+) and deleted (-): the ADDED and
    DELETED entries a snapshot writes carry its id."""
    entries = []
    for snap in t.metadata.ancestors_of(snapshot_id):
        if snap.snapshot_id == base_id:
            break
        for e in t.inspect.entries(snap.snapshot_id).to_pylist():
            if e["snapshot_id"] == snap.snapshot_id and e["status"] != 0:
                entries.append(e)
    diff = _oracle(t, snapshot_id, entries, lambda s: ({1: 1, 2: -1}.get(s, 0), s != 0))
    names = [f.name for f in t.inspect.partitions(use_statistics=False).schema.field(0).type]
    out = {}
    for v in base.values():  # the base file read with today's partition type
        part = {n: v["partition"].get(n) for n in names}
        out[(v["spec_id"], _key(part))] = dict(v, partition=part)
    for k, d in diff.items():
        if k not in out:
            out[k] = d
            continue
        row = out[k]
        for c in COUNTS:
            row[c] += d[c]
        if d["last_updated_at"] is not None and (
            row["last_updated_at"] is None or row["last_updated_at"] < d["last_updated_at"]
        ):
            row["last_updated_at"] = d["last_updated_at"]
            row["last_updated_snapshot_id"] = d["last_updated_snapshot_id"]
    return out


def _by_key(rows: list[dict[str, Any]]) -> dict[Any, Any]:
    return {(r["spec_id"], _key(r["partition"])): r for r in rows}


def _check(got: pa.Table, want: dict[Any, Any], v3: bool = True) -> None:
    rows = got.to_pylist()
    keys = [(r["spec_id"], _key(r["partition"])) for r in rows]
    assert keys == sorted(keys, key=lambda k: (k[1], k[0])), "rows ordered by partition"
    assert set(_by_key(rows)) == set(want)
    for k, r in _by_key(rows).items():
        exp = dict(want[k], total_record_count=None)
        if not v3:
            exp.pop("dv_count")
        assert {c: r[c] for c in exp if c != "partition"} == {
            c: v for c, v in exp.items() if c != "partition"
        }, k


@pytest.fixture
def table(tmp_path: Path) -> Any:
    cat = w.catalog(tmp_path)
    return cat.create_table(
        "ns.t",
        w.SCHEMA,
        partition_spec=w.SPEC,
        properties={"format-version": "3", "write.delete.mode": "merge-on-read"},
    )


def test_rows_follow_java_rules_full_and_incremental(table: Any) -> None:
    t = table
    t.append(w.rows(0, 40))
    t.append(w.rows(40, 40))
    first = t.current_snapshot().snapshot_id
    base = full_oracle(t, first)
    stats = t.compute_partition_statistics()
    assert stats is not None and stats.snapshot_id == first
    _check(t.partition_statistics(), base)
    # the same snapshot again: the registered file is returned, nothing written
    assert t.compute_partition_statistics() == stats

    t.delete("id < 5 or id in (41, 77)")  # deletion vectors
    t.delete("ts < '2024-01-02T00:00:00'")  # a day's files entirely (24 rows)
    mid = t.current_snapshot().snapshot_id
    want_mid = full_oracle(t, mid)
    assert any(r["dv_count"] for r in want_mid.values())
    _check(partition_statistics_rows(t.io, t.metadata, mid, incremental=False)[0], want_mid)
    t.update_spec().add_field("s", "truncate[2]", "s_trunc").commit()
    t.append(w.rows(80, 10))  # the new spec
    t.rewrite_data_files(min_input_files=2)
    now = t.current_snapshot().snapshot_id

    rows, existing = partition_statistics_rows(t.io, t.metadata, now, incremental=False)
    assert existing is None
    want_full = full_oracle(t, now)
    _check(rows, want_full)
    assert len({r["spec_id"] for r in want_full.values()}) == 2

    inc = t.compute_partition_statistics()
    assert inc is not None and inc.snapshot_id == now
    want_inc = incremental_oracle(t, base, first, now)
    _check(t.partition_statistics(), want_inc)
    # the emptied day keeps rows of zeros
    zeros = [
        r
        for r in want_inc.values()
        if str(r["partition"]["ts_day"]) == "2024-01-01" and r["data_file_count"] == 0
    ]
    assert zeros
    # live counts agree with the data files of the snapshot
    files = t.inspect.data_files().to_pylist()
    live: dict[Any, int] = defaultdict(int)
    for f in files:
        live[(f["spec_id"], _key(f["partition"]))] += f["record_count"]
    got = {
        k: r["data_record_count"]
        for k, r in _by_key(t.partition_statistics().to_pylist()).items()
        if r["data_record_count"]
    }
    assert got == dict(live)


def test_v2_position_and_equality_delete_files(tmp_path: Path) -> None:
    cat = w.catalog(tmp_path)
    t = cat.create_table(
        "ns.t",
        w.SCHEMA,
        partition_spec=w.SPEC,
        properties={
            "format-version": "2",
            "write.delete.mode": "merge-on-read",
            "write.upsert.mode": "equality",
        },
    )
    t.append(w.rows(0, 30))
    t.delete("id in (1, 2, 3, 25)")  # position delete files
    t.upsert(w.rows(10, 5), ["id"])  # equality delete files
    snap = t.current_snapshot().snapshot_id
    stats = t.compute_partition_statistics()
    assert stats is not None
    want = full_oracle(t, snap)
    assert any(r["position_delete_file_count"] for r in want.values())
    assert any(r["equality_delete_file_count"] for r in want.values())
    _check(t.partition_statistics(), want, v3=False)
    path = stats.statistics_path.removeprefix("file://")
    schema = pq.read_schema(path)
    assert "dv_count" not in schema.names
    # v2: the delete counts are optional
    assert schema.field("position_delete_record_count").nullable


def test_file_schema_and_name(table: Any) -> None:
    table.append(w.rows(0, 10))
    stats = table.compute_partition_statistics()
    path = stats.statistics_path.removeprefix("file://")
    name = path.rsplit("/", 1)[1]
    assert name.startswith(f"partition-stats-{stats.snapshot_id}-") and name.endswith(".parquet")
    assert stats.file_size_in_bytes == Path(path).stat().st_size
    pf = pq.ParquetFile(path)
    schema = pf.schema_arrow
    ids = [int(f.metadata[b"PARQUET:field_id"]) for f in schema]
    assert ids == list(range(1, 14))
    assert schema.names == [
        "partition",
        "spec_id",
        *COUNTS[:7],
        "total_record_count",
        "last_updated_at",
        "last_updated_snapshot_id",
        "dv_count",
    ]
    required = {f.name for f in schema if not f.nullable}
    assert required == {"partition", "spec_id", *COUNTS}
    part = schema.field("partition").type
    assert [(f.name, int(f.metadata[b"PARQUET:field_id"]), f.nullable) for f in part] == [
        ("ts_day", 1000, True),
        ("id_bucket", 1001, True),
    ]
    assert b"iceberg.schema" in pf.metadata.metadata
    assert [str(t) for t in (schema.field("data_file_count").type, part[0].type)] == [
        "int32",
        "date32[day]",
    ]


def test_refusals_and_empty_snapshot(tmp_path: Path, table: Any) -> None:
    with pytest.raises(ValidationError, match="no snapshot"):
        table.compute_partition_statistics()
    table.append(w.rows(0, 5))
    with pytest.raises(NoSuchSnapshotError):
        table.compute_partition_statistics(snapshot_id=12345)
    cat = w.catalog(tmp_path / "other")
    plain = cat.create_table("ns.u", w.SCHEMA)
    plain.append(w.rows(0, 5))
    with pytest.raises(ValidationError, match="partitioned"):
        plain.compute_partition_statistics()
    # everything deleted: the partitions keep rows of zeros
    table.delete("ts < '2024-01-02T00:00:00'")
    rows = table.partition_statistics() if table.compute_partition_statistics() else None
    assert rows is not None and rows.num_rows
    assert set(rows.column("data_file_count").to_pylist()) == {0}


def test_unreadable_file_falls_back_to_full_compute(table: Any) -> None:
    table.append(w.rows(0, 30))
    first = table.compute_partition_statistics()
    Path(first.statistics_path.removeprefix("file://")).write_bytes(b"not parquet")
    table.append(w.rows(30, 10))
    again = table.compute_partition_statistics()
    _check(table.partition_statistics(), full_oracle(table, again.snapshot_id))


@pytest.mark.parametrize(
    "column", ["spec_id", "data_record_count", "data_file_count", "position_delete_record_count"]
)
def test_a_null_in_a_required_column_is_a_corrupt_file(table: Any, column: str) -> None:
    """A file holding a null where the spec requires a value (as another writer might leave
    one) is refused as corrupt instead of read as a null in a non-null column: the manifests
    answer ``inspect.partitions()``, and the next computation is a full one with the true
    counts, never one treating the null as 0."""
    from icefloe.exceptions import CorruptFileError
    from icefloe.metadata import PartitionStatisticsFile, SetPartitionStatistics

    table.append(w.rows(0, 30))
    first = table.compute_partition_statistics()
    good = pq.read_table(first.statistics_path.removeprefix("file://"))
    good = good.replace_schema_metadata(None)  # field ids stay, icefloe's footer checksum goes
    i = good.schema.get_field_index(column)
    values = good.column(i).to_pylist()
    assert good.num_rows > 1
    damaged = good.set_column(
        i,
        good.schema.field(i).with_nullable(True),
        pa.array([None, *values[1:]], good.schema.field(i).type),
    )
    path = Path(first.statistics_path.removeprefix("file://")).with_name("foreign.parquet")
    pq.write_table(damaged, path)
    with table.transaction() as tx:
        tx.remove_partition_statistics(first.snapshot_id)
        tx.apply(
            [
                SetPartitionStatistics(
                    PartitionStatisticsFile(first.snapshot_id, path.as_uri(), path.stat().st_size)
                )
            ]
        )
    with pytest.raises(CorruptFileError, match=column):
        table.partition_statistics()
    assert table.inspect.partitions() == table.inspect.partitions(use_statistics=False)
    table.append(w.rows(30, 15))
    again = table.compute_partition_statistics()
    _check(table.partition_statistics(), full_oracle(table, again.snapshot_id))


def test_transaction_form_and_removal(table: Any) -> None:
    table.append(w.rows(0, 10))
    with table.transaction() as tx:
        stats = tx.compute_partition_statistics()
    assert [s.statistics_path for s in table.metadata.partition_statistics] == [
        stats.statistics_path
    ]
    with table.transaction() as tx:
        tx.remove_partition_statistics(stats.snapshot_id)
    assert table.metadata.partition_statistics == ()
    assert table.partition_statistics() is None


def test_inspect_partitions_served_from_the_file(table: Any) -> None:
    table.append(w.rows(0, 40))
    table.append(w.rows(40, 20))
    from_manifests = table.inspect.partitions()
    table.compute_partition_statistics()
    # the manifests are gone from disk: only the statistics file can answer
    for m in table.inspect.manifests().to_pylist():
        Path(m["path"].removeprefix("file://")).unlink()
    from_stats = table.inspect.partitions()
    key = ["spec_id", "partition"]
    assert sorted(from_stats.to_pylist(), key=lambda r: str([r[k] for k in key])) == sorted(
        from_manifests.to_pylist(), key=lambda r: str([r[k] for k in key])
    )


def test_inspect_partitions_from_the_file_count_deletes_as_the_manifests_do(table: Any) -> None:
    table.append(w.rows(0, 60))
    table.delete("id in (1, 2, 30, 31, 59)")  # deletion vectors
    table.delete("ts < '2024-01-02T00:00:00'")  # a day's files removed: no rows for it
    from_manifests = table.inspect.partitions(use_statistics=False)
    assert sum(from_manifests.column("position_delete_file_count").to_pylist()) > 0
    table.compute_partition_statistics()
    from_stats = table.inspect.partitions()
    assert from_stats.schema == from_manifests.schema
    counts = [c for c in from_stats.column_names if c.endswith("_count") or "size" in c]

    def by_key(t: pa.Table) -> dict[str, list[Any]]:
        return {str((r["spec_id"], r["partition"])): [r[c] for c in counts] for r in t.to_pylist()}

    assert by_key(from_stats) == by_key(from_manifests)


@pytest.mark.parametrize("version", [2, 3])
def test_partitions_of_uuid_and_geometry_values(tmp_path: Path, version: int) -> None:
    """Partition values of extension types (uuid; a void transform of a geometry column) are
    grouped by their storage: counts per partition from the manifests and from a statistics
    file, the values typed as the partition type says."""
    import uuid

    from icefloe.schema import Schema
    from icefloe.types import GeometryType, LongType, NestedField, UUIDType

    fields = [NestedField(1, "id", LongType(), required=True), NestedField(2, "u", UUIDType())]
    if version == 3:
        fields.append(NestedField(3, "g", GeometryType()))
    t = w.catalog(tmp_path).create_table("ns.t", Schema(*fields), format_version=version)
    with t.update_spec() as s:
        s.add_field("u", "identity")
        if version == 3:
            s.add_field("g", "void")
    one = uuid.UUID(int=1).bytes
    data = {"id": pa.array([1, 2, 3], pa.int64()), "u": pa.array([one, one, None], pa.binary(16))}
    if version == 3:
        point = bytes.fromhex("0101000000000000000000f03f0000000000000040")  # POINT (1 2)
        data["g"] = pa.array([point, None, point], pa.binary())
    t.append(pa.table(data))
    want = {uuid.UUID(int=1): 2, None: 1}

    def counts(rows: pa.Table) -> dict[Any, int]:
        return {r["partition"]["u"]: r["record_count"] for r in rows.to_pylist()}

    assert counts(t.inspect.partitions(use_statistics=False)) == want
    stats = t.compute_partition_statistics()
    assert stats is not None
    assert counts(t.inspect.partitions()) == want
    rows = pq.read_table(stats.statistics_path.removeprefix("file://")).to_pylist()
    assert sorted(r["data_record_count"] for r in rows) == [1, 2]


@pytest.mark.parametrize("arrow_type", [pa.float64(), pa.float32()])
def test_floating_point_partitions_are_ordered_as_java_orders_them(
    tmp_path: Path, arrow_type: pa.DataType
) -> None:
    """Rows of float/double partitions follow Java's ``Double.compare`` with nulls first (the
    order ``PartitionStatsHandler`` writes): ``-0.0`` before ``0.0``, NaN after infinity;
    whatever order the partitions were written in."""
    import math
    import random

    from icefloe.schema import Schema
    from icefloe.types import DoubleType, FloatType, LongType, NestedField

    ftype = DoubleType() if pa.types.is_float64(arrow_type) else FloatType()
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "x", ftype))
    t = w.catalog(tmp_path).create_table("ns.t", schema, format_version=2)
    with t.update_spec() as s:
        s.add_field("x", "identity")
    inf, nan = math.inf, math.nan
    values = [None, -inf, -2.5, -0.0, 0.0, 1.0, inf, nan]
    shuffled = values[:]
    random.Random(7).shuffle(shuffled)
    for batch in (shuffled[:4], shuffled[4:]):  # two snapshots, so rows come in two updates
        n = len(batch)
        t.append(pa.table({"id": pa.array(range(n), pa.int64()), "x": pa.array(batch, arrow_type)}))
    stats = t.compute_partition_statistics()
    assert stats is not None
    rows = pq.read_table(stats.statistics_path.removeprefix("file://")).to_pylist()
    got = [r["partition"]["x"] for r in rows]
    assert len(got) == len(values)
    assert got[0] is None
    signed = [(v, math.copysign(1, v)) for v in got[1:-1]]
    assert signed == [(-inf, -1), (-2.5, -1), (0.0, -1), (0.0, 1), (1.0, 1), (inf, 1)]
    assert math.isnan(got[-1])


@pytest.mark.parametrize("kind", ["uuid", "fixed"])
def test_uuid_partitions_are_ordered_as_java_orders_them(tmp_path: Path, kind: str) -> None:
    """Rows of uuid partitions follow Java's ``UUID.compareTo`` (most, then least significant
    8 bytes compared as signed longs), with nulls first: ``80000000-…`` and ``ffffffff-…``
    come before ``00000000-…``; ``fixed[16]`` values stay in unsigned byte order."""
    import random
    import uuid

    from icefloe.schema import Schema
    from icefloe.types import FixedType, LongType, NestedField, UUIDType

    ptype = UUIDType() if kind == "uuid" else FixedType(16)
    schema = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "u", ptype))
    t = w.catalog(tmp_path).create_table("ns.t", schema, format_version=2)
    with t.update_spec() as s:
        s.add_field("u", "identity")
    halves = [0, 1, 0x7FFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0000, 0xFFFF_FFFF_FFFF_FFFF]
    values = [(hi << 64 | lo).to_bytes(16, "big") for hi in halves for lo in halves]
    shuffled: list[bytes | None] = [*values, None]
    random.Random(3).shuffle(shuffled)
    for batch in (shuffled[:13], shuffled[13:]):  # two snapshots, so rows come in two updates
        n = len(batch)
        t.append(
            pa.table({"id": pa.array(range(n), pa.int64()), "u": pa.array(batch, pa.binary(16))})
        )
    stats = t.compute_partition_statistics()
    assert stats is not None
    rows = pq.read_table(stats.statistics_path.removeprefix("file://")).to_pylist()
    got = [getattr(r["partition"]["u"], "bytes", r["partition"]["u"]) for r in rows]

    def java_uuid(b: bytes) -> tuple[int, int]:  # java.util.UUID.compareTo
        most, least = b[:8], b[8:]
        return int.from_bytes(most, "big", signed=True), int.from_bytes(least, "big", signed=True)

    want = sorted(values, key=java_uuid if kind == "uuid" else None)
    assert got == [None, *want]
    first = "80000000-0000-0000-8000-000000000000" if kind == "uuid" else str(uuid.UUID(int=0))
    assert str(uuid.UUID(bytes=got[1])) == first
