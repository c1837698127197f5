"""load_catalog: the embedded default, the YAML file, environment variables and arguments."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from icefloe.catalog import load_catalog
from icefloe.catalog.config import env_properties
from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import ValidationError


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ICEFLOE_CONFIG", raising=False)
    for key in list(__import__("os").environ):
        if key.startswith("ICEFLOE_CATALOG__"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


def test_embedded_default_is_sqlite_under_warehouse(tmp_path: Path) -> None:
    assert not (tmp_path / "warehouse").exists()
    cat = load_catalog()
    assert isinstance(cat, SqlCatalog)
    assert cat.name == "default"
    assert (tmp_path / "warehouse" / "icefloe_catalog.db").is_file()
    assert cat.properties["warehouse"] == (tmp_path / "warehouse").as_uri()
    cat.create_namespace("db")
    cat.close()
    import icefloe

    again = icefloe.load_catalog()
    assert again.list_namespaces() == [("db",)]
    again.close()


def test_properties_given_alone_extend_the_embedded_default(tmp_path: Path) -> None:
    """``load_catalog(**props)`` (``icefloe -p k=v``) adds to the local default catalog."""
    cat = load_catalog(**{"s3.region": "eu-west-1"})
    assert isinstance(cat, SqlCatalog) and cat.name == "default"
    assert cat.properties["s3.region"] == "eu-west-1"
    assert cat.properties["warehouse"] == (tmp_path / "warehouse").as_uri()
    cat.close()


def test_yaml_file_env_and_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "conf.yaml"
    cfg.write_text(
        "default-catalog: lake\n"
        "catalog:\n"
        "  lake:\n"
        "    type: hadoop\n"
        f"    warehouse: {(tmp_path / 'lake').as_uri()}\n"
        "    s3.region: us-east-1\n"
        "  meta:\n"
        f"    uri: sqlite:///{tmp_path / 'meta.db'}\n"
    )
    monkeypatch.setenv("ICEFLOE_CONFIG", str(cfg))
    monkeypatch.setenv("ICEFLOE_CATALOG__LAKE__S3__ACCESS_KEY_ID", "from-env")
    lake = load_catalog()
    assert isinstance(lake, HadoopCatalog) and lake.name == "lake"
    assert lake.properties["s3.access-key-id"] == "from-env"
    assert lake.properties["s3.region"] == "us-east-1"
    lake2 = load_catalog("lake", **{"s3.region": "eu-west-1"})
    assert lake2.properties["s3.region"] == "eu-west-1"
    meta = load_catalog("meta")
    assert isinstance(meta, SqlCatalog)
    assert str(meta.engine.url).endswith("meta.db")
    meta.close()


def test_env_only_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICEFLOE_CATALOG__FS__TYPE", "hadoop")
    monkeypatch.setenv("ICEFLOE_CATALOG__FS__WAREHOUSE", str(tmp_path / "fs"))
    cat = load_catalog("fs")
    assert isinstance(cat, HadoopCatalog)
    assert env_properties({"ICEFLOE_CATALOG__X__WRITE_METADATA__PATH": "v"}) == {
        "x": {"write-metadata.path": "v"}
    }


def test_bad_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ICEFLOE_CONFIG", str(tmp_path / "missing.yaml"))
    with pytest.raises(ValidationError, match=r"missing\.yaml"):
        load_catalog()
    bad = tmp_path / "bad.yaml"
    bad.write_text("catalog: [1, 2\n")
    monkeypatch.setenv("ICEFLOE_CONFIG", str(bad))
    with pytest.raises(ValidationError, match=r"bad\.yaml"):
        load_catalog()
    # a syntax error names the line, never quoting it: it may hold a password or key
    leaky = tmp_path / "leaky.yaml"
    leaky.write_text(
        'catalog:\n  prod:\n    type: sql\n    uri: "postgresql://a:TopSecretPW@db:5432/x\n'
    )
    monkeypatch.setenv("ICEFLOE_CONFIG", str(leaky))
    with pytest.raises(ValidationError, match=r"leaky\.yaml.*line \d+") as caught:
        load_catalog("prod")
    assert "TopSecretPW" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    monkeypatch.delenv("ICEFLOE_CONFIG")
    with pytest.raises(ValidationError, match="unsupported catalog type"):
        load_catalog("x", type="nessie")
    with pytest.raises(ValidationError, match="warehouse"):
        load_catalog("x", type="hadoop")


@pytest.mark.parametrize(
    "props",
    [
        {"uri": "http://[::1"},
        {"uri": "http://127.0.0.1:99999"},
        {"uri": "http://127.0.0.1:abc"},
        {"uri": "http://127.0.0.1:1", "rest.client.socket-timeout-ms": "soon"},
        {"uri": "http://127.0.0.1:1", "rest.client.socket-timeout-ms": "-5"},
        {"uri": "http://127.0.0.1:1", "rest.client.max-connections": "many"},
    ],
)
def test_malformed_rest_settings_are_validation_errors(props: dict[str, str]) -> None:
    """Refused before any request, with the setting named (Python's URL parser raises a bare
    ``ValueError`` for bad hosts and ports)."""
    from icefloe.catalog.rest import RestCatalog

    key = next(k for k in props if k != "uri" or len(props) == 1)
    with pytest.raises(ValidationError, match=re.escape(key)):
        RestCatalog("r", **props)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("s3.connect-timeout", "abc"),
        ("s3.request-timeout", "-1"),
        ("s3.endpoint", "http://[::1"),
        ("s3.endpoint", "http://127.0.0.1:abc"),
        ("s3.path-style-access", "maybe"),
    ],
)
def test_malformed_s3_settings_are_validation_errors(key: str, value: str) -> None:
    """Refused when the file system is made (no request), naming the setting; a path-style
    flag that is not a boolean is not read as false."""
    from icefloe.io import FileIO

    props = {"s3.endpoint": "http://127.0.0.1:1", "s3.access-key-id": "k", key: value}
    props["s3.secret-access-key"] = "s"
    with pytest.raises(ValidationError, match=re.escape(key)):
        FileIO(props).exists("s3://bucket/key")


def test_an_unconfigured_name_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "conf.yaml"
    cfg.write_text(f"catalog:\n  prod:\n    uri: sqlite:///{tmp_path / 'prod.db'}\n")
    monkeypatch.setenv("ICEFLOE_CONFIG", str(cfg))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValidationError, match="no catalog named 'prdo' is configured"):
        load_catalog("prdo")  # a typo must not open an empty local catalog
    assert not (tmp_path / "warehouse").exists()
    load_catalog("prod").close()


def test_sql_uri_errors_are_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from icefloe.exceptions import MissingDependencyError

    for uri in ("notaurl", "postgresql+nosuchdriver://u@h/d"):
        with pytest.raises(ValidationError, match="not a usable SQLAlchemy URL"):
            SqlCatalog("s", uri=uri)
    for uri in ("postgresql://u:Sup3r@Secret@127.0.0.1:1/d", "postgresql://u:Sup@Secret:9@h:1/d"):
        with pytest.raises(ValidationError, match="percent-encode it as %40") as bad:
            SqlCatalog("s", uri=uri)
        assert "Secret" not in str(bad.value)
    with pytest.raises(ValidationError, match="port that is not a number") as bad:
        SqlCatalog("s", uri="postgresql://u:Secret9@h:notaport/d")
    assert "Secret" not in str(bad.value)
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if not installed
    with pytest.raises(MissingDependencyError, match=r"pip install 'icefloe\[postgres\]'") as e:
        SqlCatalog("s", uri="postgresql+psycopg://u:hunter2@127.0.0.1:1/d")
    assert "hunter2" not in str(e.value)


def test_reprs_hide_url_passwords_and_authorization(tmp_path: Path) -> None:
    from icefloe.io import FileIO

    io = FileIO(
        {
            "uri": "postgresql+psycopg://iceberg:hunter2@127.0.0.1:5432/db",
            "header.Authorization": "Bearer abc",
            "warehouse": "s3://bucket/wh",
        }
    )
    text = repr(io)
    assert "hunter2" not in text and "Bearer abc" not in text
    assert "iceberg:***@127.0.0.1" in text and "s3://bucket/wh" in text


@pytest.mark.parametrize("password", ["ab/Pw9Qcd", "ab Pw9Qcd", "ab:Pw9Qcd", "Pw9Q?x"])
def test_url_passwords_with_slashes_or_spaces_stay_hidden(password: str) -> None:
    """A URL password holding ``/``, ``:``, ``?`` or a space (SQLAlchemy connects with
    ``postgresql://user:ab/Pw9Qcd@db/iceberg``) is hidden in the FileIO repr (a SQL catalog's
    ``uri`` is among its tables' FileIO properties) and in the errors for a REST catalog's
    ``uri`` and ``oauth2-server-uri``: it showed in full, or in part quoted by Python's URL
    parser (``Port could not be cast to integer value as 'Pw9Q'``)."""
    from icefloe.catalog.rest import RestCatalog
    from icefloe.exceptions import IcebergError
    from icefloe.io import FileIO

    text = repr(FileIO({"uri": f"postgresql://user:{password}@db.internal/iceberg"}))
    assert "Pw9Q" not in text and "user:***@db.internal/iceberg" in text
    # a user name holding @ (an e-mail address) too
    text = repr(FileIO({"uri": f"postgresql://me@corp.com:{password}@db.internal/iceberg"}))
    assert "Pw9Q" not in text and "me@corp.com:***@db.internal/iceberg" in text
    for props in (
        {"uri": f"http://user:{password}@127.0.0.1:1"},
        {
            "uri": "http://127.0.0.1:1",
            "credential": "a:b",
            "oauth2-server-uri": f"http://user:{password}@127.0.0.1:1/tok",
        },
    ):
        with pytest.raises(IcebergError) as bad:  # invalid, or nothing listens there
            RestCatalog("c", **props)
        assert "Pw9Q" not in str(bad.value)


def test_url_user_name_without_password_is_hidden() -> None:
    """User information without a password is how Git hosts and gateways take a token
    (``https://TOKEN@host``): it is hidden in reprs and errors like a password, and a user name
    with a password still shows."""
    from icefloe.io import FileIO
    from icefloe.properties import redact_url

    text = repr(FileIO({"warehouse": "https://ghp_Pw9Qtoken@lake.internal/wh"}))
    assert "Pw9Q" not in text and "https://***@lake.internal/wh" in text
    assert redact_url("https://a@corp.com@h:1/x") == "https://***@h:1/x"
    assert redact_url("https://u:Pw9Q@h") == "https://u:***@h"
    # libpq's key passphrase in a PostgreSQL URI's query
    assert redact_url("postgresql+psycopg:///db?sslpassword=Pw9Q&password=P") == (
        "postgresql+psycopg:///db?sslpassword=***&password=***"
    )
    assert (
        redact_url("s3://bucket/key@2024 file:///tmp/a@b") == "s3://bucket/key@2024 file:///tmp/a@b"
    )


@pytest.mark.postgres
def test_javas_jdbc_settings_open_the_same_database(postgres_uri: str, tmp_path: Path) -> None:
    """``jdbc:postgresql://`` URIs with ``jdbc.user`` and ``jdbc.password``, as Iceberg Java's
    JDBC catalog is configured, connect as that user."""
    from sqlalchemy import text

    admin = SqlCatalog("a", uri=postgres_uri, warehouse=str(tmp_path))
    with admin.engine.begin() as conn:
        conn.execute(text("DROP ROLE IF EXISTS lake_writer"))
        conn.execute(text("CREATE ROLE lake_writer LOGIN SUPERUSER PASSWORD 'p@ss:w/rd'"))
    host = postgres_uri.split("@", 1)[1]  # 127.0.0.1:<port>/postgres
    java_style = SqlCatalog(
        "a",
        uri=f"jdbc:postgresql://{host}",
        warehouse=str(tmp_path),
        **{"jdbc.user": "lake_writer", "jdbc.password": "p@ss:w/rd"},
    )
    with java_style.engine.connect() as conn:
        assert conn.execute(text("SELECT current_user")).scalar() == "lake_writer"
    java_style.create_namespace("shared")
    assert ("shared",) in admin.list_namespaces()
    assert "p@ss" not in repr(java_style) and "p@ss" not in repr(java_style.io)
    java_style.close()


def test_javas_catalog_and_timeout_settings(tmp_path: Path) -> None:
    """Iceberg Java's ``jdbc.init-catalog-tables`` is read (icefloe's own name wins), and
    pgjdbc's ``connectTimeout`` / ``loginTimeout`` bound opening a connection unless
    ``connect-timeout`` or the URI's ``connect_timeout`` says otherwise."""
    from icefloe.catalog.sql_jdbc import postgres_connect_args

    db = f"sqlite:///{tmp_path / 'c.db'}"
    with pytest.raises(ValidationError, match="lacks tables"):
        SqlCatalog("s", uri=db, **{"jdbc.init-catalog-tables": "false"})
    SqlCatalog(
        "s", uri=db, init_catalog_tables="true", **{"jdbc.init-catalog-tables": "false"}
    ).close()
    java = {"jdbc.connectTimeout": "10", "jdbc.loginTimeout": "3"}
    assert postgres_connect_args("s", java, {})["connect_timeout"] == 3
    assert postgres_connect_args("s", {**java, "connect-timeout": "7"}, {})["connect_timeout"] == 7
    assert "connect_timeout" not in postgres_connect_args("s", java, {"connect_timeout": "5"})
    # pgjdbc's defaults: connectTimeout 10 s, loginTimeout 0 (none); only both 0 are no limit
    assert postgres_connect_args("s", {"jdbc.loginTimeout": "0"}, {})["connect_timeout"] == 10
    assert postgres_connect_args("s", {"jdbc.loginTimeout": "30"}, {})["connect_timeout"] == 10
    assert (
        postgres_connect_args("s", {"jdbc.connectTimeout": "0"}, {}).get("connect_timeout") is None
    )
    no_limit = {"jdbc.connectTimeout": "0", "jdbc.loginTimeout": "4"}
    assert postgres_connect_args("s", no_limit, {})["connect_timeout"] == 4
    assert postgres_connect_args("s", {}, {})["connect_timeout"] == 10
    args = postgres_connect_args("s", {"jdbc.ssl": "true", "jdbc.tcpKeepAlive": "false"}, {})
    assert args["sslmode"] == "verify-full" and args["keepalives"] == 0
    with pytest.raises(ValidationError, match=r"'jdbc\.sslmode' must be one of") as bad:
        postgres_connect_args("s", {"jdbc.sslmode": "Pw9Q"}, {})
    assert "Pw9Q" not in str(bad.value)
