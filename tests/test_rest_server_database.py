"""The REST server when its SQL catalog's database fails: a request with an ``Idempotency-Key``
is answered as one without (503 ``ServiceUnavailableException`` with an Iceberg error body and
the request's log line, not uvicorn's plain-text 500), because the lookup of the stored answers
goes through the same error mapping as the catalog's work; and an answer that cannot be stored
after its change happened is still given."""

from __future__ import annotations

import json
import logging
import sqlite3
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import ServiceUnavailableError

pytestmark = pytest.mark.rest

ROWS = pa.schema([pa.field("id", pa.int64())])

Reply = tuple[int, str, bytes]  # status, content type, body


def _call(
    url: str,
    method: str,
    path: str,
    body: object = None,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        url + path,
        data=data,
        method=method,
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return int(resp.status), resp.headers["Content-Type"] or "", resp.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.headers["Content-Type"] or "", exc.read()


def _unavailable(reply: Reply) -> dict[str, Any]:
    """The error of a 503 ``ServiceUnavailableException`` answer (checks status and shape)."""
    status, content_type, body = reply
    assert status == 503, reply
    assert content_type.startswith("application/json"), reply
    err = json.loads(body)["error"]
    assert err["code"] == 503 and err["type"] == "ServiceUnavailableException", err
    return dict(err)


def _logged(caplog: pytest.LogCaptureFixture, request: str, status: int) -> int:
    """How many of the server's request log lines name ``request`` ("POST /v1/...") and
    ``status``."""
    line = f'"{request}" {status} '
    return sum(line in r.getMessage() for r in caplog.records if r.name == "icefloe.rest")


@contextmanager
def _own_database(postgres_uri: str) -> Iterator[tuple[str, str, Any]]:
    """A database of the test's own in the shared PostgreSQL server, dropped after: its name,
    its URI and an AUTOCOMMIT engine on the server's default database."""
    import sqlalchemy
    from sqlalchemy.engine import make_url

    name = f"idem_{uuid.uuid4().hex[:12]}"
    admin = sqlalchemy.create_engine(postgres_uri, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
    try:
        yield (
            name,
            make_url(postgres_uri).set(database=name).render_as_string(hide_password=False),
            admin,
        )
    finally:
        with admin.connect() as conn:
            conn.execute(sqlalchemy.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def sqlite_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An in-process server over a SQL catalog on a SQLite file: its URL and the file."""
    pytest.importorskip("uvicorn")
    from icefloe import rest

    db = tmp_path / "catalog.db"
    backing = SqlCatalog("c", uri=f"sqlite:///{db}", warehouse=(tmp_path / "wh").as_uri())
    try:
        with rest.start(backing) as server:
            yield server.url, db
    finally:
        backing.close()


def test_a_failed_lookup_of_stored_answers_is_a_503_and_runs_nothing(
    sqlite_server: tuple[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """The answers' table gone from the SQLite database: a keyed request was uvicorn's
    plain-text 500 with no request log line; it is now a 503 with an Iceberg error body, and
    the namespace is not created."""
    url, db = sqlite_server
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE icefloe_rest_idempotency")
    caplog.set_level(logging.INFO, logger="icefloe.rest")
    key = {"Idempotency-Key": str(uuid.uuid4())}
    err = _unavailable(_call(url, "POST", "/v1/namespaces", {"namespace": ["a"]}, key))
    assert "Idempotency-Key" in err["message"] and "INSERT" not in err["message"]
    assert _logged(caplog, "POST /v1/namespaces", 503) == 1
    client = RestCatalog("r", uri=url)
    assert ("a",) not in client.list_namespaces()
    with pytest.raises(ServiceUnavailableError):
        client.create_namespace("b")  # the client sends a key
    assert ("b",) not in client.list_namespaces()
    assert _call(url, "POST", "/v1/namespaces", {"namespace": ["c"]})[0] == 200  # no key
    client.close()


def test_an_answer_that_cannot_be_kept_is_still_given(
    sqlite_server: tuple[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """A change that happened is answered as such when storing its answer fails (the failure
    logged): an error would have the client resend a change that was made. The retry with the
    key then runs again, as documented."""
    url, db = sqlite_server
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TRIGGER no_room BEFORE INSERT ON icefloe_rest_idempotency "
            "BEGIN SELECT RAISE(ABORT, 'no room for answers'); END"
        )
    caplog.set_level(logging.INFO, logger="icefloe.rest")
    key = {"Idempotency-Key": str(uuid.uuid4())}
    create = {"namespace": ["a"], "properties": {"k": "v"}}
    status, _, body = _call(url, "POST", "/v1/namespaces", create, key)
    assert status == 200 and json.loads(body)["namespace"] == ["a"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("not kept" in w and "no room for answers" in w for w in warnings), warnings
    assert _call(url, "GET", "/v1/namespaces/a")[0] == 200
    assert _call(url, "POST", "/v1/namespaces", create, key)[0] == 409  # run again

    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER no_room")
    key = {"Idempotency-Key": str(uuid.uuid4())}
    first = _call(url, "POST", "/v1/namespaces", {"namespace": ["b"]}, key)
    assert first[0] == 200
    assert _call(url, "POST", "/v1/namespaces", {"namespace": ["b"]}, key) == first  # replayed


@pytest.mark.postgres
def test_an_unreachable_postgresql_is_a_503_with_or_without_an_idempotency_key(
    postgres_uri: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """PostgreSQL refusing the catalog's connections: creates, drops and commits carrying an
    ``Idempotency-Key`` were answered uvicorn's plain-text 500 (icefloe's client raised a bare
    ``IcebergError``); they are 503 ``ServiceUnavailableException`` with an Iceberg error body
    and a request log line, as without a key, and nothing answered then is replayed once the
    database is back."""
    pytest.importorskip("uvicorn")

    from icefloe import rest

    with _own_database(postgres_uri) as (name, uri, admin):
        _unreachable_postgresql(rest, name, uri, admin, tmp_path, caplog)


def _unreachable_postgresql(
    rest: Any, name: str, uri: str, admin: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import sqlalchemy

    def admit(allowed: bool) -> None:
        """Let connections to the test's own database in, or refuse them and end those open."""
        with admin.connect() as conn:
            conn.execute(sqlalchemy.text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {allowed}'))
            if not allowed:
                conn.execute(
                    sqlalchemy.text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"
                    ),
                    {"n": name},
                )

    backing = SqlCatalog("pg", uri=uri, warehouse=(tmp_path / "wh").as_uri())
    try:
        with rest.start(backing) as server:
            client = RestCatalog("r", uri=server.url)
            client.create_namespace("ok")
            client.create_table("ok.t", ROWS)
            admit(False)
            caplog.set_level(logging.INFO, logger="icefloe.rest")
            keys = [str(uuid.uuid4()) for _ in range(3)]
            commit = {"requirements": [], "updates": [{"action": "set-properties", "updates": {}}]}
            requests: list[tuple[str, str, object]] = [
                ("POST", "/v1/namespaces", {"namespace": ["n1"]}),
                ("DELETE", "/v1/namespaces/ok/tables/t", None),
                ("POST", "/v1/namespaces/ok/tables/t", commit),
            ]
            for (method, path, body), key in zip(requests, keys, strict=True):
                without = _unavailable(_call(server.url, method, path, body))
                sent = _call(server.url, method, path, body, {"Idempotency-Key": key})
                keyed = _unavailable(sent)
                assert "catalog database" in without["message"]
                assert "Idempotency-Key" in keyed["message"]
                assert _logged(caplog, f"{method} {path}", 503) == 2
            with pytest.raises(ServiceUnavailableError):
                client.create_namespace("n2")

            admit(True)
            first = {"Idempotency-Key": keys[0]}
            again = _call(server.url, "POST", "/v1/namespaces", {"namespace": ["n1"]}, first)
            assert again[0] == 200  # run now: the 503 was not kept
            client.create_namespace("n2")
            assert {("n1",), ("n2",)} <= set(client.list_namespaces())
            assert client.table_exists("ok.t")
            client.close()
    finally:
        backing.close()
        admit(False)


@pytest.mark.postgres
def test_a_key_wider_than_its_column_is_still_kept_on_postgresql(
    postgres_uri: str, tmp_path: Path
) -> None:
    """PostgreSQL refuses a value wider than the key column (255): a 300-character key's
    answer was given but not kept, so its retry ran again (409). It is kept as a digest."""
    pytest.importorskip("uvicorn")
    from icefloe import rest

    with _own_database(postgres_uri) as (_, uri, _admin):
        backing = SqlCatalog("pg", uri=uri, warehouse=(tmp_path / "wh").as_uri())
        try:
            with rest.start(backing) as server:
                wide = {"Idempotency-Key": "k" * 300}
                other = {"Idempotency-Key": "k" * 299 + "j"}
                first = _call(server.url, "POST", "/v1/namespaces", {"namespace": ["a"]}, wide)
                assert first[0] == 200
                again = _call(server.url, "POST", "/v1/namespaces", {"namespace": ["a"]}, wide)
                assert again == first  # replayed, not run again
                # another wide key is another key (its digest differs): run, and refused as taken
                assert (
                    _call(server.url, "POST", "/v1/namespaces", {"namespace": ["a"]}, other)[0]
                    == 409
                )
        finally:
            backing.close()
