"""Tables on every catalog: create, load, list, rename, drop/purge, register, property commits."""

from __future__ import annotations

import gzip
import json
import logging
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog import Catalog
from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import (
    IcebergError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    NotFoundError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.schema import Schema
from icefloe.sorting import SortDirection, SortField, SortOrder
from icefloe.transforms import BucketTransform, IdentityTransform
from icefloe.types import LongType, NestedField, StringType


def _schema() -> Schema:
    return Schema(
        NestedField(10, "id", LongType(), required=True),
        NestedField(20, "name", StringType()),
        identifier_field_ids=[10],
    )


def _local(location: str) -> Path:
    return Path(location.removeprefix("file://"))


def test_create_load_list(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    spec = PartitionSpec(PartitionField(20, 1000, BucketTransform(4), "name_bucket"))
    order = SortOrder(SortField(10, IdentityTransform(), SortDirection.DESC), order_id=1)
    t = catalog.create_table(
        "db.t", _schema(), partition_spec=spec, sort_order=order, properties={"owner": "me"}
    )
    assert t.identifier == ("db", "t")
    assert t.format_version == 2
    assert [f.name for f in t.schema().fields] == ["id", "name"]
    assert [f.field_id for f in t.schema().fields] == [1, 2]  # fresh ids
    assert t.schema().identifier_field_ids == (1,)
    assert t.spec().fields[0].source_id == 2 and t.spec().fields[0].name == "name_bucket"
    assert t.sort_order().fields[0].source_id == 1
    assert t.properties["owner"] == "me"
    assert t.current_snapshot() is None and t.snapshots() == [] and t.history() == []
    assert catalog.io.exists(t.metadata_location)
    assert catalog.table_exists("db.t") and catalog.table_exists(("db", "t"))
    assert not catalog.table_exists("db.nope")
    loaded = catalog.load_table(("db", "t"))
    assert loaded.metadata == t.metadata
    assert loaded.metadata_location == t.metadata_location
    catalog.create_table("db.u", _schema(), format_version=3)
    assert catalog.list_tables("db") == [("db", "t"), ("db", "u")]
    assert catalog.load_table("db.u").metadata.next_row_id == 0
    with pytest.raises(TableAlreadyExistsError, match=r"db\.t"):
        catalog.create_table("db.t", _schema())
    same = catalog.create_table_if_not_exists("db.t", _schema())
    assert same.metadata_location == t.metadata_location
    with pytest.raises(NoSuchTableError, match=r"db\.nope"):
        catalog.load_table("db.nope")
    with pytest.raises(NoSuchNamespaceError, match="other"):
        catalog.create_table("other.t", _schema())
    with pytest.raises(ValidationError, match="namespace"):
        catalog.load_table("t")
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace("db")


def test_create_from_pyarrow_schema(catalog: Catalog) -> None:
    pa = pytest.importorskip("pyarrow")
    catalog.create_namespace("db")
    arrow = pa.schema([pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.string())])
    t = catalog.create_table("db.arrow", arrow)
    assert [(f.name, f.required) for f in t.schema().fields] == [("a", True), ("b", False)]
    assert isinstance(t.schema().fields[0].field_type, LongType)


def test_property_commits_and_refresh(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", _schema(), properties={"a": "1", "b": "2"})
    first = t.metadata_location
    t.set_properties(c="3")
    assert t.properties["c"] == "3"
    assert t.metadata_location != first
    assert t.metadata_log()[-1].metadata_file == first
    with t.update_properties() as up:
        up.set("a", "10").remove("b")
    assert t.properties["a"] == "10" and "b" not in t.properties
    other = catalog.load_table("db.t")
    assert other.properties == t.properties
    with t.transaction() as tx:
        tx.set_properties(d="4")
        tx.remove_properties("c")
    assert other.refresh().properties == t.properties
    assert "d" in other.properties and "c" not in other.properties
    # an exception inside the block discards the changes
    with pytest.raises(RuntimeError), t.transaction() as tx:
        tx.set_properties(never="x")
        raise RuntimeError("boom")
    assert "never" not in catalog.load_table("db.t").properties
    assert len(catalog.load_table("db.t").metadata_log()) == 3


def test_a_property_named_properties_is_set_from_keywords(catalog: Catalog) -> None:
    """``set_properties(**{"properties": "x"})`` filled the mapping parameter instead of
    setting a property named ``properties`` (and type checkers refused ``**dict`` calls)."""
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", _schema())
    t.set_properties(**{"properties": "x", "write.wap.enabled": "true"})
    assert t.properties["properties"] == "x" and t.properties["write.wap.enabled"] == "true"
    with t.transaction() as tx:
        tx.set_properties({"a": "1"}, **{"properties": "y"})
    assert catalog.load_table("db.t").properties["properties"] == "y"
    assert t.properties["a"] == "1"


def test_gzip_metadata_and_version_numbers(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table(
        "db.t", _schema(), properties={"write.metadata.compression-codec": "gzip"}
    )
    t.set_properties(x="1")
    meta_dir, name = t.metadata_location.rsplit("/", 1)
    assert name.endswith(".gz.metadata.json")
    body = json.loads(gzip.decompress(catalog.io.new_input(t.metadata_location).read()))
    assert body["properties"]["x"] == "1"
    if isinstance(catalog, HadoopCatalog):
        assert name == "v2.gz.metadata.json"
        hint = catalog.io.new_input(f"{meta_dir}/version-hint.text").read()
        assert hint.decode().strip() == "2"
    else:
        assert name.startswith("00001-")
    assert catalog.load_table("db.t").properties["x"] == "1"


def test_delete_after_commit_keeps_previous_versions_max(catalog: Catalog) -> None:
    catalog.create_namespace("db")
    t = catalog.create_table(
        "db.t",
        _schema(),
        properties={
            "write.metadata.delete-after-commit.enabled": "true",
            "write.metadata.previous-versions-max": "2",
        },
    )
    created = [t.metadata_location]
    for i in range(4):
        t.set_properties(n=str(i))
        created.append(t.metadata_location)
    logged = [e.metadata_file for e in t.metadata_log()]
    assert logged == created[-3:-1]
    meta_dir = t.metadata_location.rsplit("/", 1)[0]
    stored = sorted(n for n, _ in catalog.io.list_dir(meta_dir) if n.endswith(".metadata.json"))
    assert stored == sorted(x.rsplit("/", 1)[1] for x in created[-3:])


def test_rename_drop_purge_register(catalog: Catalog, tmp_path: Path) -> None:
    catalog.create_namespace("db")
    catalog.create_namespace("db2")
    t = catalog.create_table("db.t", _schema())
    t.set_properties(k="v")
    location = t.location
    if isinstance(catalog, (SqlCatalog, RestCatalog)):
        renamed = catalog.rename_table("db.t", "db2.r")
        assert renamed.identifier == ("db2", "r") and renamed.properties["k"] == "v"
        assert not catalog.table_exists("db.t") and catalog.list_tables("db2") == [("db2", "r")]
        with pytest.raises(NoSuchTableError):
            catalog.rename_table("db.t", "db2.x")
        elsewhere = catalog.properties["warehouse"].rstrip("/") + "-elsewhere"
        if isinstance(catalog, RestCatalog):  # a warehouse name: the server refuses relative
            elsewhere = str(tmp_path / "elsewhere")
        catalog.create_table("db.t", _schema(), location=elsewhere)
        with pytest.raises(TableAlreadyExistsError):
            catalog.rename_table("db.t", "db2.r")
        with pytest.raises(NoSuchNamespaceError):
            catalog.rename_table("db2.r", "nowhere.r")
        # the current metadata of a table cannot be registered under a second name
        with pytest.raises(TableAlreadyExistsError, match=r"'db2\.r'"):
            catalog.register_table("db.copy", renamed.metadata_location)
        catalog.drop_table("db2.r")  # no purge: files stay
        assert catalog.io.exists(renamed.metadata_location)
        reg = catalog.register_table("db.copy", renamed.metadata_location)
        assert reg.metadata == renamed.metadata
        with pytest.raises(TableAlreadyExistsError):
            catalog.register_table("db.copy", renamed.metadata_location)
        catalog.drop_table("db.copy", purge=True)
        assert not catalog.table_exists("db.copy")
    else:
        with pytest.raises(UnsupportedFeatureError, match="rename"):
            catalog.rename_table("db.t", "db2.r")
        with pytest.raises(UnsupportedFeatureError, match="register"):
            catalog.register_table("db.x", t.metadata_location)
        catalog.drop_table("db.t", purge=True)
        assert not catalog.table_exists("db.t")
    assert not list(catalog.io.list_prefix(location))
    with pytest.raises(NoSuchTableError):
        catalog.drop_table("db.t2")


def test_one_table_registered_under_two_names_keeps_its_files_when_either_is_purged(
    catalog: Catalog,
) -> None:
    """Registering a table's current metadata under a second name is refused (the twin's
    purge deleted the first table's metadata and data). A twin registered from an older
    metadata file of the table is the same table too (same UUID): purging either drops only
    its entry and keeps the files the other still reads."""
    if isinstance(catalog, HadoopCatalog):
        pytest.skip("the file-system catalog cannot register tables")
    catalog.create_namespace("a")
    y = catalog.create_table("a.y", _schema())
    y.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]}))
    first = catalog.load_table("a.y").metadata_location
    with pytest.raises(TableAlreadyExistsError, match=r"'a\.y'"):
        catalog.register_table("a.twin", first)
    if first.startswith("file://"):  # the same file, written as a path
        with pytest.raises(TableAlreadyExistsError, match=r"'a\.y'"):
            catalog.register_table("a.twin", first[len("file://") :])
    assert catalog.list_tables("a") == [("a", "y")]
    # under its own name the name is what is taken (Java's catalog tests expect this message)
    with pytest.raises(
        TableAlreadyExistsError, match=r"(table 'a\.y' already exists|Table already exists: a\.y)$"
    ):
        catalog.register_table("a.y", first)

    y.append(pa.table({"id": pa.array([4], pa.int64()), "name": ["d"]}))
    catalog.register_table("a.old", first)  # an older file of the live a.y
    catalog.purge_table("a.old")
    assert catalog.list_tables("a") == [("a", "y")]
    assert catalog.load_table("a.y").scan().to_arrow().num_rows == 4

    catalog.register_table("a.old", first)
    catalog.purge_table("a.y")  # its metadata log holds a.old's file
    assert catalog.list_tables("a") == [("a", "old")]
    assert catalog.load_table("a.old").scan().to_arrow().num_rows == 3


def test_tables_and_views_whose_metadata_is_gone_are_renamed_and_dropped(
    catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    """As in Java's catalogs, a rename only moves the catalog entry and a purge that cannot
    read the table's metadata still drops it (its files are left): the metadata file is
    read neither to rename nor to drop."""
    catalog.create_namespace("db")
    catalog.create_namespace("db2")
    t = catalog.create_table("db.t", _schema())
    t.set_properties(k="v")
    for f in t.io.list_prefix(t.location):
        if f.location.endswith(".metadata.json"):
            t.io.delete(f.location)
    if isinstance(catalog, HadoopCatalog):  # its tables are their metadata files
        assert not catalog.table_exists("db.t")
        return
    name = "db.t"
    if isinstance(catalog, (SqlCatalog, RestCatalog)):
        with pytest.raises(IcebergError, match=r"the rename to 'db2\.r' was done"):
            catalog.rename_table("db.t", "db2.r")
        assert catalog.list_tables("db2") == [("db2", "r")] and not catalog.table_exists("db.t")
        name = "db2.r"
        schema = pa.schema([("id", pa.int64())])
        view = catalog.create_view("db.v", "select 1 as id", schema, dialect="spark")
        t.io.delete(view.metadata_location)
        with pytest.raises(IcebergError, match=r"the rename to 'db2\.w' was done"):
            catalog.rename_view("db.v", "db2.w")
        assert catalog.list_views("db2") == [("db2", "w")]
        catalog.drop_view("db2.w")
        assert not catalog.list_views("db2")
    with caplog.at_level(logging.WARNING, logger="icefloe.catalog.base"):
        catalog.drop_table(name, purge=True)
    assert not catalog.table_exists(name)
    if not isinstance(catalog, RestCatalog):
        assert "dropping it without deleting its files" in caplog.text


def test_concurrent_registrations_of_one_file_under_two_names_one_wins(
    sql_catalog: SqlCatalog,
) -> None:
    """Two registrations of one metadata file under two names, each checking that no table's
    current metadata is that file before inserting its entry: held at the insert until both
    are there, both passed the check and both entries were made (each one's purge would then
    delete the other's files). The check and the insert are one transaction under a lock:
    one registration wins, the other is refused naming the winner."""
    import contextlib
    import threading

    from sqlalchemy import event

    if sql_catalog.properties["uri"].endswith(":memory:"):
        pytest.skip("its one connection serves one thread at a time: no insert can be held")
    sql_catalog.create_namespace("db")
    t = sql_catalog.create_table("db.t", _schema())
    t.append(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    location = sql_catalog.load_table("db.t").metadata_location
    sql_catalog.drop_table("db.t")  # the files stay: free to register
    other = SqlCatalog(**{"name": sql_catalog.name, **sql_catalog.properties})
    catalogs = [sql_catalog, other]  # two objects on one database, as two processes
    both_at_insert = threading.Barrier(2, timeout=3)

    def hold_insert(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO ICEBERG_TABLES"):
            # a lock keeps the other registration out: then the wait times out
            with contextlib.suppress(threading.BrokenBarrierError):
                both_at_insert.wait()

    engines = [c.engine for c in catalogs]
    for engine in engines:
        event.listen(engine, "before_cursor_execute", hold_insert)
    outcomes: dict[str, BaseException | None] = {}

    def register(catalog: SqlCatalog, name: str) -> None:
        try:
            catalog.register_table(f"db.{name}", location)
            outcomes[name] = None
        except BaseException as exc:
            outcomes[name] = exc

    threads = [
        threading.Thread(target=register, args=(c, n))
        for c, n in zip(catalogs, ["a", "b"], strict=True)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", hold_insert)
        other.close()
    winners = sorted(n for n, exc in outcomes.items() if exc is None)
    assert len(winners) == 1, outcomes
    (loser,) = (exc for exc in outcomes.values() if exc is not None)
    assert isinstance(loser, TableAlreadyExistsError), loser
    assert f"'db.{winners[0]}'" in str(loser)
    assert sql_catalog.list_tables("db") == [("db", winners[0])]


def test_sql_location_rules(sql_catalog: SqlCatalog, tmp_path: Path) -> None:
    sql_catalog.create_namespace("a", {"location": (tmp_path / "ns_a").as_uri()})
    sql_catalog.create_namespace("b.c")
    ta = sql_catalog.create_table("a.t", _schema())
    assert ta.location == (tmp_path / "ns_a" / "t").as_uri()
    tb = sql_catalog.create_table("b.c.t", _schema())
    assert tb.location == (tmp_path / "warehouse" / "b" / "c" / "t").as_uri()
    tc = sql_catalog.create_table(
        "b.c.m", _schema(), properties={"write.metadata.path": (tmp_path / "meta").as_uri()}
    )
    assert _local(tc.metadata_location).parent == tmp_path / "meta"


def test_sql_catalog_on_a_v0_database_without_iceberg_type(tmp_path: Path) -> None:
    """Databases created by older Java JDBC catalogs lack ``iceberg_type``: used as they are."""
    from sqlalchemy import create_engine, text

    uri = f"sqlite:///{tmp_path / 'v0.db'}"
    engine = create_engine(uri)
    with engine.begin() as conn:
        conn.execute(
            text(
                "CREATE TABLE iceberg_tables (catalog_name VARCHAR(255) NOT NULL, "
                "table_namespace VARCHAR(255) NOT NULL, table_name VARCHAR(255) NOT NULL, "
                "metadata_location VARCHAR(1000), previous_metadata_location VARCHAR(1000), "
                "PRIMARY KEY (catalog_name, table_namespace, table_name))"
            )
        )
        conn.execute(
            text(
                "CREATE TABLE iceberg_namespace_properties (catalog_name VARCHAR(255) NOT NULL, "
                "namespace VARCHAR(255) NOT NULL, property_key VARCHAR(255), "
                "property_value VARCHAR(1000), "
                "PRIMARY KEY (catalog_name, namespace, property_key))"
            )
        )
    engine.dispose()
    cat = SqlCatalog("old", uri=uri, warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", _schema())
    t.set_properties(a="1")
    assert cat.list_tables("db") == [("db", "t")]
    assert cat.load_table("db.t").properties["a"] == "1"
    cat.close()


def test_hadoop_version_hint_is_only_a_hint(tmp_path: Path) -> None:
    cat = HadoopCatalog("fs", warehouse=str(tmp_path))
    cat.create_namespace("db")
    t = cat.create_table("db.t", _schema())
    t.set_properties(a="1")
    t.set_properties(b="2")
    hint = tmp_path / "db" / "t" / "metadata" / "version-hint.text"
    assert hint.read_text() == "3"
    hint.write_text("2")  # stale: a writer died between the commit and the hint update
    assert cat.load_table("db.t").properties["b"] == "2"
    hint.write_text("garbage")
    assert cat.load_table("db.t").metadata_location.endswith("/v3.metadata.json")
    hint.unlink()
    assert cat.load_table("db.t").metadata_location.endswith("/v3.metadata.json")
    # a directory without metadata files is not a table
    (tmp_path / "db" / "empty" / "metadata").mkdir(parents=True)
    assert not cat.table_exists("db.empty")


def test_hadoop_directories_not_named_in_utf8_are_skipped(tmp_path: Path) -> None:
    """A directory whose name is not UTF-8 (left by a tool in a Latin-1 locale) in the
    warehouse or a namespace made every listing fail with a bare UnicodeDecodeError; it names
    no namespace or table, so the listings skip it. It still keeps its namespace from being
    dropped, as any other directory does."""
    import os

    cat = HadoopCatalog("fs", warehouse=str(tmp_path))
    cat.create_namespace("db")
    cat.create_table("db.t", _schema())
    os.mkdir(bytes(tmp_path) + b"/junk\xff")
    os.mkdir(bytes(tmp_path) + b"/db/junk\xff")
    os.mkdir(bytes(tmp_path) + b"/db/t/metadata/junk\xff")
    assert cat.list_namespaces() == [("db",)]
    assert cat.list_tables("db") == [("db", "t")]
    assert cat.list_namespaces("db") == []
    assert cat.load_table("db.t").metadata_location.endswith("/v1.metadata.json")
    cat.drop_table("db.t")
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("db")
    assert os.path.isdir(bytes(tmp_path) + b"/db/junk\xff")


def test_renaming_a_table_to_its_own_name_changes_nothing(catalog: Catalog) -> None:
    """As Java's JDBC and in-memory catalogs (and icefloe's views): nothing to do, the table
    returned; a table that does not exist is still NoSuchTableError. Through ``icefloe serve``
    too. The file-system catalog renames nothing (as Java's)."""
    catalog.create_namespace("db")
    t = catalog.create_table("db.t", _schema())
    if isinstance(catalog, HadoopCatalog):
        with pytest.raises(UnsupportedFeatureError, match="rename"):
            catalog.rename_table("db.t", "db.t")
        return
    same = catalog.rename_table("db.t", ("db", "t"))
    assert same.identifier == ("db", "t") and same.metadata_location == t.metadata_location
    assert catalog.list_tables("db") == [("db", "t")]
    with pytest.raises(NoSuchTableError):
        catalog.rename_table("db.u", "db.u")
    assert not catalog.table_exists("db.u")


def test_purge_after_rename_keeps_the_new_table_of_the_old_name(catalog: Catalog) -> None:
    """A renamed table keeps its location; a new table of the old name gets the same default
    location. Purging the renamed one deletes only its own files."""
    import pyarrow as pa

    if isinstance(catalog, HadoopCatalog):
        pytest.skip("the file-system catalog cannot rename")
    catalog.create_namespace("db")
    first = catalog.create_table("db.t", _schema())
    first.append(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    catalog.rename_table("db.t", "db.old")
    second = catalog.create_table("db.t", _schema())
    second.append(pa.table({"id": pa.array([2], pa.int64()), "name": ["b"]}))
    assert second.location == first.location
    catalog.drop_table("db.old", purge=True)
    again = catalog.load_table("db.t")
    assert again.scan().to_arrow()["id"].to_pylist() == [2]
    assert not catalog.io.exists(first.metadata_location)  # the purged table's files are gone
    assert catalog.io.exists(again.metadata_location)


def test_a_stale_table_object_never_commits_into_its_successor(catalog: Catalog) -> None:
    """A table dropped (or renamed away) and created again under its name is another table
    (another UUID): a change through an object loaded before is refused, as the reference
    refuses it, and the new table is untouched; the object refreshes no more either."""
    import pyarrow as pa

    catalog.create_namespace("db")
    stale = catalog.create_table("db.t", _schema())
    stale.append(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    renamed = not isinstance(catalog, HadoopCatalog)  # which renames nothing
    if renamed:
        catalog.rename_table("db.t", "db.moved")
    else:
        catalog.drop_table("db.t")
    other = Schema(NestedField(1, "name", StringType()), NestedField(2, "id", LongType()))
    fresh = catalog.create_table("db.t", other)
    fresh.append(pa.table({"name": ["x"], "id": pa.array([100], pa.int64())}))
    before = catalog.load_table("db.t").metadata_location
    # a dropped Hadoop table's files go with it: the append fails reading its own snapshot
    refused = NoSuchTableError if renamed else (NoSuchTableError, NotFoundError)
    with pytest.raises(refused):
        stale.append(pa.table({"id": pa.array([2], pa.int64()), "name": ["b"]}))
    with pytest.raises(NoSuchTableError, match="UUID"):
        stale.refresh()
    now = catalog.load_table("db.t")
    assert now.metadata_location == before
    assert now.scan().to_arrow().to_pylist() == [{"name": "x", "id": 100}]
    if renamed:
        assert catalog.load_table("db.moved").scan().to_arrow().num_rows == 1


@pytest.mark.parametrize("purge", [False, True])
def test_a_write_after_the_drop_leaves_no_directory(catalog: Catalog, purge: bool) -> None:
    """A write through a table object loaded before the table was dropped fails and leaves
    nothing, no directory either. Its empty directories were left, which a file-system
    catalog listed as a namespace inside ``db`` that kept ``db`` from being dropped."""
    import pyarrow as pa

    catalog.create_namespace("db")
    t = catalog.create_table("db.t", _schema())
    t.append(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    stale = catalog.load_table("db.t")
    catalog.drop_table("db.t", purge=purge)
    dirs = [t.location, f"{t.location}/data", f"{t.location}/metadata"]
    files = sorted(f.location for f in t.io.list_prefix(t.location))
    missing = [_missing(t.io, d) for d in dirs]
    with pytest.raises(NoSuchTableError):
        stale.append(pa.table({"id": pa.array([2], pa.int64()), "name": ["b"]}))
    assert sorted(f.location for f in t.io.list_prefix(t.location)) == files
    assert [_missing(t.io, d) for d in dirs] == missing
    assert catalog.list_namespaces("db") == [] and catalog.list_tables("db") == []
    catalog.drop_namespace("db")


def test_staged_create_on_every_catalog(catalog: Catalog) -> None:
    import pyarrow as pa

    catalog.create_namespace("db")
    tx = catalog.create_table_transaction("db.staged", _schema())
    assert not catalog.table_exists("db.staged")  # nothing exists before the commit
    tx.append(pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]}))
    tx.commit_transaction()
    t = catalog.load_table("db.staged")
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == [1, 2]
    assert len(t.snapshots()) == 1
    # a staged create with no other change still creates its (empty) table
    bare = catalog.create_table_transaction("db.bare", _schema()).commit_transaction()
    assert bare.metadata_location
    assert catalog.table_exists("db.bare")
    assert catalog.load_table("db.bare").metadata_location == bare.metadata_location
    # the name taken meanwhile: refused, and the transaction's files are deleted
    tx = catalog.create_table_transaction("db.taken", _schema())
    tx.append(pa.table({"id": pa.array([3], pa.int64()), "name": ["c"]}))
    catalog.create_table("db.taken", _schema())
    with pytest.raises(TableAlreadyExistsError):
        tx.commit_transaction()
    left = [f.location for f in tx.table.io.list_prefix(tx.table.location)]
    assert not any(p.endswith(".parquet") for p in left)
    assert catalog.load_table("db.taken").scan().to_arrow().num_rows == 0
    # discarded (its block raised): nothing is left, no directory either, which a file-system
    # catalog would list as a namespace that keeps db from being dropped
    with pytest.raises(RuntimeError), catalog.create_table_transaction("db.gone", _schema()) as tx:
        tx.append(pa.table({"id": pa.array([4], pa.int64()), "name": ["d"]}))
        raise RuntimeError("the job failed")
    assert not catalog.table_exists("db.gone")
    assert list(tx.table.io.list_prefix(tx.table.location)) == []
    assert catalog.list_namespaces("db") == []
    # in a nested namespace that has no directory yet (SQL catalogs make none): the
    # namespaces' directories its writes made go too
    catalog.create_namespace("db.sub")
    nested = catalog.create_table_transaction("db.sub.gone", _schema())
    parent = nested.table.location.rstrip("/").rsplit("/", 1)[0]  # <warehouse>/db/sub
    dirs = [parent.rsplit("/", 1)[0], parent, nested.table.location]
    before = [_missing(nested.table.io, d) for d in dirs]
    with pytest.raises(RuntimeError), nested as tx:
        tx.append(pa.table({"id": pa.array([5], pa.int64()), "name": ["e"]}))
        raise RuntimeError("the job failed")
    assert [_missing(nested.table.io, d) for d in dirs] == before
    catalog.drop_namespace("db.sub")
    for name in ("db.staged", "db.bare", "db.taken"):
        catalog.drop_table(name, purge=True)
    catalog.drop_namespace("db")
    # its namespace dropped before the commit: refused, as create_table refuses a missing
    # namespace, and the namespace is not made again (the file-system catalog made it again)
    catalog.create_namespace("later", {"owner": "me"})
    tx = catalog.create_table_transaction("later.t", _schema())
    catalog.drop_namespace("later")
    with pytest.raises(NoSuchNamespaceError, match="later"):
        tx.commit_transaction()
    assert not catalog.namespace_exists("later") and catalog.list_namespaces() == []


def test_register_table_stores_a_relative_metadata_path_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stored as given, a relative path only loaded from the directory it was registered in."""
    import pyarrow as pa

    from icefloe.catalog.sql import SqlCatalog
    from icefloe.exceptions import ValidationError

    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    local = Path(t.metadata_location.removeprefix("file://"))
    cat.drop_table("db.t")  # its current metadata file is registered once only
    monkeypatch.chdir(local.parent)
    cat.register_table("db.copy", local.name)
    monkeypatch.chdir(tmp_path)
    copy = cat.load_table("db.copy")
    assert copy.metadata_location == str(local)
    assert copy.scan().to_arrow().num_rows == 1
    for bad in (5, ""):
        with pytest.raises(ValidationError, match="metadata location must be a non-empty string"):
            cat.register_table("db.bad", bad)  # type: ignore[arg-type]


def _missing(io: Any, location: str) -> bool:
    import pyarrow.fs as pafs

    fs, path = io.resolve(location)
    return bool(fs.get_file_info(path).type == pafs.FileType.NotFound)


def test_tables_catalogs_and_scans_pickle_on_every_catalog(catalog: Catalog) -> None:
    """A table (with its catalog) and a scan sent to another process through pickle open the
    catalog again there and can read and commit; an in-memory SQLite catalog, whose tables
    live only in this process, refuses with a clear error instead of an AttributeError."""
    import pickle

    catalog.create_namespace("pk")
    table = catalog.create_table("pk.t", _schema())
    table.append(pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]}))
    if isinstance(catalog, SqlCatalog) and catalog._in_memory:
        with pytest.raises(ValidationError, match="in-memory database"):
            pickle.dumps(table)
        return
    copy = pickle.loads(pickle.dumps(table))
    assert type(copy.catalog) is type(catalog) and copy.catalog.name == catalog.name
    scan = pickle.loads(pickle.dumps(table.scan(row_filter="id > 1")))
    assert sorted(scan.to_arrow().column("id").to_pylist()) == [2, 3]
    copy.append(pa.table({"id": pa.array([4], pa.int64()), "name": ["d"]}))
    reloaded = pickle.loads(pickle.dumps(catalog)).load_table("pk.t")
    assert sorted(reloaded.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3, 4]
    copy.catalog.close()


CODEC = "write.parquet.compression-codec"


def test_new_tables_store_zstd_as_javas_create_does(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every new table stores ``write.parquet.compression-codec=zstd`` (as Iceberg Java 1.4+
    does, so engines whose default is gzip write zstd too); a codec the creator gives is kept,
    and a table made elsewhere without the property keeps its properties as they are."""
    from dataclasses import replace

    sent: list[dict[str, Any]] = []
    if isinstance(catalog, RestCatalog):
        # the server adds the default, not the client (as Java's client)
        call = catalog._call

        def spy(method: str, path: str, what: str, **kw: Any) -> Any:
            if method == "POST" and path.endswith("/tables"):
                sent.append(kw["body"]["properties"])
            return call(method, path, what, **kw)

        monkeypatch.setattr(catalog, "_call", spy)
    catalog.create_namespace("db")
    plain = catalog.create_table("db.plain", _schema(), properties={"owner": "me"})
    assert plain.properties == {CODEC: "zstd", "owner": "me"}
    assert catalog.load_table("db.plain").properties == plain.properties
    gzip_table = catalog.create_table("db.gzip", _schema(), properties={CODEC: "gzip"})
    assert catalog.load_table("db.gzip").properties == {CODEC: "gzip"}
    assert gzip_table.properties == {CODEC: "gzip"}
    with catalog.create_table_transaction("db.staged", _schema(), format_version=3) as tx:
        tx.append(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    assert catalog.load_table("db.staged").properties == {CODEC: "zstd"}
    if isinstance(catalog, RestCatalog):
        assert sent == [{"owner": "me"}, {CODEC: "gzip"}, {"format-version": "3"}]
    # a table another engine created without the property (Java before 1.4, or one that
    # removed it): registering it and committing to it leave its properties as they are
    if isinstance(catalog, HadoopCatalog):
        return  # cannot register
    made = replace(plain.metadata, table_uuid=str(uuid.uuid4()), properties={"owner": "java"})
    location = f"{plain.location}/metadata/00000-java.metadata.json"
    plain.io.new_output(location).write(made.dumps().encode())
    java = catalog.register_table("db.java", location)
    assert java.properties == {"owner": "java"}
    java.append(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    java.set_properties(other="1")
    assert catalog.load_table("db.java").properties == {"owner": "java", "other": "1"}


def test_a_purge_the_store_does_not_answer_keeps_the_table(
    sql_catalog: SqlCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A purge whose read of the table's metadata the store refused or did not answer (an
    outage, wrong keys) dropped the table and deleted none of its files, which then could
    never be found to delete: it now fails and keeps the table, to be dropped again. Only
    metadata that is gone or unreadable still lets the table be dropped without its files."""
    from icefloe.exceptions import FileIOError
    from icefloe.io import InputFile

    sql_catalog.create_namespace("db")
    t = sql_catalog.create_table("db.t", _schema())
    t.append(pa.table({"id": pa.array([1], pa.int64()), "name": ["a"]}))
    root = _local(t.location)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    read = InputFile.read

    def down(self: InputFile, *args: Any, **kwargs: Any) -> Any:
        if self.location.endswith(".metadata.json"):
            raise FileIOError(f"cannot read {self.location}: the endpoint did not answer")
        return read(self, *args, **kwargs)

    monkeypatch.setattr(InputFile, "read", down)
    with pytest.raises(FileIOError, match="did not answer"):
        sql_catalog.drop_table("db.t", purge=True)
    monkeypatch.setattr(InputFile, "read", read)
    assert sql_catalog.table_exists("db.t")
    assert sorted(p for p in root.rglob("*") if p.is_file()) == files
    sql_catalog.drop_table("db.t", purge=True)
    assert not sql_catalog.table_exists("db.t")
    assert not [p for p in root.rglob("*") if p.is_file()]
