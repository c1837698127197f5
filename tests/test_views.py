"""Views: the metadata model and builder rules (the view spec and Iceberg Java's
``ViewMetadata.Builder``), views in the SQL catalog, through ``icefloe serve`` with icefloe's
REST client, and the catalogs that keep none. Java's own reads and writes of the same views are
in ``test_views_java.py``; Iceberg's view compatibility kit runs in ``test_rest_rck.py``."""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
from pathlib import Path

import pyarrow as pa
import pytest

from icefloe.catalog.base import Catalog
from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.catalog.views import new_version
from icefloe.exceptions import (
    CommitFailedError,
    CorruptFileError,
    NoSuchNamespaceError,
    NoSuchViewError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
    ValidationError,
    ViewAlreadyExistsError,
)
from icefloe.metadata.view_metadata import (
    AddViewVersion,
    AssertViewUUID,
    SetCurrentViewVersion,
    SQLRepresentation,
    UnknownRepresentation,
    ViewMetadata,
    ViewMetadataBuilder,
    ViewVersion,
    apply_view_updates,
    view_update_from_json,
)
from icefloe.schema import NestedField, Schema
from icefloe.types import LongType, StringType
from support.catalogs import first_layout_database
from support.rest import RestServer, new_warehouse

ROWS = pa.schema([pa.field("id", pa.int64()), pa.field("region", pa.string())])
SCHEMA = Schema(NestedField(1, "id", LongType()), NestedField(2, "region", StringType()))


def _version(vid: int, sql: str = "SELECT 1", dialect: str = "spark", **kw: object) -> ViewVersion:
    fields = {
        "version_id": vid,
        "timestamp_ms": 1000 + vid,
        "schema_id": 0,
        "summary": {"engine-name": "test"},
        "representations": (SQLRepresentation(sql, dialect),),
        "default_namespace": ("ns",),
    }
    fields.update(kw)
    return ViewVersion(**fields)  # type: ignore[arg-type]


def _new_view(**properties: str) -> ViewMetadata:
    b = ViewMetadataBuilder(now_ms=5000)
    b.set_location("/tmp/v/")
    b.set_properties(properties)
    b.set_current_version(_version(1), SCHEMA)
    return b.build()


# -- the model ----------------------------------------------------------------------------------
def test_metadata_json_round_trips_with_the_specs_field_names() -> None:
    m = _new_view(comment="c")
    doc = m.to_json()
    assert list(doc) == [
        "view-uuid",
        "format-version",
        "location",
        "properties",
        "schemas",
        "current-version-id",
        "versions",
        "version-log",
    ]
    assert doc["location"] == "/tmp/v"  # a trailing slash is dropped
    assert doc["versions"][0]["representations"] == [
        {"type": "sql", "sql": "SELECT 1", "dialect": "spark"}
    ]
    assert doc["version-log"] == [{"timestamp-ms": 1001, "version-id": 1}]
    assert ViewMetadata.parse(m.to_bytes(compress=True)) == m
    assert ViewMetadata.parse(json.dumps(doc)) == m
    assert gzip.decompress(m.to_bytes(compress=True)) == m.to_bytes()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update({"format-version": 0}), "unsupported view format version: 0"),
        (lambda d: d.update({"current-version-id": 7}), "current version 7 is not among"),
        # which of two versions (or schemas) of one id is meant is undefined: Java refuses
        (lambda d: d["versions"].append(d["versions"][0]), r"version ids \[1\] appear more"),
        (lambda d: d["schemas"].append(d["schemas"][0]), r"schema ids \[0\] appear more"),
        (lambda d: d["versions"][0].update({"schema-id": 3}), "names schema 3"),
        (lambda d: d.pop("view-uuid"), "view-uuid"),
        (lambda d: d["versions"][0].update({"default-namespace": "ns"}), "default-namespace"),
    ],
)
def test_bad_metadata_is_refused_clearly(change: object, message: str) -> None:
    doc = _new_view().to_json()
    change(doc)  # type: ignore[operator]
    with pytest.raises(ValidationError, match=message):
        ViewMetadata.from_json(doc)


def test_a_newer_view_format_is_unsupported_not_corrupt() -> None:
    doc = _new_view().to_json()
    doc["format-version"] = 2
    with pytest.raises(UnsupportedFeatureError, match="unsupported view format version 2"):
        ViewMetadata.from_json(doc)


def test_unknown_representations_are_kept() -> None:
    doc = _new_view().to_json()
    doc["versions"][0]["representations"].append({"type": "substrait", "plan": "AAA"})
    m = ViewMetadata.from_json(doc)
    assert m.current_version.dialects == ["spark"]
    assert m.to_json()["versions"][0]["representations"][1] == {"type": "substrait", "plan": "AAA"}
    # a version with another plan is another version (it was taken for the old one, and the
    # new plan dropped without a word)
    version = dataclasses.replace(m.current_version, version_id=2)
    plan = [*version.representations[:1], UnknownRepresentation("substrait", {"plan": "BBB"})]
    b = ViewMetadataBuilder(m)
    assert b.add_version(dataclasses.replace(version, representations=tuple(plan))) == 2


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ((), "current-version-id"),
        ((), "format-version"),
        (("versions", 0), "version-id"),
        (("versions", 0), "schema-id"),
        (("version-log", 0), "version-id"),
    ],
)
def test_view_ids_are_32_bit_integers(path: tuple[object, ...], key: str) -> None:
    """Ids the view spec types ``int`` past 2^31 - 1 are refused, as Iceberg Java refuses
    them: written, the view was one no Java reader could load."""
    doc = _new_view().to_json()
    target = doc
    for step in path:
        target = target[step]
    target[key] = 3_000_000_000
    with pytest.raises(ValidationError, match=key):
        ViewMetadata.from_json(doc)
    update = {"action": "set-current-view-version", "view-version-id": 3_000_000_000}
    with pytest.raises(ValidationError, match="view-version-id"):
        view_update_from_json(update)


def test_an_equal_version_and_schema_reuse_their_ids() -> None:
    base = _new_view()
    b = ViewMetadataBuilder(base)
    assert b.add_schema(Schema(*SCHEMA.fields, schema_id=9)) == 0
    assert b.add_version(_version(5)) == 1  # same query, schema, namespace, summary
    assert b.add_version(_version(1, "SELECT 2")) == 2  # highest id + 1
    other = Schema(NestedField(1, "id", LongType()))
    assert b.add_schema(other) == 1
    b.set_current_version_id(-1)
    m = b.build()
    assert [v.version_id for v in m.versions] == [1, 2] and m.current_version_id == 2
    assert [type(u).__name__ for u in b.changes] == [
        "AddViewVersion",
        "AddSchema",
        "SetCurrentViewVersion",
    ]
    assert isinstance(b.changes[-1], SetCurrentViewVersion) and b.changes[-1].view_version_id == -1


def test_a_dialect_may_appear_once_and_may_not_be_dropped_unless_allowed() -> None:
    two = (SQLRepresentation("SELECT 1", "spark"), SQLRepresentation("SELECT 1", "Spark"))
    with pytest.raises(ValidationError, match="multiple queries for dialect spark"):
        ViewMetadataBuilder(_new_view()).add_version(_version(2, representations=two))
    base = ViewMetadataBuilder(_new_view())
    both = (SQLRepresentation("SELECT 1", "spark"), SQLRepresentation("SELECT 1", "trino"))
    base.set_current_version(_version(2, representations=both), SCHEMA)
    with_trino = base.build()
    b = ViewMetadataBuilder(with_trino)
    b.set_current_version(_version(3, "SELECT 3"), SCHEMA)
    with pytest.raises(ValidationError, match=r"lose the dialects \['trino'\]"):
        b.build()
    allowed = ViewMetadataBuilder(with_trino)
    allowed.set_properties({"replace.drop-dialect.allowed": "true"})
    allowed.set_current_version(_version(3, "SELECT 3"), SCHEMA)
    assert allowed.build().current_version.dialects == ["spark"]


def test_history_keeps_the_newest_versions_and_the_current_one() -> None:
    m = _new_view(**{"version.history.num-entries": "3"})
    for i in range(2, 7):
        b = ViewMetadataBuilder(m, now_ms=9000 + i)
        b.set_current_version(_version(i, f"SELECT {i}"), SCHEMA)
        m = b.build()
    assert [v.version_id for v in m.versions] == [4, 5, 6]
    assert [e.version_id for e in m.version_log] == [4, 5, 6]
    # making an old version current again keeps it, and logs the time it became current
    b = ViewMetadataBuilder(m, now_ms=77)
    b.set_current_version_id(4)
    again = b.build()
    assert again.current_version_id == 4 and again.version_log[-1].timestamp_ms == 77
    with pytest.raises(ValidationError, match="must be positive"):
        bad = ViewMetadataBuilder(m)
        bad.set_properties({"version.history.num-entries": "0"})
        bad.build()
    # only what Java's Integer.parseInt reads (a stored " 3 " broke Java's later changes)
    for value in (" 3 ", "1_0", "x", "3.0", str(2**31)):
        with pytest.raises(ValidationError, match="must be an integer"):
            bad = ViewMetadataBuilder(m)
            bad.set_properties({"version.history.num-entries": value})
            bad.build()


def test_rest_updates_parse_and_apply() -> None:
    base = _new_view()
    wire = [
        {"action": "add-schema", "schema": Schema(NestedField(1, "x", LongType())).to_json()},
        {"action": "add-view-version", "view-version": {**_version(9).to_json(), "schema-id": -1}},
        {"action": "set-current-view-version", "view-version-id": -1},
        {"action": "set-properties", "updates": {"a": "b"}},
        {"action": "remove-properties", "removals": ["a"]},
    ]
    ups = [view_update_from_json(u) for u in wire]
    assert isinstance(ups[1], AddViewVersion)
    new = apply_view_updates(base, ups)
    # the id as sent: it is above every id the view has (else highest + 1)
    assert new.current_version_id == 9 and [f.name for f in new.schema.fields] == ["x"]
    assert new.properties == {}
    with pytest.raises(ValidationError, match="unknown action 'add-snapshot'"):
        view_update_from_json({"action": "add-snapshot", "snapshot": {}})
    with pytest.raises(CommitFailedError, match="view UUID does not match"):
        AssertViewUUID("other").validate(base)


# -- the SQL catalog ----------------------------------------------------------------------------
@pytest.fixture
def cat(sql_catalog: SqlCatalog) -> SqlCatalog:
    """A SQL catalog on SQLite (file, memory) and PostgreSQL, with namespace ``ns``."""
    sql_catalog.create_namespace("ns")
    return sql_catalog


def test_views_on_every_kind_of_catalog(catalog: Catalog) -> None:
    """Every catalog that keeps views (SQL, on local disk or S3, and REST) creates, replaces
    and drops them the same way; a file-system catalog refuses them."""
    catalog.create_namespace("ns")
    if not catalog.keeps_views:
        with pytest.raises(UnsupportedFeatureError, match="does not keep views"):
            catalog.create_view("ns.v", "SELECT 1", ROWS, dialect="spark")
        return
    catalog.create_view("ns.v", "SELECT 1", ROWS, dialect="spark")
    assert catalog.load_view("ns.v").sql() == "SELECT 1"
    # the name is taken, by no table to load: creating a table "if not exists" says so
    with pytest.raises(TableAlreadyExistsError, match=r"View with same name.*ns\.v"):
        catalog.create_table_if_not_exists("ns.v", ROWS)
    assert not catalog.table_exists("ns.v")
    v = catalog.replace_view("ns.v", "SELECT 2", ROWS, dialect="spark")
    assert v.sql() == "SELECT 2"
    catalog.drop_view("ns.v")
    assert not catalog.view_exists("ns.v") and catalog.list_views("ns") == []
    if isinstance(catalog, SqlCatalog):  # the current metadata file goes, as with Java
        assert not catalog.io.new_input(v.metadata_location).exists()


def test_create_load_replace_and_drop_in_the_sql_catalog(cat: SqlCatalog) -> None:
    v = cat.create_view("ns.v", "SELECT id FROM t", ROWS, dialect="spark", properties={"k": "1"})
    assert v.metadata_location.endswith(".gz.metadata.json")
    assert "/ns/v/metadata/00000-" in v.metadata_location
    loaded = cat.load_view("ns.v")
    assert loaded.sql() == "SELECT id FROM t" and loaded.properties == {"k": "1"}
    assert loaded.current_version.default_namespace == ("ns",)
    assert loaded.current_version.summary["engine-name"] == "icefloe"
    assert [f.name for f in loaded.schema.fields] == ["id", "region"]
    assert cat.list_views("ns") == [("ns", "v")] and cat.list_tables("ns") == []
    queries = {"spark": "SELECT id FROM t WHERE id > 0", "trino": "SELECT id FROM t"}
    replaced = cat.replace_view("ns.v", queries, ROWS)
    assert replaced.current_version.version_id == 2 and replaced.dialects == ["spark", "trino"]
    assert replaced.sql("TRINO") == "SELECT id FROM t"
    with pytest.raises(ValidationError, match="name a dialect"):
        replaced.sql()
    assert "/metadata/00001-" in replaced.metadata_location
    updated = replaced.update_properties({"comment": "ids"}, removals=["k"])
    assert updated.properties == {"comment": "ids"} and updated.refresh().properties == {
        "comment": "ids"
    }
    cat.drop_view("ns.v")
    assert not cat.view_exists("ns.v") and cat.list_views("ns") == []
    with pytest.raises(NoSuchViewError):
        cat.load_view("ns.v")
    with pytest.raises(NoSuchViewError):
        cat.drop_view("ns.v")


def test_tables_and_views_share_names(cat: SqlCatalog) -> None:
    cat.create_table("ns.t", ROWS)
    cat.create_view("ns.v", "SELECT 1", ROWS, dialect="spark")
    with pytest.raises(ViewAlreadyExistsError, match=re.escape("View already exists: ns.v")):
        cat.create_view("ns.v", "SELECT 2", ROWS, dialect="spark")
    with pytest.raises(ViewAlreadyExistsError, match="Table with same name already exists"):
        cat.create_view("ns.t", "SELECT 2", ROWS, dialect="spark")
    with pytest.raises(TableAlreadyExistsError, match="View with same name already exists"):
        cat.create_table("ns.v", ROWS)
    with pytest.raises(TableAlreadyExistsError, match=re.escape("Cannot rename ns.t to ns.v")):
        cat.rename_table("ns.t", "ns.v")
    with pytest.raises(ViewAlreadyExistsError, match=re.escape("Cannot rename ns.v to ns.t")):
        cat.rename_view("ns.v", "ns.t")
    with pytest.raises(NoSuchNamespaceError):
        cat.create_view("nope.v", "SELECT 1", ROWS, dialect="spark")
    with pytest.raises(NoSuchNamespaceError):
        cat.rename_view("ns.v", "nope.v")
    with pytest.raises(NoSuchViewError):
        cat.load_view("ns.t")  # a table is not a view, nor the reverse
    cat.rename_view("ns.v", "ns.w")
    assert cat.list_views("ns") == [("ns", "w")] and cat.list_tables("ns") == [("ns", "t")]
    with pytest.raises(Exception, match="not empty"):
        cat.drop_table("ns.t")
        cat.drop_namespace("ns")  # the view keeps it


def test_register_a_view_and_refuse_files_that_are_not_views(cat: SqlCatalog) -> None:
    gone = cat.create_view("ns.gone", "SELECT 1", ROWS, dialect="spark")
    cat.drop_view("ns.gone")  # its metadata file goes too, as with Java
    assert not cat.io.exists(gone.metadata_location)
    v = cat.create_view(
        "ns.v", "SELECT 1", ROWS, dialect="spark", properties={"gc.enabled": "false"}
    )
    cat.drop_view("ns.v")
    again = cat.register_view("ns.again", v.metadata_location)
    assert again.sql() == "SELECT 1" and again.metadata.view_uuid == v.metadata.view_uuid
    t = cat.create_table("ns.t", ROWS)
    with pytest.raises(CorruptFileError, match="this is table metadata"):
        cat.register_view("ns.bad", t.metadata_location)
    with pytest.raises(ValidationError, match="name the SQL dialect"):
        cat.create_view("ns.x", "SELECT 1", ROWS)
    with pytest.raises(ValidationError, match="needs a query"):
        cat.create_view("ns.x", {}, ROWS)


def test_a_lost_race_is_retried_and_a_replaced_view_is_refused(cat: SqlCatalog) -> None:
    v = cat.create_view("ns.v", "SELECT 1", ROWS, dialect="spark")
    stale = cat.load_view("ns.v")
    cat.replace_view("ns.v", "SELECT 2", ROWS, dialect="spark")
    # the stale object's change applies on top of the other writer's
    done = stale.update_properties({"a": "b"})
    assert done.sql() == "SELECT 2" and done.properties == {"a": "b"}
    # a replace that lost a race becomes current after the winner: the log keeps time order
    stale = cat.load_view("ns.v")
    cat.replace_view("ns.v", "SELECT 'winner'", ROWS, dialect="spark")
    late = new_version(0, ("ns", "v"), "SELECT 'late'", "spark", None, None, None)
    late = dataclasses.replace(late, timestamp_ms=stale.metadata.version_log[-1].timestamp_ms - 1)
    b = ViewMetadataBuilder(stale.metadata)
    b.set_current_version(dataclasses.replace(late, version_id=99), stale.metadata.schema)
    b.build()
    done = cat.commit_view(stale, [AssertViewUUID(stale.metadata.view_uuid)], b.changes)
    times = [e.timestamp_ms for e in done.metadata.version_log]
    assert done.sql() == "SELECT 'late'" and times == sorted(times)
    # the same name, another view: the UUID requirement fails
    cat.drop_view("ns.v")
    cat.create_view("ns.v", "SELECT 3", ROWS, dialect="spark")
    with pytest.raises(CommitFailedError, match="UUID does not match"):
        v.update_properties({"c": "d"})


@pytest.mark.parametrize("same_sql", [False, True])
def test_a_replace_that_lost_a_race_is_made_again_on_the_new_state(
    cat: SqlCatalog, monkeypatch: pytest.MonkeyPatch, same_sql: bool
) -> None:
    """Another writer replaced the view between this replace's load and its commit, with the
    same new schema (or the very same version): the replace is made again on the new state
    and lands after the winner's version (or is the winner's version), as Java's replace is;
    replaying its recorded updates referred to a schema or version "just added" that was not
    added and failed with ValidationError."""
    cat.create_view("ns.v", "SELECT 1 AS id", ROWS, dialect="spark")
    wider = pa.schema([("id", pa.int64()), ("name", pa.string())])
    load = cat.load_view
    raced = []

    def load_then_lose_the_race(identifier: object) -> object:
        view = load(identifier)  # type: ignore[arg-type]
        if not raced:  # the other writer commits (it loads the view again: not raced)
            raced.append(identifier)
            cat.replace_view("ns.v", "SELECT 1, 'w'", wider, dialect="spark")
        return view

    monkeypatch.setattr(cat, "load_view", load_then_lose_the_race)
    sql = "SELECT 1, 'w'" if same_sql else "SELECT 1, 'late'"
    done = cat.replace_view("ns.v", sql, wider, dialect="spark")
    history = [(v.version_id, v.representations[0].sql) for v in done.metadata.versions]
    if same_sql:
        assert history == [(1, "SELECT 1 AS id"), (2, "SELECT 1, 'w'")]
    else:
        assert history == [(1, "SELECT 1 AS id"), (2, "SELECT 1, 'w'"), (3, "SELECT 1, 'late'")]
    assert done.sql() == sql and len(done.metadata.schemas) == 2
    assert load("ns.v").metadata.current_version_id == done.metadata.current_version_id


def test_a_relative_view_location_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # stored relative, the view's metadata was looked for under a later process's directory
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    c = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    c.create_namespace("ns")
    v = c.create_view("ns.v", "SELECT 1", ROWS, dialect="spark", location="rel/v")
    assert v.location == str(tmp_path / "cwd" / "rel" / "v")
    assert v.metadata_location.startswith(f"{tmp_path}/cwd/rel/v/metadata/")
    v2 = c.replace_view("ns.v", "SELECT 2", ROWS, dialect="spark", location="other/../moved")
    assert v2.location == str(tmp_path / "cwd" / "moved")
    monkeypatch.chdir(tmp_path)
    assert c.load_view("ns.v").location == str(tmp_path / "cwd" / "moved")


def test_a_database_of_the_first_layout_has_no_views(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    first_layout_database(db)
    c = SqlCatalog("c", uri=f"sqlite:///{db}", warehouse=str(tmp_path / "wh"))
    c.create_namespace("ns")
    assert c.list_views("ns") == [] and not c.view_exists("ns.v")
    with pytest.raises(UnsupportedFeatureError, match=re.escape("jdbc.schema-version=V1")):
        c.create_view("ns.v", "SELECT 1", ROWS, dialect="spark")
    assert not list((tmp_path / "wh").rglob("*.metadata.json"))  # nothing left behind


def test_a_file_system_catalog_keeps_no_views(tmp_path: Path) -> None:
    c = HadoopCatalog("h", warehouse=str(tmp_path))
    c.create_namespace("ns")
    for call in (
        lambda: c.create_view("ns.v", "SELECT 1", ROWS, dialect="spark"),
        lambda: c.list_views("ns"),
        lambda: c.load_view("ns.v"),
        lambda: c.view_exists("ns.v"),
    ):
        with pytest.raises(UnsupportedFeatureError, match="HadoopCatalog does not keep views"):
            call()
    assert not list(tmp_path.rglob("*.metadata.json"))


# -- icefloe serve and icefloe's REST client ----------------------------------------------------
def test_views_through_icefloe_serve(rest_server: RestServer) -> None:
    warehouse = new_warehouse()
    c = RestCatalog("r", uri=rest_server.url, warehouse=warehouse)
    c.create_namespace("ns")
    c.create_table("ns.t", ROWS)
    v = c.create_view("ns.v", "SELECT id FROM t", ROWS, dialect="spark", properties={"k": "1"})
    assert v.metadata_location.endswith(".gz.metadata.json") and v.properties == {"k": "1"}
    assert c.list_views("ns") == [("ns", "v")] and c.view_exists("ns.v")
    assert not c.view_exists("ns.t") and not c.table_exists("ns.v")
    replaced = c.replace_view("ns.v", {"spark": "SELECT 2", "trino": "SELECT 2"}, ROWS)
    assert replaced.current_version.version_id == 2 and replaced.dialects == ["spark", "trino"]
    with pytest.raises(ValidationError, match="lose the dialects"):
        c.replace_view("ns.v", "SELECT 3", ROWS, dialect="spark")
    kept = replaced.update_properties({"a": "b", "gc.enabled": "false"})  # kept when dropped
    assert kept.properties == {"k": "1", "a": "b", "gc.enabled": "false"}
    with pytest.raises(ViewAlreadyExistsError, match="Table with same name already exists"):
        c.create_view("ns.t", "SELECT 1", ROWS, dialect="spark")
    with pytest.raises(ViewAlreadyExistsError, match="View already exists"):
        c.create_view("ns.v", "SELECT 1", ROWS, dialect="spark")
    with pytest.raises(TableAlreadyExistsError, match="View with same name already exists"):
        c.create_table("ns.v", ROWS)
    renamed = c.rename_view("ns.v", "ns.w")
    assert renamed.sql("spark") == "SELECT 2" and c.list_views("ns") == [("ns", "w")]
    c.drop_view("ns.w")
    registered = c.register_view("ns.back", renamed.metadata_location)
    assert registered.metadata.view_uuid == renamed.metadata.view_uuid
    with pytest.raises(NoSuchViewError):
        c.load_view("ns.w")


# -- found by trying to break them ----------------------------------------------------------------
def test_values_that_are_not_strings_are_refused_before_anything_is_written(
    cat: SqlCatalog,
) -> None:
    """They made a metadata file that neither icefloe nor Java could read again."""
    bad: list[dict[str, object]] = [
        {"properties": {"a": 1}},
        {"properties": {1: "x"}},
        {"summary": {"n": 2}},
        {"default_catalog": 5},
        {"default_namespace": [1, 2]},
    ]
    for kwargs in bad:
        with pytest.raises(ValidationError):
            cat.create_view("ns.v", "SELECT 1", ROWS, dialect="spark", **kwargs)  # type: ignore[arg-type]
    assert cat.list_views("ns") == []
    v = cat.create_view("ns.v", "SELECT 1", ROWS, dialect="spark")
    with pytest.raises(ValidationError, match="strings to strings"):
        v.update_properties({"b": 2})  # type: ignore[dict-item]
    assert cat.load_view("ns.v").properties == {}


def test_a_default_namespace_string_is_one_namespace(cat: SqlCatalog) -> None:
    v = cat.create_view("ns.v", "SELECT 1", ROWS, dialect="spark", default_namespace="sales")
    assert v.current_version.default_namespace == ("sales",)
    w = cat.create_view("ns.w", "SELECT 1", ROWS, dialect="spark", default_namespace="db.sub")
    assert w.current_version.default_namespace == ("db", "sub")


def test_commits_back_off_and_follow_the_views_retry_settings(tmp_path: Path) -> None:
    """Concurrent property updates from several processes: every one lands (they retried four
    times without waiting, and a fifth of them failed)."""
    import subprocess
    import sys
    import textwrap

    db = tmp_path / "c.db"
    c = SqlCatalog("c", uri=f"sqlite:///{db}", warehouse=str(tmp_path / "wh"))
    c.create_namespace("ns")
    c.create_view(
        "ns.v", "SELECT 1", ROWS, dialect="spark", properties={"commit.retry.num-retries": "50"}
    )
    worker = textwrap.dedent(
        f"""
        import sys
        from icefloe.catalog.sql import SqlCatalog
        c = SqlCatalog("c", uri="sqlite:///{db}", warehouse="{tmp_path / "wh"}")
        for i in range(15):
            c.load_view("ns.v").update_properties({{f"p{{sys.argv[1]}}-{{i}}": "x"}})
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", worker, str(n)]) for n in range(4)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0, 0]
    props = c.load_view("ns.v").properties
    assert sum(1 for k in props if k.startswith("p")) == 60


def test_no_change_writes_no_file_and_renaming_to_itself_is_nothing(cat: SqlCatalog) -> None:
    v = cat.create_view("ns.v", "SELECT 1", ROWS, dialect="spark", properties={"a": "b"})
    same = v.update_properties({"a": "b"})
    assert same.metadata_location == v.metadata_location
    again = cat.replace_view("ns.v", "SELECT 1", ROWS, dialect="spark")  # the same version
    assert again.metadata_location == v.metadata_location
    assert cat.rename_view("ns.v", "ns.v").metadata_location == v.metadata_location


def test_a_stale_view_object_does_not_replace_a_view_that_took_its_name(cat: SqlCatalog) -> None:
    stale = cat.create_view("ns.v", "SELECT 1", ROWS, dialect="spark")
    cat.drop_view("ns.v")
    cat.create_view("ns.v", "SELECT 2", ROWS, dialect="spark")
    with pytest.raises(CommitFailedError, match="UUID does not match"):
        stale.replace("SELECT 3", ROWS, dialect="spark")
    assert cat.load_view("ns.v").sql() == "SELECT 2"


def test_an_unknown_metadata_codec_is_refused(cat: SqlCatalog) -> None:
    props = {"write.metadata.compression-codec": "zstd"}
    with pytest.raises(ValidationError, match="gzip or none"):
        cat.create_view("ns.v", "SELECT 1", ROWS, dialect="spark", properties=props)
    plain = {"write.metadata.compression-codec": "NONE"}
    v = cat.create_view("ns.v", "SELECT 1", ROWS, dialect="spark", properties=plain)
    assert v.metadata_location.endswith(".metadata.json")
    assert not v.metadata_location.endswith(".gz.metadata.json")


def test_icefloe_serve_checks_view_names_and_starts_at_version_one(
    rest_server: RestServer,
) -> None:
    import urllib.error
    import urllib.request

    warehouse = new_warehouse()
    c = RestCatalog("r", uri=rest_server.url, warehouse=warehouse)
    c.create_namespace("ns")
    body = {
        "name": "x",
        "schema": SCHEMA.to_json(),
        "view-version": {**_version(-1).to_json(), "version-id": -1},
        "properties": {},
    }

    def post(name: str) -> tuple[int, dict[str, object]]:
        req = urllib.request.Request(
            f"{rest_server.url}/v1/{warehouse}/namespaces/ns/views",
            data=json.dumps({**body, "name": name}).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    for name in ("x\x00y", "a/b", "pct%41"):
        status, _ = post(name)
        assert status == 400, name
    status, made = post("ok")
    assert status == 200
    metadata = made["metadata"]
    assert isinstance(metadata, dict) and metadata["current-version-id"] == 1
