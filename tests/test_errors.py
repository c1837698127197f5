"""The Rust core's errors and panics arrive as the icefloe exception hierarchy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import icefloe
from icefloe import _native
from icefloe.exceptions import (
    CorruptFileError,
    IcebergError,
    InternalError,
    UnsupportedFeatureError,
    ValidationError,
)


def test_version_matches_package() -> None:
    from importlib.metadata import version

    assert icefloe.__version__ == version("icefloe")


@pytest.mark.parametrize(
    ("kind", "cls"),
    [
        ("validation", ValidationError),
        ("corrupt", CorruptFileError),
        ("unsupported", UnsupportedFeatureError),
        ("internal", InternalError),
    ],
)
def test_rust_errors_map_to_hierarchy(kind: str, cls: type[IcebergError]) -> None:
    with pytest.raises(cls, match="the offending value 42") as info:
        _native._debug_error(kind, "the offending value 42")
    assert type(info.value) is cls
    assert isinstance(info.value, IcebergError)


def test_panic_becomes_internal_error_not_abort() -> None:
    with pytest.raises(InternalError, match="boom at 7"):
        _native._debug_panic("boom at 7")
    # The interpreter and the extension are still usable afterwards.
    with pytest.raises(ValidationError):
        _native._debug_error("validation", "still alive")


def test_sql_catalog_database_failures_are_typed(tmp_path: Path) -> None:
    """A database that cannot be opened or reached raises ServiceUnavailableError with the
    driver's message, no SQL and no password."""
    from icefloe.catalog import load_catalog
    from icefloe.exceptions import ServiceUnavailableError

    missing = tmp_path / "no" / "such" / "dir" / "c.db"
    with pytest.raises(ServiceUnavailableError, match="unable to open database file"):
        load_catalog("x", type="sql", uri=f"sqlite:///{missing}", warehouse=str(tmp_path))
    pytest.importorskip("psycopg")
    with pytest.raises(ServiceUnavailableError) as err:
        load_catalog(
            "x",
            type="sql",
            uri="postgresql+psycopg://someone:hunter2secret@127.0.0.1:1/iceberg",
            warehouse=str(tmp_path),
        )
    assert "hunter2secret" not in str(err.value)
    assert "SELECT" not in str(err.value).upper()


def test_a_postgresql_host_that_never_answers_times_out(tmp_path: Path) -> None:
    """A host that accepts the connection and says nothing (a hung proxy) is a
    ServiceUnavailableError after ``connect-timeout`` seconds, not libpq's two minutes."""
    import socket
    import time

    from icefloe.catalog import load_catalog
    from icefloe.exceptions import ServiceUnavailableError

    pytest.importorskip("psycopg")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        start = time.monotonic()
        with pytest.raises(ServiceUnavailableError):
            load_catalog(
                "x",
                type="sql",
                uri=f"postgresql+psycopg://u:pw@127.0.0.1:{port}/iceberg",
                warehouse=str(tmp_path),
                **{"connect-timeout": "1"},
            )
        assert time.monotonic() - start < 30


def test_an_unreachable_rest_server_is_service_unavailable() -> None:
    import socket

    from icefloe.catalog.rest import RestCatalog
    from icefloe.exceptions import ServiceUnavailableError

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ServiceUnavailableError):
        RestCatalog("r", uri=f"http://127.0.0.1:{port}")


@pytest.mark.postgres
def test_values_too_long_for_postgresql_columns_are_validation_errors(
    tmp_path: Path, postgres_uri: str
) -> None:
    """The catalog's columns hold 255 characters (names, property keys) and 1,000 (property
    values, metadata locations): PostgreSQL refuses longer ones, which is bad input (no retry
    helps), named without the SQL statement, and nothing changes."""
    import pyarrow as pa

    from icefloe.catalog.sql import SqlCatalog
    from icefloe.exceptions import ValidationError

    cat = SqlCatalog(
        f"long_{tmp_path.name[-12:]}".replace("-", "_"),
        uri=postgres_uri,
        warehouse=(tmp_path / "wh").as_uri(),
    )
    cat.create_namespace("db")
    with pytest.raises(ValidationError, match="255 characters") as info:
        cat.create_namespace(("a" * 200, "b" * 200))
    assert "SQL:" not in str(info.value) and "parameters" not in str(info.value)
    with pytest.raises(ValidationError, match="1,000"):
        cat.update_namespace_properties("db", updates={"k": "v" * 1001})
    t = cat.create_table("db.t", pa.schema([("id", pa.int64())]))
    deep = "/".join("d" * 200 for _ in range(5))
    with pytest.raises(ValidationError, match="does not fit") as info:
        t.set_properties({"write.metadata.path": str(tmp_path / deep)})
    assert "SQL:" not in str(info.value)
    assert "write.metadata.path" not in cat.load_table("db.t").properties
    t.refresh().append(pa.table({"id": [1]}))
    assert cat.load_table("db.t").scan().count() == 1
    cat.close()


@pytest.mark.postgres
def test_a_table_whose_location_is_too_long_for_postgresql_leaves_no_file(
    tmp_path: Path, postgres_uri: str
) -> None:
    """``create_table`` refused because its metadata location does not fit PostgreSQL's
    column: no table, and the metadata file it wrote first is deleted again (it was left
    behind, in a directory no table owns)."""
    import pyarrow as pa

    from icefloe.catalog.sql import SqlCatalog
    from icefloe.exceptions import ValidationError

    cat = SqlCatalog(
        f"longloc_{tmp_path.name[-12:]}".replace("-", "_"),
        uri=postgres_uri,
        warehouse=(tmp_path / "wh").as_uri(),
    )
    cat.create_namespace("db")
    deep = tmp_path / "/".join("d" * 200 for _ in range(5))
    with pytest.raises(ValidationError, match="does not fit"):
        cat.create_table("db.t", pa.schema([("id", pa.int64())]), location=deep.as_uri())
    assert not cat.table_exists("db.t")
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    cat.close()


def test_arguments_of_the_wrong_type_are_validation_errors(tmp_path: Path) -> None:
    """A path where bytes belong, ``None`` where JSON belongs, a number where SQL belongs:
    refused as bad input, not as a Python TypeError from deep inside."""
    import pyarrow as pa

    from icefloe.catalog.sql import SqlCatalog
    from icefloe.manifest import read_manifest, read_manifest_list, read_manifests
    from icefloe.metadata import TableMetadata

    with pytest.raises(ValidationError, match="expected the file's bytes, got str"):
        read_manifest_list("snap-1.avro")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="got NoneType"):
        read_manifest(None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="sequence of manifests' bytes"):
        read_manifests(b"\x00")
    with pytest.raises(ValidationError, match="got str"):
        read_manifests(["m.avro"])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match="names for"):
        read_manifests([b"\x00"], names=["a", "b"])
    with pytest.raises(ValidationError, match="expected JSON text or bytes, got NoneType"):
        TableMetadata.parse(None)  # type: ignore[arg-type]
    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    schema = pa.schema([("id", pa.int64())])
    for sql in (None, 123):
        with pytest.raises(ValidationError, match="SQL text or a dict"):
            catalog.create_view("db.v", sql, schema)  # type: ignore[arg-type]
    assert not catalog.view_exists("db.v")


def test_a_nul_in_a_column_name_is_refused_when_written_and_when_read(tmp_path: Path) -> None:
    """Arrow hands names to native code as C strings, which end at a NUL: such a name is
    refused (a table's metadata holding one is damaged), never a table whose reads fail with
    an Arrow error."""
    import json

    import pyarrow as pa

    from icefloe.catalog.sql import SqlCatalog

    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    with pytest.raises(ValidationError, match="NUL"):
        catalog.create_table("db.bad", pa.schema([("a\x00b", pa.int64())]))
    assert not catalog.table_exists("db.bad")
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64()), ("ts", pa.string())]))
    table.append(pa.table({"id": [1], "ts": ["x"]}))
    with pytest.raises(ValidationError, match="NUL"), table.update_schema() as update:
        update.rename_column("ts", "\x00")
    doc = json.loads(Path(table.metadata_location.removeprefix("file://")).read_text())
    doc["schemas"][0]["fields"][1]["name"] = "\x00"  # as another writer could leave it
    (tmp_path / "nul.metadata.json").write_text(json.dumps(doc))
    with pytest.raises(CorruptFileError, match="holds a NUL character"):
        icefloe.StaticTable.from_metadata(str(tmp_path / "nul.metadata.json")).scan().to_arrow()
    assert table.scan().to_arrow().to_pylist() == [{"id": 1, "ts": "x"}]
    catalog.close()


@pytest.mark.parametrize(
    ("field_type", "required", "words"),
    [
        ("unknown", True, "of type unknown must be optional"),
        ("fixed[99999999999]", False, "fixed length must be between 1 and 2147483647"),
        ("fixed[0]", False, "fixed length must be between"),
    ],
)
def test_metadata_naming_an_impossible_column_is_corrupt(
    tmp_path: Path, field_type: str, required: bool, words: str
) -> None:
    """A required column of type unknown (always null) or a fixed type no file can store, as
    another writer could leave them: the metadata is damaged, not a table whose reads fail
    with a pyarrow error."""
    import json

    import pyarrow as pa

    from icefloe.catalog.sql import SqlCatalog

    catalog = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    catalog.create_namespace("db")
    table = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    doc = json.loads(Path(table.metadata_location.removeprefix("file://")).read_text())
    doc["schemas"][0]["fields"][0].update(type=field_type, required=required)
    (tmp_path / "bad.metadata.json").write_text(json.dumps(doc))
    with pytest.raises(CorruptFileError, match=words):
        icefloe.StaticTable.from_metadata(str(tmp_path / "bad.metadata.json")).scan().to_arrow()
    catalog.close()


def test_view_arguments_of_the_wrong_type_are_validation_errors(tmp_path: Path) -> None:
    """Locations, properties, summaries, UUIDs, dialects and property names of the view API:
    a wrong type is refused as bad input, and nothing is created or changed."""
    import pyarrow as pa

    from icefloe.catalog.sql import SqlCatalog

    c = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=str(tmp_path / "wh"))
    c.create_namespace("a")
    schema = pa.schema([("id", pa.int64())])
    c.create_view("a.v", "SELECT 1", schema, dialect="spark")
    bad: dict[str, Any] = {
        "create location": lambda: c.create_view(
            "a.x", "SELECT 1", schema, dialect="spark", location=5
        ),
        "create bytes": lambda: c.create_view(
            "a.x", "SELECT 1", schema, dialect="spark", location=b"/x"
        ),
        "create properties": lambda: c.create_view(
            "a.x", "SELECT 1", schema, dialect="spark", properties=5
        ),
        "create summary": lambda: c.create_view(
            "a.x", "SELECT 1", schema, dialect="spark", summary=5
        ),
        "replace location": lambda: c.replace_view(
            "a.v", "SELECT 2", schema, dialect="spark", location=5
        ),
        "replace uuid": lambda: c.replace_view(
            "a.v", "SELECT 2", schema, dialect="spark", expect_uuid=5
        ),
        "register": lambda: c.register_view("a.r", 5),
        "removals": lambda: c.load_view("a.v").update_properties(removals=5),
        "sql dialect": lambda: c.load_view("a.v").sql(5),
    }
    for what, call in bad.items():
        with pytest.raises(ValidationError):
            call()
        assert c.list_views("a") == [("a", "v")], what
    assert c.load_view("a.v").sql("spark") == "SELECT 1"
    # a summary naming another engine gets no icefloe version
    view = c.create_view(
        "a.s", "SELECT 3", schema, dialect="spark", summary={"engine-name": "spark"}
    )
    assert view.metadata.current_version.summary == {"engine-name": "spark"}
    c.close()


def test_postgresql_refusals_are_typed_and_final(postgres_uri: str, tmp_path: Path) -> None:
    """What no retry changes is not ServiceUnavailableError: options libpq does not know are
    bad input, a missing privilege is ForbiddenError, and a commit whose UPDATE the database
    refused failed (it did nothing) rather than leaving its outcome unknown."""
    import uuid

    import pyarrow as pa
    import sqlalchemy

    from icefloe.catalog.sql import SqlCatalog
    from icefloe.exceptions import CommitFailedError, ForbiddenError, UnauthorizedError

    name = f"c{uuid.uuid4().hex[:8]}"
    warehouse = (tmp_path / "wh").as_uri()
    owner = SqlCatalog(name, uri=postgres_uri, warehouse=warehouse)
    owner.create_namespace("db")
    table = owner.create_table("db.t", pa.schema([("id", pa.int64())]))
    with pytest.raises(ValidationError, match='invalid connection option "colour"'):
        SqlCatalog(name, uri=postgres_uri + "?colour=blue", warehouse=warehouse)
    with pytest.raises(ValidationError, match="invalid sslmode value"):
        SqlCatalog(name, uri=postgres_uri + "?sslmode=sometimes", warehouse=warehouse)
    with pytest.raises(ValidationError, match="bad value for connect_timeout"):  # psycopg's check
        SqlCatalog(name, uri=postgres_uri + "?connect_timeout=abc", warehouse=warehouse)
    missing = postgres_uri.replace("//icefloe@", f"//nobody_{name}_x@")
    with pytest.raises(UnauthorizedError, match="does not exist"):
        SqlCatalog(name, uri=missing, warehouse=warehouse)
    nobody, reader = f"nobody_{name}", f"reader_{name}"
    engine = sqlalchemy.create_engine(postgres_uri)
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text(f"CREATE ROLE {nobody} LOGIN"))
        conn.execute(sqlalchemy.text(f"CREATE ROLE {reader} LOGIN"))
        conn.execute(sqlalchemy.text(f"CREATE ROLE no{reader} NOLOGIN"))
        for t in ("iceberg_tables", "iceberg_namespace_properties"):
            conn.execute(sqlalchemy.text(f"GRANT SELECT ON {t} TO {reader}"))
    engine.dispose()
    as_role = postgres_uri.replace("//icefloe@", "//{}@")
    with pytest.raises(UnauthorizedError, match="not permitted to log in"):
        SqlCatalog(name, uri=as_role.format(f"no{reader}"), warehouse=warehouse)
    with pytest.raises(ForbiddenError, match="permission denied"):
        SqlCatalog(name, uri=as_role.format(nobody), warehouse=warehouse).load_table("db.t")
    mine = SqlCatalog(name, uri=as_role.format(reader), warehouse=warehouse).load_table("db.t")
    with pytest.raises(CommitFailedError, match="nothing was committed"):
        mine.append(pa.table({"id": pa.array([1], pa.int64())}))
    left = [f.location for f in table.io.list_prefix(table.location)]
    assert not any(p.endswith(".parquet") for p in left)  # the refused commit's files went
    assert owner.load_table("db.t").current_snapshot() is None
