"""The REST server when its SQL catalog's database fails: a request with an ``Idempotency-Key``
is answered as one without (503 ``ServiceUnavailableException`` with an Iceberg error body and
the request's log line, not uvicorn's plain-text 500), because the lookup of the stored answers
goes through the same error mapping as the catalog's work; an answer that cannot be stored
after its change happened is still given; and the retry of a table, view or namespace change
whose answer was not stored (storing it failed, or the server was killed) is answered from the
marker row its change's transaction wrote."""

from __future__ import annotations

import http.client
import json
import logging
import signal
import sqlite3
import threading
import time
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
    key is answered from the marker the change's transaction wrote (answers are refused, the
    marker is not), not run again."""
    url, db = sqlite_server
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TRIGGER no_room BEFORE INSERT ON icefloe_rest_idempotency "
            "WHEN NEW.status <> 0 BEGIN SELECT RAISE(ABORT, 'no room for answers'); END"
        )
    caplog.set_level(logging.INFO, logger="icefloe.rest")
    key = {"Idempotency-Key": str(uuid.uuid4())}
    create = {"namespace": ["a"], "properties": {"k": "v"}}
    status, _, body = _call(url, "POST", "/v1/namespaces", create, key)
    assert status == 200 and json.loads(body)["namespace"] == ["a"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("not kept" in w and "no room for answers" in w for w in warnings), warnings
    assert _call(url, "GET", "/v1/namespaces/a")[0] == 200
    again = _call(url, "POST", "/v1/namespaces", create, key)
    assert again[0] == 200 and json.loads(again[2]) == json.loads(body)  # not run again

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


# -- the change and its answer: a marker row in the change's own transaction ----------------------

SECRET = "s3cret-key-of-the-server-0123"
SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}],
}


def _with_field(last_id: int) -> dict[str, Any]:
    """A commit body that adds a field after ``last_id``, required to find ``last_id`` the
    last assigned field id: run twice, the second is refused (409)."""
    field = {"id": last_id + 1, "name": f"f{last_id + 1}", "required": False, "type": "long"}
    schema = {**SCHEMA, "schema-id": last_id, "fields": [*SCHEMA["fields"], field]}
    return {
        "requirements": [
            {"type": "assert-last-assigned-field-id", "last-assigned-field-id": last_id}
        ],
        "updates": [
            {"action": "add-schema", "schema": schema, "last-column-id": last_id + 1},
            {"action": "set-current-schema", "schema-id": -1},
        ],
    }


class _Answers:
    """Storing answers (``SqlReplies.put``) fails while ``failing`` is set; ``hidden`` keys
    are not found by the next lookup (a request that slipped past it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from icefloe.rest.idempotency import SqlReplies

        self.failing = True
        self.hidden: set[str] = set()
        put, get = SqlReplies.put, SqlReplies.get

        def failing_put(replies: Any, key: str, *args: Any) -> None:
            if self.failing:
                raise ServiceUnavailableError("the answers' database went away")
            put(replies, key, *args)

        def hiding_get(replies: Any, key: str, now: float) -> Any:
            if key in self.hidden:
                self.hidden.discard(key)
                return {}
            return get(replies, key, now)

        monkeypatch.setattr(SqlReplies, "put", failing_put)
        monkeypatch.setattr(SqlReplies, "get", hiding_get)


def _rows(uri: str) -> dict[str, tuple[int, str, bytes]]:
    """The answers' table: key -> (status, request fingerprint, body)."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(uri)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sqlalchemy.text(
                    "SELECT idempotency_key, status, request_hash, body "
                    "FROM icefloe_rest_idempotency"
                )
            ).all()
    finally:
        engine.dispose()
    return {str(k): (int(s), str(h), bytes(b)) for k, s, h, b in rows}


def _same_twice(
    url: str, method: str, path: str, body: object = None, headers: Mapping[str, str] = {}
) -> Reply:
    """Send a keyed request twice: both answers alike and successful; the first returned."""
    key = {"Idempotency-Key": str(uuid.uuid4()), **headers}
    first = _call(url, method, path, body, key)
    assert first[0] in (200, 204), first
    again = _call(url, method, path, body, key)
    assert again[0] == first[0] and json.loads(again[2] or b"null") == json.loads(
        first[2] or b"null"
    ), (first, again)
    return first


def _crash_window(url: str, uri: str, answers: _Answers, warehouse: Path) -> None:
    """Every change of a keyed request made while its answer cannot be stored: the retry gets
    the first answer, rebuilt from the marker, and the catalog changed once."""
    t = "/v1/namespaces/a/tables"
    assert _call(url, "POST", "/v1/namespaces", {"namespace": ["a"]})[0] == 200
    vended = {"X-Iceberg-Access-Delegation": "vended-credentials"}
    created = _same_twice(url, "POST", t, {"name": "t", "schema": SCHEMA}, vended)
    assert json.loads(created[2])["config"]["s3.secret-access-key"] == SECRET
    assert all(s == 0 and SECRET.encode() not in b for s, _, b in _rows(uri).values())

    committed = json.loads(_same_twice(url, "POST", f"{t}/t", _with_field(1))[2])
    loaded = json.loads(_call(url, "GET", f"{t}/t")[2])
    assert loaded["metadata-location"] == committed["metadata-location"]
    assert len(loaded["metadata"]["metadata-log"]) == 1  # committed once

    staged = {"name": "s", "schema": SCHEMA, "stage-create": True}
    meta = json.loads(_call(url, "POST", t, staged)[2])["metadata"]
    create = {
        "requirements": [{"type": "assert-create"}],
        "updates": [
            {"action": "assign-uuid", "uuid": meta["table-uuid"]},
            {"action": "upgrade-format-version", "format-version": 2},
            {"action": "add-schema", "schema": SCHEMA, "last-column-id": 1},
            {"action": "set-current-schema", "schema-id": -1},
            {"action": "set-location", "location": meta["location"]},
        ],
    }
    _same_twice(url, "POST", f"{t}/s", create)
    assert _call(url, "GET", f"{t}/s")[0] == 200

    both = {
        "table-changes": [
            {"identifier": {"namespace": ["a"], "name": n}, **_with_field(k)}
            for n, k in (("t", 2), ("s", 1))
        ]
    }
    _same_twice(url, "POST", "/v1/transactions/commit", both)
    fields = json.loads(_call(url, "GET", f"{t}/t")[2])["metadata"]["last-column-id"]
    assert fields == 3  # committed once

    rename = {
        "source": {"namespace": ["a"], "name": "s"},
        "destination": {"namespace": ["a"], "name": "r"},
    }
    _same_twice(url, "POST", "/v1/tables/rename", rename)
    assert _call(url, "GET", f"{t}/r")[0] == 200 and _call(url, "GET", f"{t}/s")[0] == 404
    _same_twice(url, "DELETE", f"{t}/r")
    assert _call(url, "GET", f"{t}/r")[0] == 404

    from tests.support.rest import view_body

    v = "/v1/namespaces/a/views"
    made = json.loads(_same_twice(url, "POST", v, view_body("v", ["a"]))[2])
    assert json.loads(_call(url, "GET", f"{v}/v")[2]) == made
    _same_twice(url, "DELETE", f"{v}/v")

    # a request that fails leaves no marker: its transaction rolled back
    marked = set(_rows(uri))
    for method, path, body in [
        ("POST", "/v1/namespaces/b/tables", {"name": "t", "schema": SCHEMA}),
        ("POST", f"{t}/t", _with_field(1)),
        ("DELETE", f"{t}/gone", None),
    ]:
        key = {"Idempotency-Key": str(uuid.uuid4())}
        assert _call(url, method, path, body, key)[0] in (404, 409)
    assert set(_rows(uri)) == marked

    # answers stored again: a marker found is replaced by the answer it gives
    key = {"Idempotency-Key": str(uuid.uuid4())}
    first = _call(url, "POST", f"{t}/t", _with_field(3), key)
    assert _rows(uri)[key["Idempotency-Key"]][0] == 0
    answers.failing = False
    assert _call(url, "POST", f"{t}/t", _with_field(3), key) == first
    assert _rows(uri)[key["Idempotency-Key"]][0] == 200


def _slipped_past(url: str, uri: str, answers: _Answers, warehouse: Path) -> None:
    """A second request with a key whose first committed (in another process, the lookup
    having found nothing yet) cannot insert its marker: its change rolls back, its metadata
    file is deleted, and it answers the first one's answer."""
    import sqlalchemy

    t = "/v1/namespaces/a/tables/t"
    assert _call(url, "POST", "/v1/namespaces", {"namespace": ["a"]})[0] == 200
    assert _call(url, "POST", "/v1/namespaces/a/tables", {"name": "t", "schema": SCHEMA})[0] == 200
    change = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"p": "1"}}]}
    key, other = str(uuid.uuid4()), str(uuid.uuid4())
    first = _call(url, "POST", t, change, {"Idempotency-Key": key})
    assert first[0] == 200 and _rows(uri)[key][0] == 0
    unset = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"p": "0"}}]}
    assert _call(url, "POST", t, unset)[0] == 200
    # the same request's marker under another key, as a process running it inserts it: its
    # transaction commits while this one runs (PostgreSQL: the second insert waits for it,
    # then fails; SQLite: the change waits for its lock, then finds the row)
    files = sorted(warehouse.rglob("*.metadata.json"))
    engine = sqlalchemy.create_engine(uri)
    answers.hidden.add(other)
    sent: list[Reply] = []
    try:
        with engine.begin() as conn:
            conn.execute(
                sqlalchemy.text(
                    "INSERT INTO icefloe_rest_idempotency SELECT :other, request_hash, "
                    "expires_at_ms, status, media_type, headers, body "
                    "FROM icefloe_rest_idempotency WHERE idempotency_key = :key"
                ),
                {"other": other, "key": key},
            )
            racer = threading.Thread(
                target=lambda: sent.append(
                    _call(url, "POST", t, change, {"Idempotency-Key": other})
                )
            )
            racer.start()
            time.sleep(1.5)
    finally:
        engine.dispose()
    racer.join(60)
    assert sent == [first], sent
    assert json.loads(_call(url, "GET", t)[2])["metadata"]["properties"]["p"] == "0"
    assert sorted(warehouse.rglob("*.metadata.json")) == files

    # a row of another request under the key: refused as a key used for another request
    answers.hidden.add(other)
    other_change = {
        "requirements": [],
        "updates": [{"action": "remove-properties", "removals": ["p"]}],
    }
    refused = _call(url, "POST", t, other_change, {"Idempotency-Key": other})
    assert refused[0] == 422, refused
    assert "p" in json.loads(_call(url, "GET", t)[2])["metadata"]["properties"]


def _namespace_crash_window(url: str, uri: str, answers: _Answers, warehouse: Path) -> None:
    """Namespace creates, property updates and drops made while their answers cannot be
    stored: the retry gets the first answer, rebuilt from the marker (a create's namespace and
    properties, the keys an update set, removed and found missing as it found them), and the
    catalog changed once."""
    create = {"namespace": ["n"], "properties": {"k": "v", "owner": "me"}}
    assert json.loads(_same_twice(url, "POST", "/v1/namespaces", create)[2]) == create
    nested = json.loads(_same_twice(url, "POST", "/v1/namespaces", {"namespace": ["n", "m"]})[2])
    assert nested == {"namespace": ["n", "m"], "properties": {}}
    assert _rows(uri) and all(s == 0 for s, _, _ in _rows(uri).values())  # markers only

    # the retry of an update answers what the first found, though another request changed
    # the properties since (run again, it would set "u" again and call "k" missing)
    props = "/v1/namespaces/n/properties"
    update = {"removals": ["k", "gone"], "updates": {"u": "1"}}
    key = {"Idempotency-Key": str(uuid.uuid4())}
    first = _call(url, "POST", props, update, key)
    assert first[0] == 200, first
    assert json.loads(first[2]) == {"updated": ["u"], "removed": ["k"], "missing": ["gone"]}
    assert _call(url, "POST", props, {"removals": ["u"]})[0] == 200
    assert _call(url, "POST", props, update, key) == first
    loaded = json.loads(_call(url, "GET", "/v1/namespaces/n")[2])
    assert loaded["properties"] == {"owner": "me"}

    _same_twice(url, "DELETE", "/v1/namespaces/n%1Fm")
    assert _call(url, "GET", "/v1/namespaces/n%1Fm")[0] == 404
    _same_twice(url, "DELETE", "/v1/namespaces/n")
    assert _call(url, "GET", "/v1/namespaces/n")[0] == 404

    # a request that fails leaves no marker: its transaction rolled back
    assert _call(url, "POST", "/v1/namespaces", {"namespace": ["a"]})[0] == 200
    assert _call(url, "POST", "/v1/namespaces/a/tables", {"name": "t", "schema": SCHEMA})[0] == 200
    marked = set(_rows(uri))
    for method, path, body in [
        ("POST", "/v1/namespaces", {"namespace": ["a"]}),  # exists
        ("DELETE", "/v1/namespaces/a", None),  # not empty
        ("DELETE", "/v1/namespaces/gone", None),
        ("POST", "/v1/namespaces/gone/properties", {"updates": {"x": "1"}}),
    ]:
        key = {"Idempotency-Key": str(uuid.uuid4())}
        assert _call(url, method, path, body, key)[0] in (404, 409)
    assert set(_rows(uri)) == marked

    # answers stored again: a marker found is replaced by the answer it gives
    key = {"Idempotency-Key": str(uuid.uuid4())}
    change = {"updates": {"x": "1"}, "removals": ["y"]}
    first = _call(url, "POST", "/v1/namespaces/a/properties", change, key)
    assert first[0] == 200 and _rows(uri)[key["Idempotency-Key"]][0] == 0
    answers.failing = False
    assert _call(url, "POST", "/v1/namespaces/a/properties", change, key) == first
    assert _rows(uri)[key["Idempotency-Key"]][0] == 200


def _namespace_slipped_past(url: str, uri: str, answers: _Answers, warehouse: Path) -> None:
    """A second namespace property update with a key whose first committed (in another
    process, the lookup having found nothing yet) cannot insert its marker: its change rolls
    back and it answers the first one's answer."""
    import sqlalchemy

    props = "/v1/namespaces/a/properties"
    create = {"namespace": ["a"], "properties": {"p": "1"}}
    assert _call(url, "POST", "/v1/namespaces", create)[0] == 200
    change = {"removals": ["p"], "updates": {"q": "1"}}
    key, other = str(uuid.uuid4()), str(uuid.uuid4())
    first = _call(url, "POST", props, change, {"Idempotency-Key": key})
    assert first[0] == 200 and _rows(uri)[key][0] == 0
    assert _call(url, "POST", props, {"removals": ["q"], "updates": {"p": "2"}})[0] == 200
    engine = sqlalchemy.create_engine(uri)
    answers.hidden.add(other)
    sent: list[Reply] = []
    try:
        with engine.begin() as conn:
            conn.execute(
                sqlalchemy.text(
                    "INSERT INTO icefloe_rest_idempotency SELECT :other, request_hash, "
                    "expires_at_ms, status, media_type, headers, body "
                    "FROM icefloe_rest_idempotency WHERE idempotency_key = :key"
                ),
                {"other": other, "key": key},
            )
            racer = threading.Thread(
                target=lambda: sent.append(
                    _call(url, "POST", props, change, {"Idempotency-Key": other})
                )
            )
            racer.start()
            time.sleep(1.5)
    finally:
        engine.dispose()
    racer.join(60)
    assert sent == [first], sent
    assert json.loads(_call(url, "GET", "/v1/namespaces/a")[2])["properties"] == {"p": "2"}


def _failed_after_the_first(url: str, uri: str, answers: _Answers, warehouse: Path) -> None:
    """A keyed request that fails because the same request, run at once by another server
    process (its lookup having found nothing yet), committed first: a create finds the name
    taken, a drop nothing to drop. It answered its own 409 or 404 (and kept it in place of the
    first one's marker); it answers the first one's answer."""
    import sqlalchemy

    def copied(key: str) -> str:
        """The marker under ``key`` also under a new key, as the other process committed it;
        the new key is hidden from this server's next lookup."""
        other = str(uuid.uuid4())
        engine = sqlalchemy.create_engine(uri)
        try:
            with engine.begin() as conn:
                conn.execute(
                    sqlalchemy.text(
                        "INSERT INTO icefloe_rest_idempotency SELECT :other, request_hash, "
                        "expires_at_ms, status, media_type, headers, body "
                        "FROM icefloe_rest_idempotency WHERE idempotency_key = :key"
                    ),
                    {"other": other, "key": key},
                )
        finally:
            engine.dispose()
        answers.hidden.add(other)
        return other

    tables = "/v1/namespaces/a/tables"
    for method, path, body in [
        ("POST", "/v1/namespaces", {"namespace": ["a"], "properties": {"p": "1"}}),
        ("POST", tables, {"name": "t", "schema": SCHEMA}),
        ("DELETE", f"{tables}/t", None),
        ("DELETE", "/v1/namespaces/a", None),
    ]:
        key = str(uuid.uuid4())
        first = _call(url, method, path, body, {"Idempotency-Key": key})
        assert first[0] in (200, 204) and _rows(uri)[key][0] == 0, first
        other = copied(key)
        again = _call(url, method, path, body, {"Idempotency-Key": other})
        assert again[0] == first[0], again
        assert json.loads(again[2] or b"null") == json.loads(first[2] or b"null")
        assert _rows(uri)[other][0] == 0  # the marker stays (storing answers fails)


_SCENARIOS = [
    _crash_window,
    _slipped_past,
    _namespace_crash_window,
    _namespace_slipped_past,
    _failed_after_the_first,
]


@pytest.mark.parametrize("scenario", _SCENARIOS)
def test_a_change_whose_answer_was_not_stored_is_replayed_on_sqlite(
    scenario: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Storing answers fails after each change (as if the server died in between): a retry
    with the key ran the request again (a create answered 409, a drop 404, a commit 409, a
    namespace property update its changes again); it gets the first answer, rebuilt from the
    marker the change's transaction wrote."""
    _serve(scenario, "c", f"sqlite:///{tmp_path / 'catalog.db'}", tmp_path, monkeypatch)


@pytest.mark.postgres
@pytest.mark.parametrize("scenario", _SCENARIOS)
def test_a_change_whose_answer_was_not_stored_is_replayed_on_postgresql(
    scenario: Any, postgres_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on SQLite, with PostgreSQL's transactions."""
    with _own_database(postgres_uri) as (_, uri, _admin):
        _serve(scenario, "pg", uri, tmp_path, monkeypatch)


def _serve(
    scenario: Any, name: str, uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run ``scenario`` against a server over SQL catalog ``name`` at ``uri`` whose answers
    are stored through :class:`_Answers`."""
    pytest.importorskip("uvicorn")
    from icefloe import rest

    warehouse = tmp_path / "wh"
    backing = SqlCatalog(name, uri=uri, warehouse=warehouse.as_uri())
    answers = _Answers(monkeypatch)
    try:
        with rest.start(backing, table_config={"s3.secret-access-key": SECRET}) as server:
            scenario(server.url, uri, answers, warehouse)
    finally:
        backing.close()


# -- a real server process killed between the change and storing its answer ------------------------

#: ``python -m`` this (from the server's directory) for an ``icefloe serve`` that kills itself
#: (SIGKILL: nothing cleans up) when it is about to store an answer for an Idempotency-Key, so
#: after the change of the request committed.
_DYING_SERVER = """\
import os
import signal
import sys

from icefloe.rest.__main__ import main
from icefloe.rest.idempotency import SqlReplies


def _die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


SqlReplies.put = _die
sys.exit(main())
"""


def test_a_namespace_change_of_a_killed_server_is_replayed_after_a_restart(tmp_path: Path) -> None:
    """``icefloe serve`` killed after a namespace create, property update or drop committed
    and before its answer was stored: the client sees the connection drop, and its retry with
    the key, sent to the restarted server, gets the answer the first attempt would have given
    (it ran again: a create answered 409, an update its changes again, a drop 404)."""
    from support.rest import start_rest_server

    base = tmp_path / "srv"
    base.mkdir()
    (base / "dying_server.py").write_text(_DYING_SERVER)
    create = {"namespace": ["n"], "properties": {"k": "v"}}
    update = {"removals": ["k", "gone"], "updates": {"u": "1"}}
    steps: list[tuple[str, str, object, int, object, dict[str, str] | None]] = [
        ("POST", "/v1/namespaces", create, 200, create, {"k": "v"}),
        (
            "POST",
            "/v1/namespaces/n/properties",
            update,
            200,
            {"updated": ["u"], "removed": ["k"], "missing": ["gone"]},
            {"u": "1"},
        ),
        ("DELETE", "/v1/namespaces/n", None, 204, None, None),
    ]
    for method, path, body, status, answer, properties in steps:
        key = {"Idempotency-Key": str(uuid.uuid4())}
        dying = start_rest_server(base, command=("dying_server",))
        try:
            with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
                _call(dying.url, method, path, body, key)
            assert dying.process.wait(timeout=30) == -signal.SIGKILL
        finally:
            dying.stop()
        server = start_rest_server(base)
        try:
            again = _call(server.url, method, path, body, key)
            assert again[0] == status, again
            assert json.loads(again[2] or b"null") == answer
            assert _call(server.url, method, path, body, key) == again  # stored now
            found = _call(server.url, "GET", "/v1/namespaces/n")
            if properties is None:
                assert found[0] == 404
            else:
                assert json.loads(found[2])["properties"] == properties
        finally:
            server.stop()


def test_keyed_requests_to_warehouses_of_an_in_memory_database_are_answered(
    tmp_path: Path,
) -> None:
    """Served per warehouse over an in-memory SQLite database, each warehouse's catalog has a
    database of its own, without the table of stored answers: a keyed change was refused
    with 503 (no such table) and made nothing. It is not marked, and is answered as before."""
    pytest.importorskip("uvicorn")
    from icefloe import rest
    from icefloe.rest.app import warehouse_catalogs

    backing = SqlCatalog("c", uri="sqlite:///:memory:", warehouse=(tmp_path / "wh").as_uri())
    try:
        with rest.start(backing, warehouses=warehouse_catalogs(backing)) as server:
            key = {"Idempotency-Key": str(uuid.uuid4())}
            created = _call(server.url, "POST", "/v1/w1/namespaces", {"namespace": ["a"]}, key)
            assert created[0] == 200, created
            again = _call(server.url, "POST", "/v1/w1/namespaces", {"namespace": ["a"]}, key)
            assert again[0] == 200 and json.loads(again[2]) == json.loads(created[2])
            table = _call(
                server.url,
                "POST",
                "/v1/w1/namespaces/a/tables",
                {"name": "t", "schema": SCHEMA},
                {"Idempotency-Key": str(uuid.uuid4())},
            )
            assert table[0] == 200, table
            client = RestCatalog("r", uri=server.url, warehouse="w1")
            client.create_namespace("b")
            assert sorted(client.list_namespaces()) == [("a",), ("b",)]
    finally:
        backing.close()


def test_a_namespace_dropped_meanwhile_is_not_dropped_twice(tmp_path: Path) -> None:
    """Two drops of one namespace, the second checking before the first committed: both
    answered done (and a keyed one kept that answer). The second finds nothing left to
    delete and raises ``NoSuchNamespaceError``, announcing no change."""
    from icefloe.catalog.sql_hook import hooked
    from icefloe.exceptions import NoSuchNamespaceError

    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    first = SqlCatalog("c", uri=uri, warehouse=(tmp_path / "wh").as_uri())
    second = SqlCatalog("c", uri=uri, warehouse=(tmp_path / "wh").as_uri())
    try:
        first.create_namespace("gone")
        first.drop_namespace("gone")
        # the second drop's check ran before the first drop committed
        second._ns_exists = lambda conn, ns: True  # type: ignore[method-assign]
        announced: list[Any] = []
        with (
            hooked(lambda conn, change: announced.append(change)),
            pytest.raises(NoSuchNamespaceError, match="gone"),
        ):
            second.drop_namespace("gone")
        assert announced == []
    finally:
        first.close()
        second.close()


@pytest.mark.postgres
def test_one_key_for_two_requests_at_once_runs_one_on_postgresql(postgres_uri: str) -> None:
    """Two requests with one key and different bodies, their changes' transactions open at
    the same time: under READ COMMITTED neither saw the other's uncommitted marker, so both
    changes committed. The second's marker now waits for the first transaction and refuses
    its change (``IdempotencyKeyTaken``)."""
    from icefloe.catalog.sql_hook import PointerChange
    from icefloe.rest.idempotency import IdempotencyKeyTaken, Marking, SqlReplies

    with _own_database(postgres_uri) as (_, uri, _admin):
        import sqlalchemy

        engine = sqlalchemy.create_engine(uri)
        try:
            replies = SqlReplies(engine, "pg")
            change = PointerChange("create", "NAMESPACE", (("n",),))
            expires = time.time() + 600
            outcome: list[BaseException | None] = []

            def second() -> None:
                try:
                    with engine.begin() as conn:
                        replies._mark(conn, "k", "b" * 64, expires, change, Marking())
                    outcome.append(None)
                except BaseException as exc:  # reported to the test
                    outcome.append(exc)

            with engine.begin() as conn:
                replies._mark(conn, "k", "a" * 64, expires, change, Marking())
                other = threading.Thread(target=second)
                other.start()
                other.join(1.0)
            other.join(30)
            assert len(outcome) == 1 and isinstance(outcome[0], IdempotencyKeyTaken), outcome
        finally:
            engine.dispose()
