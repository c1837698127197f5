"""``table.update_schema()``: every change compared with PyIceberg 0.12 doing the same on an
identical table (same resulting schema JSON and last-column-id), plus the rules and errors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.exceptions import CommitConflictError, ValidationError
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.types import (
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestampNanoType,
    TimestampType,
    type_from_json,
)
from support.evolution import Catalogs, shared_catalogs

BASE = {
    "type": "struct",
    "schema-id": 0,
    "identifier-field-ids": [1],
    "fields": [
        {"id": 1, "name": "id", "type": "long", "required": True},
        {"id": 2, "name": "data", "type": "string", "required": False},
        {
            "id": 3,
            "name": "loc",
            "required": False,
            "type": {
                "type": "struct",
                "fields": [
                    {"id": 4, "name": "lat", "type": "float", "required": True},
                    {"id": 5, "name": "lon", "type": "float", "required": False},
                ],
            },
        },
        {
            "id": 6,
            "name": "tags",
            "required": False,
            "type": {
                "type": "list",
                "element-id": 7,
                "element": "string",
                "element-required": True,
            },
        },
        {
            "id": 8,
            "name": "props",
            "required": False,
            "type": {
                "type": "map",
                "key-id": 9,
                "key": "string",
                "value-id": 10,
                "value": {
                    "type": "struct",
                    "fields": [{"id": 11, "name": "v", "type": "int", "required": False}],
                },
                "value-required": False,
            },
        },
        {"id": 12, "name": "amount", "type": "decimal(9, 2)", "required": False},
    ],
}

POINTS = {
    "type": "list",
    "element-id": 1,
    "element-required": False,
    "element": {
        "type": "struct",
        "fields": [
            {"id": 2, "name": "x", "type": "double", "required": False},
            {
                "id": 3,
                "name": "m",
                "required": False,
                "type": {
                    "type": "map",
                    "key-id": 4,
                    "key": "string",
                    "value-id": 5,
                    "value": "long",
                    "value-required": False,
                },
            },
        ],
    },
}

Op = tuple[Any, ...]

SCENARIOS: dict[str, list[Op]] = {
    "add": [
        ("add", ("ts",), "timestamp", {"doc": "event time"}),
        ("add", ("loc", "alt"), "double", {}),
        ("add", ("props", "value", "w"), "string", {}),
        ("add", ("points",), POINTS, {}),
    ],
    "rename_and_move": [
        ("rename", "data", "payload"),
        ("rename", "loc.lat", "latitude"),
        ("move_first", "data"),
        ("move_before", "loc.lon", "loc.lat"),
        ("move_after", "id", "amount"),
    ],
    "widen_and_optional": [
        ("update", "amount", "decimal(18, 2)", {}),
        ("update", "loc.lat", "double", {"required": False}),
        ("update", "props.value.v", "long", {"doc": "widened"}),
        ("update", "data", None, {"doc": "payload"}),
    ],
    "delete_and_readd": [
        ("delete", "tags"),
        ("delete", "loc.lon"),
        ("add", ("tags",), "int", {}),
        ("add", ("loc", "lon"), "string", {}),
    ],
    "add_then_move_new": [
        ("add", ("first",), "string", {}),
        ("move_first", "first"),
        ("add", ("loc", "z"), "int", {}),
        ("move_before", "loc.z", "loc.lat"),
    ],
    "union_by_name": [
        (
            "union",
            pa.schema(
                [
                    pa.field("id", pa.int64(), nullable=False),
                    pa.field("data", pa.string()),
                    pa.field("newcol", pa.int32()),
                    pa.field(
                        "loc",
                        pa.struct([pa.field("lat", pa.float64()), pa.field("h", pa.string())]),
                    ),
                    pa.field("amount", pa.decimal128(12, 2)),
                    pa.field("tags", pa.list_(pa.string())),
                ]
            ),
        ),
    ],
}


def _their_type(type_json: Any) -> Any:
    from pyiceberg.types import NestedField as PField

    return PField.model_validate(
        {"id": 0, "name": "_", "type": type_json, "required": False}
    ).field_type


def _run(update: Any, ops: list[Op], theirs: bool) -> None:
    for op in ops:
        kind = op[0]
        if kind == "add":
            t = _their_type(op[2]) if theirs else type_from_json(op[2])
            update.add_column(op[1], t, **op[3])
        elif kind == "update":
            t = None if op[2] is None else (_their_type(op[2]) if theirs else type_from_json(op[2]))
            update.update_column(op[1], t, **op[3]) if theirs else update.update_column(
                op[1], field_type=t, **op[3]
            )
        elif kind == "delete":
            update.delete_column(op[1])
        elif kind == "rename":
            update.rename_column(op[1], op[2])
        elif kind in ("move_first",):
            update.move_first(op[1])
        elif kind in ("move_before", "move_after"):
            getattr(update, kind)(op[1], op[2])
        elif kind == "union":
            update.union_by_name(op[1])
        else:  # pragma: no cover
            raise AssertionError(kind)


def _fresh(c: Catalogs, name: str, version: int = 2) -> Table:
    return c.ours.create_table(
        f"db.{name}", Schema.from_json(BASE), properties={"format-version": str(version)}
    )


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_same_schema_as_pyiceberg(scenario: str, tmp_path: Path) -> None:
    c = shared_catalogs(tmp_path)
    ours = _fresh(c, "ours")
    _fresh(c, "theirs")
    with ours.update_schema() as u:
        _run(u, SCENARIOS[scenario], theirs=False)
    ptable = c.theirs.load_table("db.theirs")
    with ptable.update_schema() as pu:
        _run(pu, SCENARIOS[scenario], theirs=True)
    expected = c.ours.load_table("db.theirs")
    got = c.ours.load_table("db.ours")
    assert got.schema().to_json()["fields"] == expected.schema().to_json()["fields"]
    assert got.schema().identifier_field_ids == expected.schema().identifier_field_ids
    assert got.metadata.last_column_id == expected.metadata.last_column_id
    assert got.metadata.current_schema_id == 1 and len(got.metadata.schemas) == 2
    # and PyIceberg reads what icefloe wrote
    assert (
        c.theirs.load_table("db.ours").schema().model_dump(by_alias=True)["fields"]
        == (ptable.schema().model_dump(by_alias=True)["fields"])
    )


def _table(tmp_path: Path, version: int = 2) -> Table:
    return _fresh(shared_catalogs(tmp_path), "t", version)


def _raises(t: Table, fn: Callable[[Any], Any], match: str) -> None:
    before = t.metadata_location
    with pytest.raises(ValidationError, match=match), t.update_schema() as u:
        fn(u)
    assert t.refresh().metadata_location == before


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (lambda u: u.add_column("data", StringType()), "name already exists"),
        (lambda u: u.add_column(("loc", "lat"), DoubleType()), "name already exists"),
        (lambda u: u.add_column(("id", "x"), DoubleType()), "not a struct"),
        (lambda u: u.add_column(("nope", "x"), DoubleType()), "cannot find column 'nope'"),
        (lambda u: u.add_column("r", LongType(), required=True), "cannot add required column"),
        (lambda u: u.delete_column("nope"), "cannot find column 'nope'"),
        (lambda u: u.delete_column("id"), "cannot delete identifier field 'id'"),
        (lambda u: u.rename_column("data", "amount"), "name already exists"),
        (lambda u: u.rename_column("loc.lat", "lon"), "name already exists"),
        (lambda u: u.update_column("id", IntegerType()), "from long to int: Iceberg only widens"),
        (lambda u: u.update_column("data", LongType()), "from string to long"),
        (lambda u: u.update_column("loc", LongType()), "only primitive types"),
        # a type name, a pyarrow type or a type class is not a type (it said "only primitive
        # types can be promoted", although the promotion asked for is allowed)
        (lambda u: u.update_column("data", "long"), "expected an Iceberg type such as"),
        (lambda u: u.update_column("data", pa.int64()), "expected an Iceberg type such as"),
        (lambda u: u.update_column("data", LongType), "expected an Iceberg type such as"),
        (lambda u: u.add_column("n", "long"), "expected an Iceberg type such as"),
        (lambda u: u.update_column("data", required=True), "cannot make column 'data' required"),
        (lambda u: u.update_column("tags.element", LongType()), "from string to long"),
        (lambda u: u.move_before("loc.lat", "data"), "different structs"),
        (lambda u: u.move_after("data", "data"), "itself"),
        (lambda u: u.delete_column("data").rename_column("data", "x"), "it is deleted"),
        (lambda u: u.update_column("data", doc="d").delete_column("data"), "pending updates"),
        (lambda u: u.set_identifier_fields("data"), "not a required field"),
        (lambda u: u.set_identifier_fields("loc.lon"), "not a required field"),
        (lambda u: u.set_identifier_fields("ghost"), "not found in the new schema"),
        (lambda u: u.delete_column("tags.element"), "delete its list or map"),
        # map keys never change (Java: "Cannot delete/update map keys")
        (lambda u: u.delete_column("props.key"), "cannot delete map key 'props.key'"),
        (lambda u: u.rename_column("props.key", "k"), "cannot change map key 'props.key'"),
        (lambda u: u.update_column("props.key", doc="d"), "cannot change map key"),
        (lambda u: u.move_first("data").delete_column("data"), "it has a pending move"),
        (lambda u: u.add_column("n", LongType(), initial_default=1), "needs format version 3"),
        # written as given, any other JSON type made the table unreadable to every engine
        (lambda u: u.add_column("n", StringType(), doc=5), "doc of field 'n' must be a string"),
        (lambda u: u.update_column_doc("data", ["d"]), "must be a string"),
        (lambda u: u.update_column("data", doc=1.5), "must be a string"),
        (
            lambda u: u.union_by_name(pa.schema([pa.field("data", pa.int64())])),
            "from string to long",
        ),
        (
            lambda u: u.union_by_name(pa.schema([pa.field("loc", pa.int64())])),
            "cannot merge column 'loc'",
        ),
    ],
)
def test_invalid_changes_raise_and_commit_nothing(
    fn: Callable[[Any], Any], match: str, tmp_path: Path
) -> None:
    _raises(_table(tmp_path), fn, match)


def test_case_insensitive_lookup(tmp_path: Path) -> None:
    t = _table(tmp_path)
    with pytest.raises(ValidationError, match="cannot find column 'DATA'"):
        t.update_schema().rename_column("DATA", "x")
    with t.update_schema(case_sensitive=False) as u:
        u.rename_column("DATA", "payload").update_column("LOC.LAT", DoubleType())
        u.add_column(("Loc", "alt"), LongType())
    s = t.schema()
    assert s.find_field(2).name == "payload"
    assert s.find_type("loc.lat") == DoubleType()
    assert s.find_field("loc.alt").field_id == 13
    with pytest.raises(ValidationError, match="name already exists"):
        t.update_schema(case_sensitive=False).add_column("PAYLOAD", LongType())


@pytest.mark.parametrize(
    "fn",
    [
        lambda u: u.delete_column("a"),
        lambda u: u.rename_column("A", "b"),
        lambda u: u.update_column("a", doc="d"),
        lambda u: u.delete_column("s.x"),
        lambda u: u.rename_column("S.X", "y"),
        lambda u: u.update_column("s.x", required=False),
    ],
)
def test_case_insensitive_name_matching_two_columns_is_ambiguous(
    fn: Callable[[Any], Any], tmp_path: Path
) -> None:
    """Without case sensitivity, a name matching two columns (``a`` and ``A``, or ``s.x`` and
    ``s.X``) used to pick one of them silently: ``delete_column("a")`` dropped ``A``."""
    t = shared_catalogs(tmp_path).ours.create_table(
        "db.amb",
        pa.schema(
            [
                ("a", pa.int64()),
                ("A", pa.int64()),
                ("s", pa.struct([("x", pa.int64()), ("X", pa.int64())])),
            ]
        ),
    )
    t.append(pa.table({"a": [1], "A": [10], "s": [{"x": 2, "X": 20}]}))
    before = t.metadata_location
    with (
        pytest.raises(ValidationError, match="ambiguous"),
        t.update_schema(case_sensitive=False) as u,
    ):
        fn(u)
    assert t.refresh().metadata_location == before
    for name in ("a", "A", "s.x", "S.X"):
        with pytest.raises(ValidationError, match="ambiguous"):
            t.scan(selected_fields=(name,), case_sensitive=False).to_arrow()
    # exact names still resolve, and an unambiguous one still matches case-insensitively
    assert t.scan(selected_fields=("A",)).to_arrow().to_pylist() == [{"A": 10}]
    assert t.scan(selected_fields=("S",), case_sensitive=False).to_arrow().num_columns == 1


def test_identifier_fields_follow_renames_and_can_be_replaced(tmp_path: Path) -> None:
    t = _table(tmp_path)
    with t.update_schema() as u:
        u.rename_column("id", "key")
    assert t.schema().identifier_field_names == ("key",)
    _raises(t, lambda u: u.set_identifier_fields("key", "loc.lat"), "must not be float")
    with t.update_schema() as u:  # a renamed column can be named by its old or new name
        u.rename_column("key", "k2").set_identifier_fields("key")
    assert t.schema().identifier_field_names == ("k2",)
    with t.update_schema() as u:
        u.set_identifier_fields()
        u.delete_column("k2")
    assert t.schema().identifier_field_ids == ()
    assert t.schema().find_field_id("k2") is None


def test_identifier_field_nested_in_optional_struct_refused(tmp_path: Path) -> None:
    c = shared_catalogs(tmp_path)
    schema = {
        "type": "struct",
        "fields": [
            {"id": 1, "name": "id", "type": "long", "required": True},
            {
                "id": 2,
                "name": "s",
                "required": False,
                "type": {
                    "type": "struct",
                    "fields": [{"id": 3, "name": "a", "type": "int", "required": True}],
                },
            },
        ],
    }
    t = c.ours.create_table("db.t", Schema.from_json(schema))
    _raises(t, lambda u: u.set_identifier_fields("id", "s.a"), "optional field 's'")
    with t.update_schema() as u:
        u.set_identifier_fields("id")
    assert t.schema().identifier_field_names == ("id",)


def test_v3_defaults(tmp_path: Path) -> None:
    t = _table(tmp_path, version=3)
    with t.update_schema() as u:
        u.add_column("region", StringType(), required=True, initial_default="eu")
        u.add_column("n", LongType(), initial_default=7, write_default=8)
        u.add_column(
            "s", StructType(NestedField(100, "a", IntegerType())), required=True, initial_default={}
        )
    s = t.refresh().schema()
    region = s.find_field("region")
    assert region.required and region.initial_default == "eu" and region.write_default == "eu"
    n = s.find_field("n")
    assert (n.initial_default, n.write_default) == (7, 8)
    with t.update_schema() as u:
        u.update_column("n", write_default=9)
    assert t.schema().find_field("n").write_default == 9
    _raises(t, lambda u: u.add_column("r2", LongType(), required=True), "initial-default")
    _raises(t, lambda u: u.add_column("r3", LongType(), initial_default="x"), "invalid default")
    raw = t.io.new_input(t.metadata_location).read().decode()
    assert '"initial-default": "eu"' in raw or '"initial-default":"eu"' in raw


def test_v3_promotions_need_v3(tmp_path: Path) -> None:
    from icefloe.types import DateType

    base = {
        "type": "struct",
        "fields": [{"id": 1, "name": "d", "type": "date", "required": False}],
    }
    c = shared_catalogs(tmp_path)
    v2 = c.ours.create_table("db.v2", Schema.from_json(base))
    with pytest.raises(ValidationError, match="from date to timestamp"):
        v2.update_schema().update_column("d", TimestampType())
    v3 = c.ours.create_table("db.v3", Schema.from_json(base), properties={"format-version": "3"})
    with v3.update_schema() as u:
        u.update_column("d", TimestampType())
    assert v3.schema().find_type("d") == TimestampType()
    assert v2.schema().find_type("d") == DateType()


def test_partition_source_rules(tmp_path: Path) -> None:
    t = _table(tmp_path)
    with t.update_spec() as s:
        s.add_field("data", "truncate[4]")
    _raises(t, lambda u: u.delete_column("data"), "source of partition field 'data_trunc_4'")
    # renaming a partition source is fine: the spec refers to it by id
    with t.update_schema() as u:
        u.rename_column("data", "body")
    assert t.spec().fields[0].source_id == 2


def test_sort_order_sources_cannot_be_dropped(tmp_path: Path) -> None:
    """Every write sorts by the table's sort order: dropping a column it sorts by is refused
    until the order is replaced, and then writes go on."""
    t = _table(tmp_path)
    with t.replace_sort_order() as o:
        o.asc("data")
    _raises(t, lambda u: u.delete_column("data"), "sort order")
    with t.replace_sort_order() as o:
        o.asc("id")
    with t.update_schema() as u:
        u.delete_column("data")
    t.append(pa.table({"id": pa.array([2, 1], pa.int64())}))
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [1, 2]


def test_no_op_update_commits_nothing(tmp_path: Path) -> None:
    t = _table(tmp_path)
    before = t.metadata_location
    with t.update_schema() as u:
        u.union_by_name(pa.schema([pa.field("id", pa.int32(), nullable=False)]))  # narrower: kept
    assert t.metadata_location == before and t.schema().find_type("id") == LongType()


def test_schema_change_in_a_transaction_with_others(tmp_path: Path) -> None:
    t = _table(tmp_path)
    log_before = len(t.metadata_log())
    with t.transaction() as tx:
        with tx.update_schema() as u:
            u.add_column("x", LongType())
        with tx.update_schema() as u:  # sees the first change
            u.rename_column("x", "y")
        with tx.update_spec() as s:
            s.add_field("y", "bucket[4]")
        tx.set_properties(owner="me")
    assert len(t.metadata_log()) == log_before + 1  # one commit
    assert t.schema().find_field("y").field_id == 13
    assert [f.name for f in t.spec().fields] == ["y_bucket_4"]
    assert t.properties["owner"] == "me"
    assert [s.schema_id for s in t.metadata.schemas] == [0, 1, 2]


def test_error_in_transaction_discards_everything(tmp_path: Path) -> None:
    t = _table(tmp_path)
    before = t.metadata_location
    with pytest.raises(ValidationError), t.transaction() as tx:
        with tx.update_schema() as u:
            u.add_column("x", LongType())
        tx.update_schema().delete_column("nope")
    assert t.refresh().metadata_location == before


def test_concurrent_schema_change_is_a_conflict(tmp_path: Path) -> None:
    c = shared_catalogs(tmp_path)
    _fresh(c, "t")
    a = c.ours.load_table("db.t")
    b = c.ours.load_table("db.t")
    with a.update_schema() as u:
        u.add_column("x", LongType())
    with pytest.raises(CommitConflictError), b.update_schema() as u:
        u.add_column("y", LongType())
    # a property change on a stale table is retried and succeeds
    b.set_properties(k="v")
    assert b.schema().find_field_id("x") == 13 and b.properties["k"] == "v"


def test_union_by_name_keeps_identifier_fields_required(tmp_path: Path) -> None:
    """An Arrow schema's fields are nullable by default: merging one keeps the identifier field
    ``id`` required (and an identifier) instead of failing the commit on it."""
    t = _table(tmp_path)
    with t.update_schema() as u:
        u.union_by_name(pa.schema([("id", pa.int64()), ("data", pa.string()), ("n", pa.int32())]))
    schema = t.refresh().schema()
    assert schema.find_field("id").required
    assert schema.identifier_field_ids == (1,)
    assert schema.find_field("n").optional


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize(
    ("transform", "before", "after"),
    [
        ("identity", pa.int32(), LongType()),
        ("bucket[4]", pa.int32(), LongType()),
        ("truncate[100]", pa.decimal128(9, 2), DecimalType(12, 2)),
    ],
)
def test_changes_after_promoting_a_partition_source(
    tmp_path: Path, version: int, transform: str, before: pa.DataType, after: Any
) -> None:
    """Promoting a partition's source column keeps its partition values: deletes, overwrites,
    upserts and compaction then rewrite manifests written before the promotion, whose
    partition tuples hold the narrower type. PyIceberg reads the result."""
    from decimal import Decimal

    c = shared_catalogs(tmp_path)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("a", before)])

    def rows(ids: list[int]) -> pa.Table:
        values = [Decimal(i) if pa.types.is_decimal(before) else i for i in ids]
        return pa.table({"id": ids, "a": pa.array(values, before)}, schema=schema)

    t = c.ours.create_table("db.t", schema, properties={"format-version": str(version)})
    with t.update_spec() as s:
        s.add_field("a", transform)
    t.append(rows([1, 2, 3]))
    t.append(rows([4]))
    with t.update_schema() as u:
        u.update_column("a", after)
    t.delete("id = 2")
    t.overwrite(rows([5]), "id = 3")
    t.upsert(rows([1, 6]), join_cols=["id"])
    t.rewrite_data_files(min_input_files=1)
    want = [1, 4, 5, 6]
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == want
    theirs = c.theirs.load_table("db.t").scan().to_arrow()
    assert sorted(theirs["id"].to_pylist()) == want


@pytest.mark.parametrize("promoted", [TimestampType(), TimestampNanoType()])
def test_promoting_a_date_with_defaults(tmp_path: Path, promoted: Any) -> None:
    """v3 promotes date to timestamp: a column's defaults become the midnights of their dates,
    so rows written before the column existed, and rows written without it, read them."""
    import datetime

    t = _fresh(shared_catalogs(tmp_path), "t", 3)
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    with t.update_schema() as u:
        u.add_column(
            "d",
            DateType(),
            initial_default=datetime.date(2020, 11, 15),
            write_default=datetime.date(2021, 1, 2),
        )
    t.append(pa.table({"id": pa.array([2], pa.int64())}))
    with t.update_schema() as u:
        u.update_column("d", promoted)
    t.append(pa.table({"id": pa.array([3], pa.int64())}))
    f = t.schema().find_field("d")
    assert (f.initial_default, f.write_default) == ("2020-11-15T00:00:00", "2021-01-02T00:00:00")
    got = t.scan().to_arrow().sort_by("id").column("d").to_pylist()
    midnight = datetime.datetime(2021, 1, 2)
    assert got == [datetime.datetime(2020, 11, 15), midnight, midnight]


@pytest.mark.parametrize("promoted", [TimestampType(), TimestampNanoType()])
def test_equality_deletes_of_dates_apply_after_promotion(tmp_path: Path, promoted: Any) -> None:
    """An equality delete file written while the column was a date deletes the rows at the
    midnight of its dates once the column is a timestamp; with delete files of both types, and
    through deletes and compaction after the promotion."""
    import datetime

    day = datetime.date
    t = _fresh(shared_catalogs(tmp_path), "t", 3)
    with t.update_schema() as u:
        u.add_column("d", DateType())
    t.append(
        pa.table(
            {
                "id": pa.array([1, 2, 3, 4, 5], pa.int64()),
                "d": pa.array([day(2024, 1, 1), day(2024, 1, 2), day(2024, 1, 3), None, None]),
            }
        )
    )
    t.delete_by_keys(pa.table({"d": pa.array([day(2024, 1, 1), None])}), ["d"])
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [2, 3]
    with t.update_schema() as u:
        u.update_column("d", promoted)
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [2, 3]
    t.delete("id = 3")
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [2]
    # a timestamp key at midnight after the promotion, and one at noon matching nothing
    keys = [datetime.datetime(2024, 1, 2), datetime.datetime(2024, 1, 2, 12)]
    t.append(pa.table({"id": pa.array([6], pa.int64()), "d": pa.array([keys[1]])}))
    t.delete_by_keys(pa.table({"d": pa.array([keys[1]])}), ["d"])
    assert sorted(t.scan().to_arrow()["id"].to_pylist()) == [2]
    t.append(pa.table({"id": pa.array([7], pa.int64()), "d": pa.array([keys[0]])}))
    t.delete_by_keys(pa.table({"d": pa.array([keys[0]])}), ["d"])
    assert t.scan().to_arrow()["id"].to_pylist() == []
    t.append(pa.table({"id": pa.array([8], pa.int64()), "d": pa.array([keys[1]])}))
    t.rewrite_data_files(min_input_files=1)
    got = t.scan().to_arrow()
    assert got["id"].to_pylist() == [8]
    assert got["d"].cast(pa.timestamp("us")).to_pylist() == [keys[1]]


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (lambda u: u.delete_column("m.key.b"), "cannot change the fields of map key 'm.key'"),
        (lambda u: u.add_column("m.key.c", IntegerType()), "cannot add fields to map key"),
        (lambda u: u.rename_column("m.key.a", "aa"), "cannot change the fields of map key"),
        (lambda u: u.move_first("m.key.b"), "cannot change the fields of map key"),
        (lambda u: u.update_column("m.key.a", LongType()), "cannot change the fields of map key"),
    ],
)
def test_struct_map_keys_cannot_change(
    fn: Callable[[Any], Any], match: str, tmp_path: Path
) -> None:
    """Changes inside a struct key were dropped without a word (nothing committed, no error)."""
    from icefloe.types import MapType

    cats = shared_catalogs(tmp_path)
    key = StructType(
        NestedField(3, "a", IntegerType(), required=False),
        NestedField(4, "b", IntegerType(), required=False),
    )
    t = cats.ours.create_table(
        "db.sk", Schema(NestedField(1, "m", MapType(2, key, 5, IntegerType()), required=False))
    )
    _raises(t, fn, match)
    with t.update_schema() as u:  # the map's value still changes
        u.update_column("m.value", LongType())
    assert t.schema().find_type("m.value") == LongType()
