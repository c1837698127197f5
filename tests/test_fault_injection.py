"""Every write operation interrupted at every I/O and catalog step (tests/support/faults.py).

For append, merge-on-read and copy-on-write delete, upsert, overwrite, compaction,
expire_snapshots, rewrite_manifests and a multi-operation transaction, a counting run finds the
steps (each ``FileIO``/``InputFile``/``OutputFile`` call and each catalog commit, swap and
pointer call); then for every step ``k`` the operation runs again from the same prepared table
and a ``KeyboardInterrupt`` is raised before or after the real call of step ``k``. A sample of
steps is also hit by a real ``SIGKILL`` of a child process. After each:

- the table loads and reads exactly the old rows (pointer unchanged) or the new rows (moved);
- every file its metadata references exists (manifest lists, manifests, data and delete files
  of every snapshot, metadata log);
- PyIceberg 0.12 and DuckDB read the same rows (at a sample of steps in CI, at every step
  with ``ICEFLOE_FAULT_SWEEP=full``);
- a follow-up append works.

CI (SQLite file catalog) interrupts after every step and before the catalog steps (before step
``k + 1`` is after step ``k`` for I/O steps); the file-system catalog and PostgreSQL run every
other step. ``ICEFLOE_FAULT_SWEEP=full`` runs both modes at every step on every catalog, with
the peers everywhere.
"""

from __future__ import annotations

import multiprocessing
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from icefloe.catalog import Catalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.scan.manifests import manifest_entries
from icefloe.table import Table
from support.faults import (
    IDENT,
    OPERATIONS,
    SCHEMA,
    Injector,
    Site,
    append_loop,
    close,
    prepare,
    restore,
    run_in_child,
)

FULL = os.environ.get("ICEFLOE_FAULT_SWEEP", "") == "full"
PEER_EVERY = 1 if FULL else 4
EXTRA = pa.table(
    {
        "id": pa.array([1000], pa.int64()),
        "part": pa.array([0], pa.int64()),
        "s": pa.array(["follow-up"], pa.string()),
    }
)

Rows = list[tuple[Any, ...]]


def _rows(t: Table) -> Rows:
    out = t.scan().to_arrow().sort_by("id")
    return list(zip(*(out.column(c).to_pylist() for c in ("id", "part", "s")), strict=True))


@dataclass
class Expected:
    old_location: str
    old_rows: Rows
    new_rows: Rows
    steps: list[str]


def _expect(site: Site, name: str) -> Expected:
    """The old and new state and the steps of a run without faults."""
    cat = restore(site)
    t = cat.load_table(IDENT)
    old = _rows(t)
    inj = Injector()
    with inj.installed():
        OPERATIONS[name].run(t)
    new = _rows(cat.load_table(IDENT))
    close(cat)
    assert new != old or name in ("expire", "compaction", "rewrite-manifests")
    return Expected(site.pristine_location, old, new, inj.steps)


def _assert_peers_agree(t: Table, rows: Rows, con: Any) -> None:
    from pyiceberg.table import StaticTable

    theirs = StaticTable.from_metadata(t.metadata_location).scan().to_arrow().sort_by("id")
    py_rows = list(zip(*(theirs.column(c).to_pylist() for c in ("id", "part", "s")), strict=True))
    assert py_rows == rows, "PyIceberg disagrees"
    duck = con.execute(
        f"select id, part, s from iceberg_scan('{t.metadata_location}') order by id"
    ).fetchall()
    assert [tuple(r) for r in duck] == rows, "DuckDB disagrees"


def _referenced(t: Table) -> set[str]:
    """Every file a reader of any snapshot needs: metadata files, manifest lists, manifests and
    the live data and delete files of each snapshot (not the entries marked deleted)."""
    out = {t.metadata_location, *(e.metadata_file for e in t.metadata.metadata_log)}
    for snap in t.metadata.snapshots:
        out.add(snap.manifest_list or "")
        for mf, batch in manifest_entries(t.io, snap):
            out.add(mf.manifest_path)
            live = batch.filter(pc.not_equal(batch.column("status"), 2))
            out.update(live.column("file_path").to_pylist())
    return out - {""}


def _check(cat: Catalog, exp: Expected, con: Any | None) -> bool:
    """The table is at the old or the new state, intact, agreed on, and writable; returns
    whether the commit happened."""
    t = cat.load_table(IDENT)
    moved = t.metadata_location != exp.old_location
    rows = _rows(t)
    assert rows == (exp.new_rows if moved else exp.old_rows)
    missing = [p for p in _referenced(t) if not t.io.exists(p)]
    assert missing == []
    if con is not None:
        _assert_peers_agree(t, rows, con)
    t.append(EXTRA)
    assert _rows(cat.load_table(IDENT)) == sorted([*rows, (1000, 0, "follow-up")])
    return moved


def _plan(steps: list[str], every: int) -> list[tuple[int, str]]:
    """(step, mode) pairs to inject: after every ``every``-th step, and before each catalog
    step (before an I/O step is the state after the previous one); all with FULL."""
    plan: list[tuple[int, str]] = []
    for k, name in enumerate(steps):
        if FULL or k % every == 0 or k == len(steps) - 1:
            plan.append((k, "after"))
        if FULL or k == 0 or "Catalog" in name:
            plan.append((k, "before"))
    return plan


def _sweep(site: Site, name: str, con: Any, every: int = 1) -> dict[bool, int]:
    prepare(site, OPERATIONS[name])
    exp = _expect(site, name)
    outcomes = {False: 0, True: 0}
    for i, (k, mode) in enumerate(_plan(exp.steps, every)):
        cat = restore(site)
        t = cat.load_table(IDENT)
        inj = Injector(k, mode)
        with pytest.raises(KeyboardInterrupt), inj.installed():
            OPERATIONS[name].run(t)
        assert inj.fired, (k, mode)  # (threads may order the steps differently)
        peers = con if i % PEER_EVERY == 0 or k >= len(exp.steps) - 2 else None
        try:
            outcomes[_check(cat, exp, peers)] += 1
        except Exception as e:
            raise AssertionError(f"{name}: interrupted {inj.fired} (step {k}): {e!r}") from e
        finally:
            close(cat)
    return outcomes


def _sqlite_site(root: Path) -> Site:
    return Site("sqlite", root, f"sqlite:///{root}/catalog.db")


@pytest.mark.interop
@pytest.mark.parametrize("name", list(OPERATIONS))
def test_keyboard_interrupt_at_every_step_sqlite(tmp_path: Path, name: str, duckdb_con: Any):
    outcomes = _sweep(_sqlite_site(tmp_path), name, duckdb_con)
    # the sweep crossed the commit: interrupted both before and after the pointer moved
    assert outcomes[False] and outcomes[True], outcomes


@pytest.mark.interop
@pytest.mark.parametrize("name", list(OPERATIONS))
def test_keyboard_interrupt_at_steps_hadoop(tmp_path: Path, name: str, duckdb_con: Any):
    outcomes = _sweep(Site("hadoop", tmp_path, None), name, duckdb_con, every=1 if FULL else 2)
    assert outcomes[False] and outcomes[True], outcomes


@pytest.mark.interop
@pytest.mark.postgres
@pytest.mark.parametrize("name", ["append", "mor-delete", "transaction"])
def test_keyboard_interrupt_at_steps_postgres(
    tmp_path: Path, name: str, duckdb_con: Any, postgres_uri: str
) -> None:
    site = Site("postgres", tmp_path, postgres_uri)
    outcomes = _sweep(site, name, duckdb_con, every=1 if FULL else 2)
    assert outcomes[False] and outcomes[True], outcomes


def _forkserver(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The forkserver context, its server started with this directory importable so that it
    preloads the operations (children then start in milliseconds, not seconds)."""
    from multiprocessing import forkserver

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["support.faults", "pytest"])
    path = os.pathsep.join(
        p for p in (str(Path(__file__).parent), os.environ.get("PYTHONPATH")) if p
    )
    with monkeypatch.context() as env:
        env.setenv("PYTHONPATH", path)
        forkserver.ensure_running()
    return ctx


def _kill_points(steps: list[str]) -> list[tuple[int, str]]:
    """Just before and just after the catalog's swap, and in the middle of the file writes."""
    swap = max(i for i, s in enumerate(steps) if s.endswith(("_swap_pointer", "_write_and_swap")))
    points = {(swap, "before"), (swap, "after"), (len(steps) // 3, "after")}
    if FULL:
        points |= {(k, m) for k in range(len(steps)) for m in ("before", "after")}
    return sorted(points)


@pytest.mark.interop
@pytest.mark.parametrize("kind", ["sqlite", "hadoop"])
def test_sigkill_at_sampled_steps(
    tmp_path: Path, kind: str, duckdb_con: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = _forkserver(monkeypatch)
    moved_seen = {False: 0, True: 0}
    for name in OPERATIONS:
        root = tmp_path / name
        site = _sqlite_site(root) if kind == "sqlite" else Site("hadoop", root, None)
        prepare(site, OPERATIONS[name])
        exp = _expect(site, name)
        for k, mode in _kill_points(exp.steps):
            cat = restore(site)
            cat_name = cat.name
            close(cat)
            proc = ctx.Process(target=run_in_child, args=(site, cat_name, name, k, mode))
            proc.start()
            proc.join(timeout=120)
            assert proc.exitcode == -9, (name, k, mode, proc.exitcode)
            cat = site.catalog(cat_name)
            try:
                moved_seen[_check(cat, exp, duckdb_con)] += 1
            except Exception as e:
                raise AssertionError(
                    f"{name}: killed {mode} step {k} ({exp.steps[k]}): {e!r}"
                ) from e
            finally:
                close(cat)
    assert moved_seen[False] and moved_seen[True], moved_seen


@pytest.mark.interop
def test_random_sigint_during_an_append_loop(
    tmp_path: Path, duckdb_con: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C at random moments (inside C calls too: SQLite's commit, file writes, fsync) of
    a loop of appends: every append that returned is in the table, no row appears twice or
    from nowhere, every referenced file exists, and the peers agree."""
    import random
    import re
    import signal
    import time

    uri = f"sqlite:///{tmp_path}/catalog.db"
    wh = (tmp_path / "wh").as_uri()
    cat = SqlCatalog("loop", uri=uri, warehouse=wh)
    cat.create_namespace("db")
    cat.create_table(IDENT, SCHEMA)
    count = 400 if FULL else 60
    log = tmp_path / "log.txt"
    ctx = _forkserver(monkeypatch)
    proc = ctx.Process(target=append_loop, args=(uri, wh, str(log), count))
    proc.start()
    rng = random.Random(7)
    sent = 0
    deadline = time.monotonic() + 300
    while not (log.exists() and log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.01)
    while proc.is_alive() and time.monotonic() < deadline:
        time.sleep(rng.uniform(0.005, 0.05))
        if proc.pid is not None and proc.is_alive():
            try:
                os.kill(proc.pid, signal.SIGINT)
            except ProcessLookupError:  # the loop ended between the check and the signal
                break
            sent += 1
    proc.join(timeout=60)
    text = log.read_text()
    assert proc.exitcode == 0, (proc.exitcode, text[-2000:])
    assert "error" not in text, [line for line in text.splitlines() if "error" in line]
    t = cat.load_table(IDENT)
    ids = [r[0] for r in _rows(t)]
    ok = {int(i) for i in re.findall(r"^ok (\d+)$", text, re.M)}
    assert len(ids) == len(set(ids)) and set(ids) <= set(range(count))
    assert ok <= set(ids)  # every append that returned is there
    assert sent > 10 and len(ok) < count  # and the loop was interrupted
    missing = [p for p in _referenced(t) if not t.io.exists(p)]
    assert missing == []
    _assert_peers_agree(t, _rows(t), duckdb_con)
    t.append(EXTRA)
    assert len(_rows(cat.load_table(IDENT))) == len(ids) + 1
    cat.close()
