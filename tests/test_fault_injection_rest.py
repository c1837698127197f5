"""REST catalog commits interrupted at every I/O and HTTP step (the injector of
tests/support/faults.py, with the client's HTTP requests as steps too).

The client runs here against a real ``icefloe serve`` process (tests/support/rest.py); the
server's own files are out of reach of the injector, so every fault is one the client sees.
At each step in turn the operation (an append, a merge-on-read delete, a multi-operation
transaction, a property change, a multi-table transaction through
``POST /transactions/commit``) meets one fault:

- ``interrupt``: ``KeyboardInterrupt`` before or after the step (after an HTTP step: the server
  acted and the answer is lost to the interrupt);
- ``reset``, ``timeout``, ``truncated``: the server answered, then the connection was reset,
  timed out or cut short while the client read the answer (it sees a transport error);
- ``503``: the server acted but the client gets a 503; ``garbled``: a 200 whose body is not
  JSON (a proxy's error page);
- the same with ``+down``: after the fault the server cannot be reached for the rest of the
  operation, so the outcome cannot be resolved by a retry or a reload.

Each kind runs with ``Idempotency-Key`` retries on and off (a server that replays, or one the
client cannot retry against). After each run the table is at the old or the new state (new
when the operation returned, old when it raised an error proving nothing happened), every file
its metadata references exists (an unknown outcome deleted nothing), PyIceberg and DuckDB
agree, and a follow-up append works. A sample of steps is also hit by a real ``SIGKILL``.
"""

from __future__ import annotations

import http.client
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from icefloe.catalog.rest import RestCatalog
from icefloe.catalog.rest.http import HttpResponse, HttpSession
from icefloe.exceptions import IcebergError, commit_did_not_happen
from icefloe.table import Table
from support.faults import IDENT, OPERATIONS, SCHEMA, Injector, Operation, _rows, _tree
from support.rest import RestServer
from test_fault_injection import (
    FULL,
    Expected,
    _assert_peers_agree,
    _check,
    _forkserver,
    _referenced,
)
from test_fault_injection import _rows as _table_rows

pytestmark = [pytest.mark.rest, pytest.mark.interop]

OTHER = "db.u"
PEER_EVERY = 1 if FULL else 6


def _multi_table(t: Table) -> None:
    """An append to each of two tables, committed together (``POST /transactions/commit``)."""
    assert isinstance(t.catalog, RestCatalog)
    with t.catalog.transaction() as tx:
        tx.table(IDENT).append(_rows(range(80, 83), "m"))
        tx.table(OTHER).append(_rows(range(90, 92), "m"))


def _fast(op: Operation) -> Operation:
    """``op`` on a table whose commit retries wait milliseconds, not the default 100 ms+."""
    fast = {"commit.retry.min-wait-ms": "2", "commit.retry.max-wait-ms": "10"}
    return Operation({**op.properties, **fast}, op.prepare, op.run)


REST_OPERATIONS: dict[str, Operation] = {
    name: _fast(op)
    for name, op in {
        "append": OPERATIONS["append"],
        "mor-delete": OPERATIONS["mor-delete"],
        "transaction": OPERATIONS["transaction"],
        "multi-table": Operation(
            OPERATIONS["append"].properties, OPERATIONS["append"].prepare, _multi_table
        ),
        # no snapshot: a commit the client cannot recognise in the table afterwards
        "properties": Operation(
            OPERATIONS["append"].properties,
            OPERATIONS["append"].prepare,
            lambda t: t.set_properties({"note": "changed"}),
        ),
    }.items()
}
if FULL:
    REST_OPERATIONS |= {k: _fast(v) for k, v in OPERATIONS.items() if k not in REST_OPERATIONS}

# Faults at an HTTP step after the server acted, and what the client then sees.
_AFTER_SERVER: dict[str, Callable[[], BaseException]] = {
    "reset": lambda: ConnectionResetError(104, "Connection reset by peer"),
    "timeout": lambda: TimeoutError("timed out"),
    "truncated": lambda: http.client.IncompleteRead(b"{", 100),
}


class HttpInjector(Injector):
    """:class:`Injector` with every ``HttpSession.request`` as a step and network faults.

    ``kind`` is ``interrupt`` (the base class's ``KeyboardInterrupt``), a key of
    :data:`_AFTER_SERVER`, ``503`` or ``garbled``; ``down`` makes every later request fail to
    connect. Network faults fire after the real request (the server acted).

    Only requests made on the thread that installed the injector (the one that runs the
    operation) are steps. A request from another thread is the catalog's metrics reporter
    sending a report in the background: the operation never waits for it, so whether it falls
    inside the operation's run depends on the timing, and counting it would make the steps of
    a run differ from the dry run's. It goes out unfaulted (but not while the server is
    ``down``) and is listed in :attr:`background`, which :func:`_only_reports` checks.
    """

    def __init__(
        self,
        target: int | None = None,
        mode: str = "before",
        kind: str = "interrupt",
        down: bool = False,
        kill: bool = False,
        strip_keys: bool = False,
        http_index: int | None = None,
    ) -> None:
        super().__init__(target if kind == "interrupt" else None, mode, kill)
        #: A network fault hits the request with this ordinal among the HTTP requests, not a
        #: step index: requests run on the caller's thread in the same order every run, while
        #: background threads' I/O steps interleave with them differently from run to run.
        self.net_target = None if kind == "interrupt" else http_index
        self._requests = 0
        self.kind = kind
        self.down = down
        self.strip_keys = strip_keys
        self._is_down = False
        self._fail_read: threading.local = threading.local()
        self._caller: int | None = None
        #: (thread name, method, path) of each request made off the caller's thread.
        self.background: list[tuple[str, str, str]] = []

    def _http_step(self, real: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        injector = self

        def request(
            session: HttpSession, method: str, path: str, *args: Any, **kwargs: Any
        ) -> HttpResponse:
            if threading.get_ident() != injector._caller:
                with injector._lock:
                    injector.background.append((threading.current_thread().name, method, path))
                return real(session, method, path, *args, **kwargs)
            with injector._lock:
                ordinal = injector._requests
                injector._requests += 1

            def call() -> HttpResponse:
                return injector._network_fault(
                    ordinal, real, session, method, path, *args, **kwargs
                )

            result: HttpResponse = injector.call("HttpSession.request", call)
            return result

        return request

    def _network_fault(
        self, ordinal: int, real: Callable[..., HttpResponse], *args: Any, **kwargs: Any
    ) -> HttpResponse:
        """The real request, failed as ``kind`` says when it is the target request."""
        if ordinal != self.net_target:
            return real(*args, **kwargs)
        self.fired = f"{self.kind}{'+down' if self.down else ''} HttpSession.request"
        if self.kind in _AFTER_SERVER:
            self._fail_read.exc = _AFTER_SERVER[self.kind]()
        try:
            resp = real(*args, **kwargs)
        finally:
            self._fail_read.exc = None
            self._is_down = self.down
        if self.kind == "503":
            body = b'{"error":{"message":"injected","type":"ServerError","code":503}}'
            return HttpResponse(503, {"content-type": "application/json"}, body)
        if self.kind == "garbled" and resp.status == 200:
            return HttpResponse(200, {"content-type": "text/html"}, b"<html>proxy error</html>")
        return resp

    @contextmanager
    def installed(self) -> Iterator[Injector]:
        injector = self
        real_request = HttpSession.request
        real_send = http.client.HTTPConnection.request
        real_getresponse = http.client.HTTPConnection.getresponse

        def send(
            conn: http.client.HTTPConnection,
            method: str,
            url: str,
            body: Any = None,
            headers: Any = None,
            **kwargs: Any,
        ) -> None:
            if injector._is_down:
                raise ConnectionRefusedError(111, "Connection refused")
            headers = dict(headers or {})
            if injector.strip_keys:  # a server (or proxy) that drops the key: no replay
                headers.pop("Idempotency-Key", None)
            real_send(conn, method, url, body, headers, **kwargs)

        def getresponse(conn: http.client.HTTPConnection) -> http.client.HTTPResponse:
            resp = real_getresponse(conn)
            exc = getattr(injector._fail_read, "exc", None)
            if exc is not None:
                injector._fail_read.exc = None
                resp.read()  # the server's whole answer arrived: it acted
                raise exc
            return resp

        # (the class of the catalog's MRO that defines each commit method)
        commits = {
            n: next(c for c in RestCatalog.__mro__ if n in c.__dict__)
            for n in ("commit_table", "commit_tables")
        }
        saved = {n: owner.__dict__[n] for n, owner in commits.items()}
        self._caller = threading.get_ident()
        for n, owner in commits.items():
            setattr(owner, n, self._wrap(f"RestCatalog.{n}", saved[n], container=True))
        HttpSession.request = self._http_step(real_request)  # type: ignore[method-assign]
        setattr(http.client.HTTPConnection, "request", send)  # noqa: B010
        setattr(http.client.HTTPConnection, "getresponse", getresponse)  # noqa: B010
        try:
            with super().installed():
                yield self
        finally:
            for n, owner in commits.items():
                setattr(owner, n, saved[n])
            HttpSession.request = real_request  # type: ignore[method-assign]
            http.client.HTTPConnection.request = real_send  # type: ignore[method-assign]
            http.client.HTTPConnection.getresponse = real_getresponse  # type: ignore[method-assign]


def _only_reports(inj: HttpInjector, where: str) -> None:
    """The requests ``inj`` saw off the operation's thread were metrics reports: anything else
    would be a request of the operation that no sweep aims at (requests are aimed at by their
    order on the operation's thread)."""
    other = [r for r in inj.background if not (r[1] == "POST" and r[2].endswith("/metrics"))]
    assert other == [], f"{where}: requests off the operation's thread: {other}"


@dataclass
class RestSite:
    """Two tables in a warehouse of their own on the session's server, and their prepared
    state (files under the server's warehouse directory, and metadata locations)."""

    server: RestServer
    saved: Path
    keys: str  # "replay": Idempotency-Key retries; "none": no keys; "ignored": not honoured
    name: str = field(default_factory=lambda: f"w{uuid.uuid4().hex[:12]}")
    pristine: dict[str, str] = field(default_factory=dict)
    files: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def warehouse(self) -> Path:
        return self.server.base / "warehouse" / self.name

    def catalog(self) -> RestCatalog:
        cat = RestCatalog("rest", uri=self.server.url, warehouse=self.name)
        if self.keys == "none":
            cat.idempotency_lifetime = None  # as against a server without replay
        return cat

    def prepare(self, op: Operation) -> None:
        cat = self.catalog()
        cat.create_namespace("db")
        for ident in (IDENT, OTHER):
            t = cat.create_table(ident, SCHEMA, properties=op.properties)
            op.prepare(t)
            self.pristine[ident] = cat.load_table(ident).metadata_location
        cat.close()
        shutil.copytree(self.warehouse, self.saved)
        self.files = _tree(self.warehouse)

    def restore(self) -> RestCatalog:
        """Both tables back at their prepared state: files the last run added removed, files
        it changed copied back, the catalog entries pointed at the prepared metadata."""
        now = _tree(self.warehouse)
        for rel in now.keys() - self.files.keys():
            os.unlink(self.warehouse / rel)
        for rel, stat in self.files.items():
            if now.get(rel) != stat:
                (self.warehouse / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(self.saved / rel, self.warehouse / rel)
        cat = self.catalog()
        for ident, location in self.pristine.items():
            cat.drop_table(ident)
            cat.register_table(ident, location)
        return cat


def _expect(site: RestSite, name: str) -> tuple[Expected, Expected]:
    """Old and new state of both tables, and the steps of a run without faults."""
    cat = site.restore()
    t = cat.load_table(IDENT)
    old = _table_rows(t), _table_rows(cat.load_table(OTHER))
    inj = HttpInjector()
    with inj.installed():
        REST_OPERATIONS[name].run(t)
    new = _table_rows(cat.load_table(IDENT)), _table_rows(cat.load_table(OTHER))
    cat.close()
    assert any("HttpSession" in s for s in inj.steps)
    _only_reports(inj, f"{name}: the run without faults")
    return (
        Expected(site.pristine[IDENT], old[0], new[0], inj.steps),
        Expected(site.pristine[OTHER], old[1], new[1], inj.steps),
    )


def _check_other(cat: RestCatalog, exp: Expected, con: Any | None) -> bool:
    """The second table of a multi-table commit: at the old or new state, intact, agreed on;
    returns whether it moved."""
    t = cat.load_table(OTHER)
    moved = t.metadata_location != exp.old_location
    rows = _table_rows(t)
    assert rows == (exp.new_rows if moved else exp.old_rows)
    assert [p for p in _referenced(t) if not t.io.exists(p)] == []
    if con is not None:
        _assert_peers_agree(t, rows, con)
    return moved


def _plan(steps: list[str]) -> list[tuple[int, str, str, bool]]:
    """(step, mode, kind, down): an interrupt before and after every HTTP step and after a
    sample of I/O steps (the other catalogs' sweeps interrupt every one); every network fault,
    with and without ``down``, at the commit request; a lost answer and a garbled one with
    ``down`` at the HTTP steps after it. With ``FULL``, everything at every step."""
    plan: list[tuple[int, str, str, bool]] = []
    start = min(
        (k for k, s in enumerate(steps) if s.endswith(("commit_table", "commit_tables"))),
        default=len(steps),
    )
    request = next((k for k in range(start, len(steps)) if steps[k] == "HttpSession.request"), -1)
    kinds = [(kind, down) for kind in (*_AFTER_SERVER, "503", "garbled") for down in (False, True)]
    for k, name in enumerate(steps):
        http_step = name == "HttpSession.request"
        if http_step or FULL or k % 4 == 0 or k == len(steps) - 1:
            plan.append((k, "after", "interrupt", False))
        if http_step or FULL or k == 0:
            plan.append((k, "before", "interrupt", False))
        if (FULL and http_step) or k == request:
            plan.extend((k, "after", kind, down) for kind, down in kinds)
        elif http_step and k > start:
            plan.extend([(k, "after", "reset", True), (k, "after", "garbled", True)])
    return plan


def _sweep(site: RestSite, name: str, con: Any) -> dict[str, int]:
    site.prepare(REST_OPERATIONS[name])
    exp, exp_other = _expect(site, name)
    outcomes = {"moved": 0, "kept": 0, "unknown": 0}
    for i, (k, mode, kind, down) in enumerate(_plan(exp.steps)):
        cat = site.restore()
        t = cat.load_table(IDENT)
        http_index = exp.steps[:k].count("HttpSession.request")
        assert kind == "interrupt" or exp.steps[k] == "HttpSession.request"
        inj = HttpInjector(
            k, mode, kind, down, strip_keys=site.keys == "ignored", http_index=http_index
        )
        raised: BaseException | None = None
        with inj.installed():
            try:
                REST_OPERATIONS[name].run(t)
            except BaseException as exc:  # each outcome is checked below
                raised = exc
        where = f"{name}: {inj.fired or (k, mode, kind)} (step {k}, keys={site.keys})"
        assert inj.fired or kind == "garbled", where  # a garbled non-200 answer is no fault
        _only_reports(inj, where)
        peers = con if i % PEER_EVERY == 0 else None
        try:
            moved = _check(cat, exp, peers)
            if name == "multi-table":
                other = _check_other(cat, exp_other, peers)
                assert other == moved, "the multi-table commit was not all or nothing"
        except Exception as e:
            raise AssertionError(f"{where}: raised {raised!r}: {e!r}") from e
        finally:
            cat.close()
        assert raised is None or isinstance(raised, KeyboardInterrupt | IcebergError), where
        if raised is None:
            assert moved, f"{where}: returned but the table did not change"
        elif commit_did_not_happen(raised):
            assert not moved, f"{where}: {raised!r} says nothing happened, but the table moved"
        if raised is not None and not isinstance(raised, KeyboardInterrupt):
            outcomes["unknown"] += not commit_did_not_happen(raised)
        outcomes["moved" if moved else "kept"] += 1
    return outcomes


# A server that replays Idempotency-Keys, a client that sends none, and a server (or proxy)
# that drops them: the last only where a retry can meet the client's own first attempt.
CASES = [(name, keys) for name in REST_OPERATIONS for keys in ("replay", "none")] + [
    (name, "ignored") for name in REST_OPERATIONS if FULL or name in ("append", "multi-table")
]


@pytest.mark.parametrize(("name", "keys"), CASES)
def test_rest_commit_faults_at_every_step(
    rest_server: RestServer, tmp_path: Path, name: str, keys: str, duckdb_con: Any
) -> None:
    site = RestSite(rest_server, tmp_path / "pristine", keys)
    outcomes = _sweep(site, name, duckdb_con)
    # the sweep crossed the commit, and some faults left the outcome unknown to the client
    assert outcomes["moved"] and outcomes["kept"] and outcomes["unknown"], outcomes


def _run_in_child(url: str, warehouse: str, name: str, target: int, mode: str) -> None:
    """Child process: the operation on the restored tables, killed at step ``target``."""
    t = RestCatalog("rest", uri=url, warehouse=warehouse).load_table(IDENT)
    with HttpInjector(target, mode, kill=True).installed():
        REST_OPERATIONS[name].run(t)
    os._exit(0)


def test_rest_commit_sigkill_around_the_request(
    rest_server: RestServer, tmp_path: Path, duckdb_con: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real SIGKILL of the client just before and just after each HTTP request of the
    commit (after: the server committed, the client died before it could know)."""
    ctx = _forkserver(monkeypatch)
    seen = {False: 0, True: 0}
    for name in ("append", "multi-table"):
        site = RestSite(rest_server, tmp_path / name, keys="replay")
        site.prepare(REST_OPERATIONS[name])
        exp, exp_other = _expect(site, name)
        start = min(
            k for k, s in enumerate(exp.steps) if s.endswith(("commit_table", "commit_tables"))
        )
        points = [
            (k, m)
            for k in range(start, len(exp.steps))
            for m in ("before", "after")
            if exp.steps[k] == "HttpSession.request" or FULL
        ]
        for k, mode in points:
            site.restore().close()
            proc = ctx.Process(
                target=_run_in_child, args=(rest_server.url, site.name, name, k, mode)
            )
            proc.start()
            proc.join(timeout=120)
            assert proc.exitcode == -9, (name, k, mode, proc.exitcode)
            cat = site.catalog()
            try:
                moved = _check(cat, exp, duckdb_con)
                if name == "multi-table":
                    assert _check_other(cat, exp_other, duckdb_con) == moved
                seen[moved] += 1
            except Exception as e:
                raise AssertionError(
                    f"{name}: killed {mode} step {k} ({exp.steps[k]}): {e!r}"
                ) from e
            finally:
                cat.close()
    assert seen[False] and seen[True], seen
