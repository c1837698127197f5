"""Deeply nested columns: icefloe writes and reads them as deep as pyarrow can exchange them
(the manifests' and Avro files' schema JSON nests far beyond serde_json's default limit of 128),
and refuses deeper ones with a typed error naming the column and the limit, at create, schema
change, write and read (a table another engine wrote)."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icefloe.arrow_schema import to_schema
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import UnsupportedFeatureError
from icefloe.metadata import TableMetadata
from icefloe.nesting import (
    ARROW_C_MAX_LEVELS,
    MAX_COLUMN_LEVELS,
    MAX_PARQUET_LEVELS,
    deepest_column,
    nesting_levels,
)
from icefloe.schema import Schema
from icefloe.table import Table
from icefloe.types import IcebergType, ListType, LongType, NestedField, StructType
from support.evolution import shared_catalogs
from support.rest import RestServer, new_warehouse


def _nested(kind: str, depth: int) -> tuple[pa.DataType, Any]:
    """An int64 wrapped ``depth`` times in a struct (field ``f``), list or map, and a value."""
    ty: pa.DataType = pa.int64()
    value: Any = 7
    for _ in range(depth):
        if kind == "struct":
            ty, value = pa.struct([pa.field("f", ty)]), {"f": value}
        elif kind == "list":
            ty, value = pa.list_(ty), [value]
        else:
            ty, value = pa.map_(pa.string(), ty), [("k", value)]
    return ty, value


def _table(kind: str, depth: int) -> pa.Table:
    ty, value = _nested(kind, depth)
    return pa.table({"id": pa.array([1, 2], pa.int64()), "x": pa.array([value, None], ty)})


def _catalog(tmp_path: Path) -> SqlCatalog:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=tmp_path.as_uri())
    cat.create_namespace("db")
    return cat


def _round_trip(t: Table, rows: pa.Table) -> None:
    t.append(rows)
    out = t.scan().to_arrow().sort_by("id")
    assert out.column("x").to_pylist() == rows.column("x").to_pylist()
    assert t.scan(row_filter="id = 2").to_arrow().column("x").to_pylist() == [None]


#: The deepest nesting of each kind icefloe takes.
DEEPEST = {"struct": 62, "list": 49, "map": 31}


def test_pyarrow_takes_exactly_the_levels_icefloe_allows() -> None:
    """The limits are pyarrow's: the deepest column of each kind crosses the C data interface
    and reads back from Parquet with pyarrow's default reader settings, one level more fails
    one or the other."""
    assert MAX_COLUMN_LEVELS == ARROW_C_MAX_LEVELS - 1
    for kind, depth in DEEPEST.items():
        fits = pa.schema([pa.field("x", _nested(kind, depth)[0])])
        over = pa.schema([pa.field("x", _nested(kind, depth + 1)[0])])
        levels = nesting_levels(to_schema(fits))
        assert levels[0] <= MAX_COLUMN_LEVELS and levels[1] <= MAX_PARQUET_LEVELS
        assert MAX_COLUMN_LEVELS in levels or MAX_PARQUET_LEVELS - 1 in levels
        assert pa.Schema._import_from_c_capsule(fits.__arrow_c_schema__()) == fits
        assert _parquet_read_back(fits) == fits.empty_table()
        levels = nesting_levels(to_schema(over))
        assert levels[0] > MAX_COLUMN_LEVELS or levels[1] > MAX_PARQUET_LEVELS
        with pytest.raises((pa.ArrowInvalid, OSError)):
            pa.Schema._import_from_c_capsule(over.__arrow_c_schema__())
            _parquet_read_back(over)


def _parquet_read_back(schema: pa.Schema) -> pa.Table:
    out = io.BytesIO()
    pq.write_table(schema.empty_table(), out)
    return pq.ParquetFile(pa.BufferReader(out.getvalue())).read()


@pytest.mark.parametrize("fmt", ["parquet", "avro", "orc"])
def test_struct_nested_sixty_times_round_trips(tmp_path: Path, fmt: str) -> None:
    rows = _table("struct", 60)
    t = _catalog(tmp_path).create_table(
        "db.t", rows.schema, properties={"write.format.default": fmt}
    )
    _round_trip(t, rows)


def test_deepest_list_and_map_round_trip(tmp_path: Path) -> None:
    cat = _catalog(tmp_path)
    for kind in ("list", "map"):
        rows = _table(kind, DEEPEST[kind])
        _round_trip(cat.create_table(f"db.{kind}", rows.schema), rows)


def test_partition_source_deep_in_structs(tmp_path: Path) -> None:
    """The manifests type a partition field from its source column in the schema JSON, found
    however deep the source sits; scans prune by it."""
    rows = _table("struct", 50)
    leaf = ".".join(["x"] + ["f"] * 50)
    t = _catalog(tmp_path).create_table("db.t", rows.schema)
    with t.update_spec() as s:
        s.add_field(leaf, "identity")
    _round_trip(t, rows)
    assert len(t.scan().plan_files()) == 2
    assert len(t.scan(row_filter=f"{leaf} = 7").plan_files()) == 1
    assert t.scan(row_filter=f"{leaf} = 7").to_arrow().column("id").to_pylist() == [1]


@pytest.mark.parametrize(
    ("kind", "depth"), [("list", 50), ("list", 63), ("struct", 63), ("map", 32)]
)
def test_too_deep_columns_are_refused_at_create(tmp_path: Path, kind: str, depth: int) -> None:
    cat = _catalog(tmp_path)
    with pytest.raises(UnsupportedFeatureError, match=r"column 'x\..*' nests \d+ ") as e:
        cat.create_table("db.t", _table(kind, depth).schema)
    limit = MAX_PARQUET_LEVELS if (kind, depth) == ("list", 50) else MAX_COLUMN_LEVELS
    assert f"at most {limit}" in str(e.value)
    if kind == "list":  # a long path is shortened
        assert f"<{depth - 6} more>" in str(e.value)
    assert not cat.table_exists("db.t")


@pytest.mark.rest
def test_a_rest_client_refuses_too_deep_columns_before_any_request(
    rest_server: RestServer,
) -> None:
    warehouse = new_warehouse()
    cat = RestCatalog("rest", uri=rest_server.url, warehouse=warehouse)
    try:
        cat.create_namespace("db")
        with pytest.raises(UnsupportedFeatureError, match="cannot create the table"):
            cat.create_table("db.t", _table("list", 63).schema)
        assert not cat.table_exists("db.t")
        cat.create_table("db.ok", _table("list", 2).schema)
    finally:
        cat.close()
    creates = f'"POST /v1/{warehouse}/namespaces/db/tables'
    assert len([line for line in rest_server.log_text().splitlines() if creates in line]) == 1


def test_schema_change_may_not_nest_too_deep(tmp_path: Path) -> None:
    rows = _table("struct", 62)
    t = _catalog(tmp_path).create_table("db.t", rows.schema)
    parent = ".".join(["x"] + ["f"] * 61)
    deeper = StructType(NestedField(999, "h", LongType()))
    u = t.update_schema().add_column((*parent.split("."), "g"), deeper)
    with pytest.raises(UnsupportedFeatureError, match="cannot change the schema"):
        u.commit()
    assert deepest_column(t.schema())[0] == MAX_COLUMN_LEVELS
    with t.update_schema() as u:  # a change that nests no deeper is fine
        u.add_column("y", LongType())
    _round_trip(t, rows)


def test_peer_written_deep_struct_is_read(tmp_path: Path) -> None:
    """A 50-deep struct table that PyIceberg created and wrote: icefloe reads and appends."""
    c = shared_catalogs(tmp_path)
    rows = _table("struct", 50)
    theirs = c.theirs.create_table("db.t", rows.schema)
    theirs.append(rows)
    t = c.ours.load_table("db.t")
    assert t.scan().to_arrow().sort_by("id").column("x").to_pylist() == rows.column("x").to_pylist()
    assert t.scan(row_filter="id = 1").to_arrow().num_rows == 1
    t.append(rows)
    assert c.theirs.load_table("db.t").scan().to_arrow().num_rows == 4


@pytest.mark.parametrize("depth", [50, 63])
def test_peer_written_too_deep_lists_are_refused_typed(tmp_path: Path, depth: int) -> None:
    """PyIceberg writes lists nested deeper than pyarrow can pass between Arrow libraries or
    read back from Parquet: icefloe refuses to read or write them with a typed error (before,
    a raw ``ArrowInvalid`` or a ``CorruptFileError``)."""
    c = shared_catalogs(tmp_path)
    rows = _table("list", depth)
    theirs = c.theirs.create_table("db.t", rows.schema)
    theirs.append(rows)
    t = c.ours.load_table("db.t")
    for read in (lambda: t.scan().to_arrow(), lambda: t.scan().to_batches().read_all()):
        with pytest.raises(UnsupportedFeatureError, match="cannot read the table: column 'x"):
            read()
    with pytest.raises(UnsupportedFeatureError, match="cannot write to the table"):
        t.append(rows)


def _http(server: RestServer, method: str, path: str, body: object = None) -> tuple[int, Any]:
    """A raw request to ``server`` (what a client of another engine sends): status, JSON."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    req = urllib.request.Request(server.url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return int(resp.status), json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        return int(exc.code), json.loads(exc.read() or b"null")


def _deep_list_column(name: str, first_id: int, depth: int) -> NestedField:
    """Column ``name``: a long in ``depth`` nested lists, ids from ``first_id``."""
    ty: IcebergType = LongType()
    for i in range(depth):
        ty = ListType(first_id + depth - i, ty, element_required=False)
    return NestedField(first_id, name, ty, required=False)


def _refused_by_icefloe(t: Table, rows: pa.Table) -> None:
    """icefloe's own client refuses to read or write ``t`` with a typed error."""
    with pytest.raises(UnsupportedFeatureError, match="cannot write to the table: column 'x"):
        t.append(rows)
    with pytest.raises(UnsupportedFeatureError, match="cannot read the table: column 'x"):
        t.scan().to_arrow()


@pytest.mark.rest
def test_the_rest_server_stores_schemas_deeper_than_icefloe_reads(rest_server: RestServer) -> None:
    """A REST catalog stores any valid schema: a table whose struct nests 63 deep (more than
    pyarrow exchanges) is staged and created through ``icefloe serve`` with the requests
    Iceberg Java sends, loads back unchanged, and takes a schema-change commit adding a
    list nested 63 deep; icefloe's own client loads it but refuses to create such a table,
    read it or write it (the server answered the create 406 before, as if it were the
    client)."""
    warehouse = new_warehouse()
    base = f"/v1/{warehouse}/namespaces"
    assert _http(rest_server, "POST", base, {"namespace": ["db"]})[0] == 200
    rows = _table("struct", 63)
    deep = to_schema(rows.schema)
    create = {"name": "t", "schema": deep.to_json(), "stage-create": True, "properties": {}}
    status, staged = _http(rest_server, "POST", f"{base}/db/tables", create)
    assert status == 200, staged
    metadata = TableMetadata.from_json(staged["metadata"])
    commit = {
        "identifier": {"namespace": ["db"], "name": "t"},
        "requirements": [{"type": "assert-create"}],
        "updates": [
            {"action": "assign-uuid", "uuid": metadata.table_uuid},
            {"action": "upgrade-format-version", "format-version": 2},
            {"action": "add-schema", "schema": metadata.current_schema().to_json()},
            {"action": "set-current-schema", "schema-id": -1},
            {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
            {"action": "set-default-spec", "spec-id": -1},
            {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
            {"action": "set-default-sort-order", "sort-order-id": -1},
            {"action": "set-location", "location": metadata.location},
        ],
    }
    status, created = _http(rest_server, "POST", f"{base}/db/tables/t", commit)
    assert status == 200, created
    status, loaded = _http(rest_server, "GET", f"{base}/db/tables/t")
    assert status == 200, loaded
    schema = TableMetadata.from_json(loaded["metadata"]).current_schema()
    assert deepest_column(schema) == deepest_column(deep)
    assert deepest_column(schema)[0] == MAX_COLUMN_LEVELS + 1

    # a schema change a client sends as a commit: a column nested deeper still
    last = TableMetadata.from_json(loaded["metadata"]).last_column_id
    wider = Schema(*schema.fields, _deep_list_column("y", last + 1, 63), schema_id=1)
    change = {
        "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 0}],
        "updates": [
            {"action": "add-schema", "schema": wider.to_json()},
            {"action": "set-current-schema", "schema-id": -1},
        ],
    }
    status, changed = _http(rest_server, "POST", f"{base}/db/tables/t", change)
    assert status == 200, changed
    assert Schema.from_json(changed["metadata"]["schemas"][-1]) == wider

    cat = RestCatalog("rest", uri=rest_server.url, warehouse=warehouse)
    try:
        t = cat.load_table("db.t")
        assert t.schema() == wider
        _refused_by_icefloe(t, rows)
        with pytest.raises(UnsupportedFeatureError, match="cannot create the table"):
            cat.create_table("db.u", rows.schema)
    finally:
        cat.close()


@pytest.mark.rest
@pytest.mark.interop
def test_pyiceberg_creates_and_writes_too_deep_tables_through_the_rest_server(
    rest_server: RestServer,
) -> None:
    """PyIceberg creates a table with a list nested 50 deep (deeper than pyarrow's Parquet
    reader takes) through ``icefloe serve`` and appends to it; icefloe loads the table and
    refuses to read or write it with a typed error."""
    pytest.importorskip("pyiceberg")
    from pyiceberg.catalog.rest import RestCatalog as PyRestCatalog

    warehouse = new_warehouse()
    py = PyRestCatalog("py", uri=rest_server.url, warehouse=warehouse)
    py.create_namespace("db")
    rows = _table("list", 50)
    theirs = py.create_table("db.t", schema=rows.schema)
    theirs.append(rows)
    cat = RestCatalog("rest", uri=rest_server.url, warehouse=warehouse)
    try:
        t = cat.load_table("db.t")
        assert deepest_column(t.schema(), parquet=True)[0] == MAX_PARQUET_LEVELS + 1
        assert len(t.snapshots()) == 1
        _refused_by_icefloe(t, rows)
    finally:
        cat.close()


@pytest.mark.parametrize(("kind", "depth"), [("list", 50), ("list", 63), ("map", 32)])
def test_spark_reads_refuse_too_deep_columns_when_planned(
    spark: Any, tmp_path: Path, kind: str, depth: int
) -> None:
    """A Spark read of a table another engine made with columns deeper than icefloe reads is
    refused with the typed error when it is planned, on the driver (``icefloe.spark.read``)
    and when the format defines the DataFrame, before any task runs; executors given such a
    read refuse it the same way (before, the read was planned and every task failed with a
    ``CorruptFileError`` calling the data file corrupt). Maps too deep for Arrow's C data
    interface but not for pyarrow's Parquet reader: the other columns are still read."""
    import icefloe.spark as ispark
    from icefloe.spark.errors import icefloe_errors
    from icefloe.spark.reading import spark_batches

    c = shared_catalogs(tmp_path)
    rows = _table(kind, depth)
    theirs = c.theirs.create_table("db.t", rows.schema)
    theirs.append(rows)
    t = c.ours.load_table("db.t")
    refused = "cannot read the table: column 'x"
    with pytest.raises(UnsupportedFeatureError, match=refused):
        ispark.read(spark, t)
    ispark.register(spark)
    catalog = {"catalog.type": "sql", "catalog.uri": c.uri, "catalog.warehouse": c.warehouse}
    reader = spark.read.format("icefloe").option("catalog", "shared").options(**catalog)
    with pytest.raises(UnsupportedFeatureError, match=refused), icefloe_errors():
        reader.load("db.t")
    scan = t.scan()
    options = scan.read_options()
    fields = list(options.projected_schema().fields)
    with pytest.raises(UnsupportedFeatureError, match=refused):
        list(spark_batches(t.io, options, fields, scan.plan_files()))
    if kind == "map":
        assert ispark.read(spark, t, selected_fields=["id"]).count() == 2
        ids = reader.option("columns", "id").load("db.t").collect()
        assert sorted(r.id for r in ids) == [1, 2]
    else:  # pyarrow's Parquet reader, which executors read with, opens no such file
        with pytest.raises(UnsupportedFeatureError, match=UNOPENED), icefloe_errors():
            ispark.read(spark, t, selected_fields=["id"]).collect()


#: What a read says of a Parquet file whose schema pyarrow's Parquet reader does not open.
UNOPENED = r"cannot read Parquet file .*: its schema nests more than 100 levels deep"


@pytest.mark.parametrize("depth", [50, 63])
def test_files_too_deep_for_pyarrows_parquet_reader_are_not_called_corrupt(
    tmp_path: Path, depth: int
) -> None:
    """A task read with pyarrow's Parquet reader (as Spark executors read) of a file whose
    schema nests deeper than that reader opens, even for a shallow column: the error is a typed
    limit naming the file, not a ``CorruptFileError`` calling a valid file corrupt."""
    from icefloe.read import read_task

    c = shared_catalogs(tmp_path)
    rows = _table("list", depth)
    c.theirs.create_table("db.t", rows.schema).append(rows)
    t = c.ours.load_table("db.t")
    scan = t.scan(selected_fields=("id",))
    options = scan.read_options()
    for task in scan.plan_files():
        with pytest.raises(UnsupportedFeatureError, match=UNOPENED):
            list(read_task(t.io, task, options))
