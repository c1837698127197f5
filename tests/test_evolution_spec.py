"""``update_spec()``, ``replace_sort_order()`` and ``upgrade_format_version()``: partition specs
compared with PyIceberg 0.12 doing the same steps on an identical table, plus the rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from icefloe.exceptions import ValidationError
from icefloe.schema import Schema
from icefloe.sorting import NullOrder, SortDirection
from icefloe.table import Table
from icefloe.transforms import parse_transform
from support.evolution import Catalogs, shared_catalogs

SCHEMA = {
    "type": "struct",
    "fields": [
        {"id": 1, "name": "id", "type": "long", "required": True},
        {"id": 2, "name": "data", "type": "string", "required": False},
        {"id": 3, "name": "ts", "type": "timestamp", "required": False},
        {"id": 4, "name": "cat", "type": "string", "required": False},
    ],
}

Step = list[tuple[Any, ...]]  # one commit

SCENARIOS: dict[str, list[Step]] = {
    "add": [[("add", "data", "identity", None), ("add", "id", "bucket[4]", None)]],
    "add_named": [[("add", "ts", "day", "day_of_ts"), ("add", "cat", "truncate[2]", None)]],
    "remove_then_readd": [
        [("add", "ts", "day", None), ("add", "cat", "identity", None)],
        [("remove", "ts_day")],
        [("add", "ts", "day", None)],
    ],
    "remove_and_add_other": [
        [("add", "ts", "day", None), ("add", "cat", "identity", None)],
        [("remove", "ts_day"), ("add", "ts", "hour", None)],
    ],
    "rename": [
        [("add", "ts", "month", None), ("add", "id", "bucket[8]", None)],
        [("rename", "ts_month", "m"), ("add", "data", "identity", None)],
    ],
    "readd_same_name": [
        [("add", "cat", "identity", "c")],
        [("remove", "c")],
        [("add", "data", "identity", "c")],
    ],
}


def _apply(update: Any, step: Step, theirs: bool) -> None:
    for op in step:
        if op[0] == "add":
            if theirs:
                from pyiceberg.transforms import parse_transform as their_transform

                update.add_field(op[1], their_transform(op[2]), op[3])
            else:
                update.add_field(op[1], op[2], op[3])
        elif op[0] == "remove":
            update.remove_field(op[1])
        else:
            update.rename_field(op[1], op[2])


def _create(c: Catalogs, name: str, version: int) -> Table:
    return c.ours.create_table(
        f"db.{name}", Schema.from_json(SCHEMA), properties={"format-version": str(version)}
    )


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_same_specs_as_pyiceberg(scenario: str, version: int, tmp_path: Path) -> None:
    c = shared_catalogs(tmp_path)
    ours = _create(c, "ours", version)
    _create(c, "theirs", version)
    for step in SCENARIOS[scenario]:
        with ours.update_spec() as u:
            _apply(u, step, theirs=False)
        ptable = c.theirs.load_table("db.theirs")
        with ptable.update_spec() as pu:
            _apply(pu, step, theirs=True)
    expected = c.ours.load_table("db.theirs").metadata
    got = c.ours.load_table("db.ours").metadata
    assert [s.to_json() for s in got.partition_specs] == [
        s.to_json() for s in expected.partition_specs
    ]
    assert got.default_spec_id == expected.default_spec_id
    assert got.last_partition_id == expected.last_partition_id
    # PyIceberg loads the evolved table
    assert c.theirs.load_table("db.ours").spec().spec_id == got.default_spec_id


def test_v2_reuses_ids_of_equivalent_fields(tmp_path: Path) -> None:
    t = _create(shared_catalogs(tmp_path), "t", 2)
    with t.update_spec() as u:
        u.add_field("ts", "day").add_field("id", "bucket[16]")
    first = {f.name: f.field_id for f in t.spec().fields}
    assert first == {"ts_day": 1000, "id_bucket_16": 1001}
    with t.update_spec() as u:
        u.remove_field("ts_day").remove_field("id_bucket_16")
    assert t.spec().fields == ()
    with t.update_spec() as u:
        u.add_field("id", "bucket[16]").add_field("ts", "hour")
    again = {f.name: f.field_id for f in t.spec().fields}
    assert again == {"id_bucket_16": 1001, "ts_hour": 1002}
    assert t.metadata.last_partition_id == 1002
    # a spec identical to an old one is reused, not added again
    with t.update_spec() as u:
        u.remove_field("ts_hour")
    with t.update_spec() as u:
        u.remove_field("id_bucket_16")
    assert t.spec().spec_id == 0 and len(t.metadata.partition_specs) == 4


def test_v1_removed_fields_become_void(tmp_path: Path) -> None:
    t = _create(shared_catalogs(tmp_path), "t", 1)
    with t.update_spec() as u:
        u.add_field("ts", "day").add_field("cat", "identity")
    with t.update_spec() as u:
        u.remove_field("ts_day")
    fields = t.spec().fields
    assert [(f.field_id, f.name, str(f.transform)) for f in fields] == [
        (1000, "ts_day", "void"),
        (1001, "cat", "identity"),
    ]
    with t.update_spec() as u:  # the void field's name is taken over: it is renamed
        u.add_field("ts", "day")
    assert [(f.field_id, f.name, str(f.transform)) for f in t.spec().fields] == [
        (1000, "ts_day_1000", "void"),
        (1001, "cat", "identity"),
        (1002, "ts_day", "day"),
    ]


@pytest.mark.parametrize(
    ("ops", "match"),
    [
        ([("add", "nope", "identity", None)], "cannot find partition source column 'nope'"),
        ([("add", "data", "day", None)], "not applicable to type string"),
        ([("add", "ts", "day", None), ("add", "ts", "month", None)], "redundant"),
        ([("add", "ts", "day", None), ("add", "cat", "identity", "ts_day")], "duplicate"),
        ([("add", "cat", "bucket[2]", "data")], "name of another column"),
        ([("remove", "nope")], "cannot find partition field 'nope'"),
        ([("add", "ts", "bogus", None)], "unknown transform"),
    ],
)
def test_invalid_spec_changes(ops: Step, match: str, tmp_path: Path) -> None:
    t = _create(shared_catalogs(tmp_path), "t", 2)
    before = t.metadata_location
    with pytest.raises(ValidationError, match=match), t.update_spec() as u:
        _apply(u, ops, theirs=False)
    assert t.refresh().metadata_location == before


def test_existing_field_conflicts(tmp_path: Path) -> None:
    t = _create(shared_catalogs(tmp_path), "t", 2)
    with t.update_spec() as u:
        u.add_field("ts", "day")
    with pytest.raises(ValidationError, match="conflicts with existing field 'ts_day'"):
        t.update_spec().add_field("ts", "month")
    with pytest.raises(ValidationError, match="cannot rename and delete"):
        t.update_spec().rename_field("ts_day", "d").remove_field("ts_day")
    with t.update_spec() as u:  # delete + add of the same field keeps it
        u.remove_field("ts_day").add_field("ts", "day", "d")
    assert [(f.field_id, f.name) for f in t.spec().fields] == [(1000, "d")]


def test_replace_sort_order(tmp_path: Path) -> None:
    t = _create(shared_catalogs(tmp_path), "t", 2)
    with t.replace_sort_order() as o:
        o.asc("id").desc("ts", "day", NullOrder.NULLS_FIRST)
    order = t.sort_order()
    assert order.order_id == 1
    assert [(f.source_id, str(f.transform), f.direction, f.null_order) for f in order.fields] == [
        (1, "identity", SortDirection.ASC, NullOrder.NULLS_FIRST),
        (3, "day", SortDirection.DESC, NullOrder.NULLS_FIRST),
    ]
    with t.replace_sort_order() as o:
        o.desc("data")
    assert t.sort_order().order_id == 2
    with t.replace_sort_order() as o:  # same as order 1 again (null order as the spec's text)
        o.asc("id").desc("ts", parse_transform("day"), "nulls-first")
    assert t.sort_order().order_id == 1 and len(t.metadata.sort_orders) == 3
    with pytest.raises(ValidationError, match="nulls-first"):
        t.replace_sort_order().asc("id", null_order="nulls-lst")
    with t.replace_sort_order():  # nothing: unsorted
        pass
    assert t.sort_order().order_id == 0
    with pytest.raises(ValidationError, match="unknown column 'x'"):
        t.replace_sort_order().asc("x")
    with pytest.raises(ValidationError, match="not applicable"):
        t.replace_sort_order().asc("data", "hour")


def test_sort_order_matches_pyiceberg(tmp_path: Path) -> None:
    c = shared_catalogs(tmp_path)
    t = _create(c, "t", 2)
    with t.replace_sort_order() as o:
        o.asc("cat", "truncate[3]").desc("id", null_order=NullOrder.NULLS_FIRST)
    theirs = c.theirs.load_table("db.t").sort_order()
    assert theirs.order_id == 1
    got = [
        (f.source_id, str(f.transform), f.direction.value, f.null_order.value)
        for f in theirs.fields
    ]
    assert got == [
        (4, "truncate[3]", "asc", "nulls-first"),
        (1, "identity", "desc", "nulls-first"),
    ]


@pytest.mark.parametrize("start", [1, 2])
def test_upgrade_format_version(start: int, tmp_path: Path) -> None:
    c = shared_catalogs(tmp_path)
    t = _create(c, "t", start)
    assert t.format_version == start and t.metadata.next_row_id is None
    if start == 1:
        t.upgrade_format_version(2)
        assert t.format_version == 2 and t.metadata.next_row_id is None
    t.upgrade_format_version(3)
    assert t.format_version == 3 and t.metadata.next_row_id == 0
    t.upgrade_format_version(3)  # no-op
    with pytest.raises(ValidationError, match="cannot downgrade"):
        t.upgrade_format_version(2)
    with pytest.raises(ValidationError, match="unsupported format version"):
        t.upgrade_format_version(4)
    loaded = c.ours.load_table("db.t")
    assert loaded.format_version == 3 and loaded.metadata.next_row_id == 0
    assert c.theirs.load_table("db.t").metadata.format_version == 3


@pytest.mark.parametrize("start", [1, 2])
def test_rows_written_before_an_upgrade_to_v3_get_row_ids(start: int, tmp_path: Path) -> None:
    """The first snapshot after an upgrade gives every data manifest a first row id, and the
    rows of the manifests written before it inherit ids from it as v3 manifests' rows do
    (the spec's row lineage for upgraded tables): unique, stable, kept by compaction."""
    import pyarrow as pa

    from icefloe.catalog.sql import SqlCatalog

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "w").as_uri())
    cat.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    t = cat.create_table("db.t", schema, properties={"format-version": str(start)})
    t.append(pa.table({"id": [1, 2, 3]}, schema=schema))
    t.append(pa.table({"id": [4, 5]}, schema=schema))
    t.upgrade_format_version(3)
    t.append(pa.table({"id": [6]}, schema=schema))

    def ids() -> dict[int, int]:
        rows = t.scan(selected_fields=("id", "_row_id")).to_arrow().to_pylist()
        return {r["id"]: r["_row_id"] for r in rows}

    first = ids()
    assert None not in first.values() and len(set(first.values())) == 6
    # each file's rows are numbered from its first row id, in order
    spans = {
        task.data_file.first_row_id: task.data_file.record_count for task in t.scan().plan_files()
    }
    assert None not in spans
    assert sorted(first.values()) == sorted(s + k for s, n in spans.items() for k in range(n))
    assert max(first.values()) < t.metadata.next_row_id
    t.rewrite_data_files()
    assert ids() == first


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_lineage_of_rows_from_before_an_upgrade_is_null_until_a_v3_snapshot(
    mode: str, tmp_path: Path
) -> None:
    """Before the first v3 snapshot a data file has no first row id, and readers give null
    for both ``_row_id`` and ``_last_updated_sequence_number`` (spec, as Iceberg Java reads
    them); the rows a first v3 delete copies are then last updated by that delete, and its
    upsert gives the rows it replaces new ids."""
    import pyarrow as pa

    from icefloe.catalog.sql import SqlCatalog

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "w").as_uri())
    cat.create_namespace("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    props = {"format-version": "2", "write.delete.mode": mode, "write.update.mode": mode}
    t = cat.create_table("db.t", schema, properties=props)
    t.append(pa.table({"id": [0, 1, 2, 3], "s": list("abcd")}, schema=schema))
    t.append(pa.table({"id": [4, 5], "s": list("ef")}, schema=schema))
    t.upgrade_format_version(3)
    lineage = ("id", "_row_id", "_last_updated_sequence_number")

    def rows() -> list[tuple[int, int | None, int | None]]:
        got = t.refresh().scan(selected_fields=lineage).to_arrow().sort_by("id")
        return list(zip(*(got[c].to_pylist() for c in lineage), strict=True))

    assert rows() == [(i, None, None) for i in range(6)]
    t.delete("id = 1")
    seq = t.refresh().current_snapshot().sequence_number
    after = rows()
    assert [r[0] for r in after] == [0, 2, 3, 4, 5]
    ids = [r[1] for r in after]
    assert None not in ids and len(set(ids)) == 5
    if mode == "copy-on-write":  # the copied rows were last written by the delete
        assert [r[2] for r in after] == [seq, seq, seq, 2, 2]
    else:
        assert [r[2] for r in after] == [1, 1, 1, 2, 2]
    t.upsert(pa.table({"id": [5], "s": ["z"]}, schema=schema), ["id"])
    final = dict((r[0], r[1:]) for r in rows())
    assert final[5][0] == ids[-1]  # the updated row keeps the id it was given
    assert final[5][1] == t.refresh().current_snapshot().sequence_number


def test_upgrade_in_transaction_with_v3_schema_change(tmp_path: Path) -> None:
    from icefloe.types import StringType

    t = _create(shared_catalogs(tmp_path), "t", 2)
    with t.transaction() as tx:
        tx.upgrade_format_version(3)
        with tx.update_schema() as u:  # sees v3: defaults are allowed now
            u.add_column("region", StringType(), required=True, initial_default="eu")
    assert t.format_version == 3 and t.schema().find_field("region").initial_default == "eu"


def test_columns_cannot_take_the_names_of_partition_fields(tmp_path: Path) -> None:
    """As Iceberg Java (which cannot load such metadata): no column may take the name of a
    partition field of any spec unless it is the field's source column, or the source column
    is gone (the field is historical)."""
    from icefloe.types import StringType

    t = _create(shared_catalogs(tmp_path), "t", 2)
    with t.update_spec() as u:
        u.add_field("ts", "day").add_field("cat", "identity")
    before = t.metadata_location
    with pytest.raises(ValidationError, match="name of partition field 'ts_day' of spec 1"):
        t.update_schema().add_column("ts_day", StringType()).commit()
    with pytest.raises(ValidationError, match="name of partition field 'ts_day'"):
        t.update_schema().rename_column("data", "ts_day").commit()
    t.update_schema().rename_column("cat", "category").commit()  # the source keeps its field
    with pytest.raises(ValidationError, match=r"column 'cat' \(id 5\) would have the name"):
        t.update_schema().add_column("cat", StringType()).commit()
    assert t.refresh().schema().find_field_id("ts_day") is None
    assert t.metadata_location != before and t.schema().find_field_id("cat") is None
    # once the source column is gone the field is historical and its name free
    with t.update_spec() as u:
        u.remove_field("ts_day")
    t.update_schema().delete_column("ts").commit()
    t.update_schema().add_column("ts_day", StringType()).commit()
    assert t.refresh().schema().find_field_id("ts_day") is not None


def test_a_new_table_refuses_a_partition_field_named_like_another_column(tmp_path: Path) -> None:
    """As Java's spec parser and ``update_spec``: a field may share a name only with its own
    source column."""
    from icefloe.partitioning import PartitionSpec

    c = shared_catalogs(tmp_path)
    schema = Schema.from_json(SCHEMA)

    def spec(name: str) -> PartitionSpec:
        return PartitionSpec.fields_from_json(
            [{"source-id": 1, "transform": "bucket[2]", "name": name}]
        )

    with pytest.raises(ValidationError, match="cannot name partition field 'data' \\(bucket"):
        c.ours.create_table("db.bad", schema, partition_spec=spec("data"))
    assert not c.ours.table_exists("db.bad")
    assert c.ours.create_table("db.own", schema, partition_spec=spec("id")).spec().fields[0].name
