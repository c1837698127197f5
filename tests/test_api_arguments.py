"""Calls with arguments of the wrong type fail with a ValidationError naming the argument,
before anything is changed or deleted (not a TypeError or AttributeError from deep inside,
nor a value written to the metadata as its text)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe import variant
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import ValidationError
from icefloe.table import Table
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
)
from icefloe.types import LongType, NestedField

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])

CALLS: list[tuple[str, Callable[[Table], Any], str]] = [
    ("manifest-size-text", lambda t: t.rewrite_manifests(target_manifest_size="8MB"), "an int"),
    ("manifest-size-bool", lambda t: t.rewrite_manifests(target_manifest_size=True), "an int"),
    ("orphans-location-int", lambda t: t.remove_orphan_files(location=123), "location"),
    (
        "compaction-properties-text",
        lambda t: t.rewrite_data_files(snapshot_properties="ab"),
        "snapshot_properties",
    ),
    ("scan-fields-int", lambda t: t.scan(selected_fields=5), "selected_fields"),
    ("scan-fields-ints", lambda t: t.scan(selected_fields=[1]), "selected_fields"),
    ("scan-options-int", lambda t: t.scan(options=5), "options must be a mapping"),
    ("set-properties-int", lambda t: t.set_properties(5), "table properties must be a mapping"),
    (
        "add-column-int",
        lambda t: t.update_schema().add_column(5, LongType()).commit(),
        "column path",
    ),
    (
        "append-source-snapshot-id",
        lambda t: t.append(
            pa.table({"id": [9]}, schema=SCHEMA), snapshot_properties={"source-snapshot-id": "1"}
        ),
        "cherry-picks only",
    ),
    (
        "append-properties-list",
        lambda t: t.append(pa.table({"id": [9]}, schema=SCHEMA), snapshot_properties=[("a", "b")]),
        "snapshot_properties",
    ),
    # names given as lists, None or ints raised bare TypeError / AttributeError from deep inside
    ("delete-column-list", lambda t: t.update_schema().delete_column(["id"]), "named by a string"),
    ("move-after-none", lambda t: t.update_schema().move_after(None, "id"), "named by a string"),
    ("remove-field-list", lambda t: t.update_spec().remove_field(["id"]), "named by a string"),
    ("remove-properties-list", lambda t: t.remove_properties(["a"]), "name is a string"),
    ("property-set-list", lambda t: t.update_properties().set(["a"], "x"), "name is a string"),
    ("property-remove-int", lambda t: t.update_properties().remove(1), "name is a string"),
    (
        "field-type-name",
        lambda t: NestedField(5, "x", "long"),  # type: ignore[arg-type]
        "must be an icefloe type",
    ),
    # a snapshot id given as a list (or a dict) was looked up as a dict key: TypeError
    ("changelog-fields-int", lambda t: t.changelog_scan(selected_fields=5), "selected_fields"),
    ("statistics-list", lambda t: t.statistics([t.metadata.current_snapshot_id]), "an integer"),
    ("statistics-text", lambda t: t.statistics("1"), "snapshot_id must be an integer"),
    ("partition-statistics-list", lambda t: t.partition_statistics([1]), "an integer"),
    ("compute-statistics-dict", lambda t: t.compute_statistics(snapshot_id={}), "an integer"),
    ("compute-partition-statistics-list", lambda t: t.compute_partition_statistics([1]), "integer"),
    ("snapshot-by-id-list", lambda t: t.snapshot_by_id([1]), "an integer"),
    # a filter that is neither a string nor an expression: "cannot bind None" from binding
    ("delete-none", lambda t: t.delete(None), "a row filter must be a string or an expression"),
    (
        "delete-tuple",
        lambda t: t.delete(("id", 1)),
        r"a row filter must be a string or an expression, got \('id', 1\)",
    ),
    (
        "previous-versions-negative",
        lambda t: t.set_properties({"write.metadata.previous-versions-max": "-1"}),
        "must be at least 0",
    ),
]


@pytest.mark.parametrize("call,needle", [c[1:] for c in CALLS], ids=[c[0] for c in CALLS])
def test_wrong_types_are_validation_errors(
    tmp_path: Path, call: Callable[[Table], Any], needle: str
) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    for i in range(3):
        t.append(pa.table({"id": [i]}, schema=SCHEMA))
    files = sorted(p for p in (tmp_path / "wh").rglob("*") if p.is_file())
    with pytest.raises(ValidationError, match=needle):
        call(t)
    t = cat.load_table("db.t")
    assert len(t.snapshots()) == 3
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2]
    assert sorted(p for p in (tmp_path / "wh").rglob("*") if p.is_file()) == files


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"partition_spec": [("id", "identity")]}, "partition_spec must be a PartitionSpec"),
        ({"sort_order": ["id"]}, "sort_order must be a SortOrder"),
        ({"properties": [("a", "b")]}, "properties must be a Mapping"),
    ],
    ids=["spec-list", "order-list", "properties-list"],
)
def test_create_table_with_wrong_types(tmp_path: Path, kwargs: dict[str, Any], needle: str) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    with pytest.raises(ValidationError, match=needle):
        cat.create_table("db.t", SCHEMA, **kwargs)
    assert not cat.table_exists("db.t")


def test_scan_without_selected_fields_reads_every_column(tmp_path: Path) -> None:
    """``selected_fields=None`` is every column in each kind of scan (the changelog scan
    iterated None: TypeError); a name alone is one column, anything else is refused."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    schema = pa.schema([*SCHEMA, pa.field("x", pa.string())])
    t = cat.create_table("db.t", schema)
    t.append(pa.table({"id": [7], "x": ["a"]}, schema=schema))
    assert t.scan(selected_fields=None).to_arrow().column("id").to_pylist() == [7]
    assert t.scan(selected_fields=None).to_arrow().column_names == ["id", "x"]
    incremental = t.incremental_append_scan(selected_fields=None).to_arrow()
    assert incremental.column_names == ["id", "x"]
    changes = t.changelog_scan(selected_fields=None).to_arrow()
    assert changes.column_names == [
        "id",
        "x",
        "_change_type",
        "_change_ordinal",
        "_commit_snapshot_id",
    ]
    assert t.changelog_scan(selected_fields="x").to_arrow().column_names[0] == "x"
    for make in (t.scan, t.incremental_append_scan, t.changelog_scan):
        for bad in (5, [1], b"id", {"id": 1}):
            with pytest.raises(ValidationError, match="selected_fields must be column names"):
                make(selected_fields=bad)


def test_a_negative_previous_versions_max_is_refused_at_create(tmp_path: Path) -> None:
    """Java reads it as an int and keeps at least one file; a negative count means nothing
    (0 is taken, and keeps one, as there)."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    key = "write.metadata.previous-versions-max"
    with pytest.raises(ValidationError, match=f"{key}='-1' is invalid: must be at least 0"):
        cat.create_table("db.t", SCHEMA, properties={key: "-1"})
    assert not cat.table_exists("db.t")
    t = cat.create_table("db.t", SCHEMA, properties={key: "0"})
    t.append(pa.table({"id": [1]}, schema=SCHEMA))
    t.append(pa.table({"id": [2]}, schema=SCHEMA))
    assert len(t.metadata.metadata_log) == 1


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"dialect": {"spark": "select 1"}}, "dialect must be a name"),
        ({"dialect": ["spark"]}, "dialect must be a name"),
        ({"dialect": 5}, "dialect must be a name"),
        ({"dialect": "  "}, "invalid query for dialect"),
    ],
    ids=["dict", "list", "int", "blank"],
)
def test_view_dialect_of_the_wrong_type(
    tmp_path: Path, kwargs: dict[str, Any], needle: str
) -> None:
    """A dict or list as the dialect was used as a dict key (TypeError: unhashable)."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    with pytest.raises(ValidationError, match=needle):
        cat.create_view("db.v", "select 1", SCHEMA, **kwargs)
    assert not cat.view_exists("db.v")
    cat.create_view("db.v", "select 1", SCHEMA, dialect="spark")
    with pytest.raises(ValidationError, match=needle):
        cat.replace_view("db.v", "select 2", SCHEMA, **kwargs)
    assert cat.load_view("db.v").sql() == "select 1"


@pytest.mark.parametrize("kind", ["sql", "hadoop"])
@pytest.mark.parametrize(
    "call,needle",
    [
        (lambda c: c.load_table(5), "invalid identifier"),
        (lambda c: c.load_table(None), "invalid identifier"),
        (lambda c: c.table_exists(5), "invalid identifier"),
        (lambda c: c.list_tables(5), "invalid identifier"),
        (lambda c: c.create_namespace("x", 5), "namespace properties must be a mapping"),
        (lambda c: c.create_namespace("x", {"k": 1}), "must be strings"),
        (lambda c: c.update_namespace_properties("db", updates={"x": [1]}), "must be strings"),
        (lambda c: c.update_namespace_properties("db", removals="abc"), "removals"),
        (lambda c: c.create_table("db.u", SCHEMA, location=5), "location must be a str"),
    ],
    ids=[
        "load-int",
        "load-none",
        "exists-int",
        "list-int",
        "ns-properties-int",
        "ns-property-int",
        "ns-update-list",
        "ns-removals-text",
        "location-int",
    ],
)
def test_catalog_calls_with_wrong_types(
    tmp_path: Path, kind: str, call: Callable[[Any], Any], needle: str
) -> None:
    """The SQL catalog sent a list to its database (ServiceUnavailableError, a retryable
    kind) or stored a number as text; the file-system catalog stored ``str(value)``."""
    from icefloe.catalog import load_catalog

    props = {"uri": f"sqlite:///{tmp_path}/c.db"} if kind == "sql" else {}
    cat = load_catalog("c", type=kind, warehouse=(tmp_path / "wh").as_uri(), **props)
    cat.create_namespace("db", {"a": "1"})
    with pytest.raises(ValidationError, match=needle):
        call(cat)
    assert cat.load_namespace_properties("db").get("a") == "1"
    assert not cat.namespace_exists("x") and not cat.table_exists("db.u")


def test_add_files_takes_one_path_or_a_list(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    path = str(tmp_path / "one.parquet")
    field = pa.field("id", pa.int64(), nullable=False, metadata={"PARQUET:field_id": "1"})
    pq.write_table(pa.table({"id": pa.array([5], pa.int64())}, schema=pa.schema([field])), path)
    t.add_files(path)  # was iterated character by character: "add_files got / more than once"
    assert t.scan().to_arrow().column("id").to_pylist() == [5]
    with pytest.raises(ValidationError, match="file paths"):
        t.add_files([path, 3])
    assert len(t.snapshots()) == 1


def test_python_values_arrow_cannot_convert_name_no_variant_without_one(tmp_path: Path) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    with pytest.raises(ValidationError, match=r"column 'id' \(long\).*Could not convert") as info:
        t.append({"id": [1, "x"]})
    assert "variant" not in str(info.value)


def test_a_path_given_as_an_identifier_says_how_to_open_a_table_by_path(tmp_path: Path) -> None:
    """A path or URI where a table name belongs is named as one, with the two ways forward
    (it was read as dotted parts: "needs a namespace", "empty part" or "does not exist")."""
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    directory = str(tmp_path / "wh" / "db" / "t")
    paths = [
        directory,
        "wh/db/t",
        "./wh/db/t",
        t.location,
        t.metadata_location,
        t.metadata_location.removeprefix("file://"),
    ]
    for path in paths:
        for call in (cat.load_table, cat.table_exists, cat.drop_table):
            with pytest.raises(ValidationError, match="is a path or URI") as info:
                call(path)
            assert "StaticTable.from_metadata" in str(info.value)
    assert cat.table_exists("db.t") and cat.table_exists(("db", "t/x")) is False


TRANSFORMS = [
    IdentityTransform(),
    BucketTransform(4),
    TruncateTransform(3),
    YearTransform(),
    MonthTransform(),
    DayTransform(),
    HourTransform(),
    VoidTransform(),
    UnknownTransform("zorder"),
]


@pytest.mark.parametrize("transform", TRANSFORMS, ids=str)
@pytest.mark.parametrize("bad", [None, "day", 5], ids=["none", "name", "int"])
def test_transforms_refuse_arguments_of_the_wrong_type(transform: Transform, bad: Any) -> None:
    """identity raised AttributeError; the others answered False (void: can transform a
    None, its result type None) instead of naming the mistake."""
    with pytest.raises(ValidationError, match="compares with a transform"):
        transform.satisfies_order_of(bad)
    with pytest.raises(ValidationError, match="source type must be an icefloe type"):
        transform.can_transform(bad)
    with pytest.raises(ValidationError, match="source type must be an icefloe type"):
        transform.result_type(bad)
    assert transform.satisfies_order_of(transform)  # each transform orders as itself
    assert isinstance(transform.can_transform(LongType()), bool)


def test_an_unknown_transform_is_named_by_a_string() -> None:
    with pytest.raises(ValidationError, match="name is a string"):
        UnknownTransform(None)  # type: ignore[arg-type]


_META = variant.from_python(1).metadata

VARIANT_CALLS: list[tuple[str, Callable[[], Any], str]] = [
    ("from-pylist-none", lambda: variant.from_pylist(None), "takes a list of Python values"),
    ("from-pylist-bytes", lambda: variant.from_pylist(b"ab"), "takes a list of Python values"),
    ("from-pylist-str", lambda: variant.from_pylist("ab"), "takes a list of Python values"),
    ("from-pylist-dict", lambda: variant.from_pylist({"a": 1}), "takes a list of Python values"),
    ("from-json-none", lambda: variant.from_json(None), "takes JSON text"),
    ("from-json-bytes", lambda: variant.from_json(b"{}"), "decode bytes to str first"),
    ("from-json-int-item", lambda: variant.from_json(["1", 5]), "got int 5 among them"),
    ("from-arrow-none", lambda: variant.from_arrow(None), "from_arrow takes a pyarrow Array"),
    ("from-arrow-list", lambda: variant.from_arrow([1]), "from_arrow takes a pyarrow Array"),
    ("encode-none", lambda: variant.encode_column(None), "encode_column takes a pyarrow"),
    ("encode-bytes", lambda: variant.encode_column(b"ab"), "encode_column takes a pyarrow"),
    ("normalize-none", lambda: variant.normalize(None), "normalize takes a pyarrow Array"),
    ("normalize-bytes", lambda: variant.normalize(b"ab"), "normalize takes a pyarrow Array"),
    ("to-pylist-none", lambda: variant.to_pylist(None), "to_pylist takes a pyarrow Array"),
    ("to-pylist-bytes", lambda: variant.to_pylist(b"ab"), "to_pylist takes a pyarrow Array"),
    ("to-python-none", lambda: variant.to_python(None), "got NoneType None for the metadata"),
    ("to-python-bytes-alone", lambda: variant.to_python(_META), "the metadata alone"),
    ("to-python-value-int", lambda: variant.to_python(_META, 5), "got int 5 for the value"),
    ("to-json-metadata-none", lambda: variant.to_json(None, b"\x0c\x01"), "for the metadata"),
    ("to-json-text", lambda: variant.to_json("a", "b"), "got str 'a' for the metadata"),
    ("variant-none", lambda: variant.Variant(None, None), "metadata is bytes"),  # type: ignore[arg-type]
    (
        "variant-and-value",
        lambda: variant.to_json(variant.from_python(1), b"\x00"),
        "a Variant alone",
    ),
]


@pytest.mark.parametrize(
    "call,needle", [c[1:] for c in VARIANT_CALLS], ids=[c[0] for c in VARIANT_CALLS]
)
def test_variant_functions_refuse_arguments_of_the_wrong_type(
    call: Callable[[], Any], needle: str
) -> None:
    """None or bytes where an Arrow array, a list or a variant belongs raised TypeError or
    AttributeError, or was taken apart (a string as one row per character, bytes as one per
    byte, a dict as one per key)."""
    with pytest.raises(ValidationError, match=needle):
        call()


def test_variant_bytes_may_be_any_bytes_like() -> None:
    v = variant.from_python({"a": 1})
    assert variant.to_python(bytearray(v.metadata), memoryview(v.value)) == {"a": 1}
    assert variant.Variant(bytearray(v.metadata), v.value) == v


def test_numpy_integers_are_snapshot_ids_and_times(tmp_path: Path) -> None:
    """Ids read from a table with ``to_numpy()`` are numpy integers: every snapshot-id and
    epoch-millisecond argument takes them as Python ints (they were refused, and where a
    check let one through, the metadata JSON could not hold it); bools and floats are still
    refused."""
    import json

    import numpy as np

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA, format_version=2)
    for i in range(3):
        t.append(pa.table({"id": [i]}, schema=SCHEMA))
    ids = t.inspect.snapshots().column("snapshot_id").to_numpy()
    first, second, third = (ids[i] for i in range(3))
    assert isinstance(first, np.int64)
    when = np.int64(t.history()[1].timestamp_ms)
    assert t.scan(snapshot_id=first).count() == 1
    assert t.scan().with_snapshot(second).count() == 2
    assert t.scan(as_of=when).count() == 2
    assert t.snapshot_as_of(when).snapshot_id == int(second)
    assert t.snapshot_by_id(first).snapshot_id == int(first)
    assert t.inspect.files(snapshot_id=second).num_rows == 2
    assert t.incremental_append_scan(first, third).count() == 2
    assert t.changelog_scan(first).to_arrow().num_rows == 2
    t.compute_statistics(snapshot_id=second)
    with t.manage_snapshots() as ms:
        ms.create_tag("tg", first)
        ms.create_branch("b", first)
    with t.manage_snapshots() as ms:
        ms.replace_branch("b", second)
        ms.rollback_to(second)
    with t.manage_snapshots() as ms:
        ms.set_current_snapshot(third)
    t.manage_snapshots().remove_tag("tg").commit()
    assert t.expire_snapshots(snapshot_ids=[first]).snapshot_ids == (int(first),)
    t = cat.load_table("db.t")
    assert t.refs()["b"].snapshot_id == int(second) and t.scan().count() == 3
    assert type(t.refs()["b"].snapshot_id) is int
    json.loads((tmp_path / "wh").joinpath(t.metadata_location.split("/wh/", 1)[1]).read_text())
    for bad in (True, 1.0, np.float64(1.0)):
        with pytest.raises(ValidationError, match="integer"):
            t.scan(snapshot_id=bad)  # type: ignore[arg-type]
        with pytest.raises(ValidationError, match="integer"):
            t.manage_snapshots().rollback_to(bad)  # type: ignore[arg-type]
