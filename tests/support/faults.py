"""Fault injection for the write paths: every I/O and catalog step of an operation is counted,
then the operation is interrupted at each step in turn.

:class:`Injector` wraps the methods of :class:`~icefloe.io.FileIO`, :class:`~icefloe.io.InputFile`
and :class:`~icefloe.io.OutputFile` and the catalogs' commit and pointer methods. Each call made
while no other wrapped call is running on the same thread is one *step*; at step ``target`` the
injector fires ``before`` or ``after`` the real call. Firing raises ``KeyboardInterrupt`` (what
Ctrl-C does, including from inside a C call that already succeeded) or kills the process with a
real ``SIGKILL``.

:data:`OPERATIONS` are the operations under test, each a table set up by ``prepare`` and a change
made by ``run``; :func:`restore` puts a table back at its prepared state (files and catalog
entry) so every injected run starts from the same state.
"""

from __future__ import annotations

import functools
import importlib
import os
import shutil
import signal
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from icefloe import io as icefloe_io
from icefloe.catalog import Catalog
from icefloe.catalog.base import Catalog as BaseCatalog
from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.metastore import MetastoreCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.table import Table

# The modules the operations import lazily, loaded up front so that a child forked from a
# process that imported this module (the forkserver's preload) starts warm.
for _module in (
    "icefloe.table.expire",
    "icefloe.table.maintenance",
    "icefloe.table.operations",
    "icefloe.table.rewrite_manifests",
    "icefloe.table.row_level",
    "icefloe.table.scan",
    "icefloe.read",
    "pyarrow.dataset",
    "pyarrow.parquet",
    "sqlalchemy.dialects.sqlite",
):
    importlib.import_module(_module)

IDENT = "db.t"

# (owner, method name): every I/O primitive and every catalog step of a commit.
_IO_METHODS = [
    (icefloe_io.InputFile, "read"),
    (icefloe_io.InputFile, "open"),
    (icefloe_io.InputFile, "length"),
    (icefloe_io.OutputFile, "write"),
    (icefloe_io.OutputFile, "create"),
    (icefloe_io.FileIO, "exists"),
    (icefloe_io.FileIO, "delete"),
    (icefloe_io.FileIO, "delete_prefix"),
    (icefloe_io.FileIO, "is_dir"),
    (icefloe_io.FileIO, "list_dir"),
    (icefloe_io.FileIO, "list_prefix"),
    (icefloe_io.FileIO, "make_dirs"),
    (icefloe_io.FileIO, "sync"),
    (icefloe_io.FileIO, "sync_soon"),
    (icefloe_io.FileIO, "sync_soon_all"),
    (icefloe_io.FileIO, "write_new_all"),
]
_CATALOG_METHODS = [
    (BaseCatalog, "commit_table"),
    (MetastoreCatalog, "_write_and_swap"),
    (HadoopCatalog, "_write_and_swap"),
    (SqlCatalog, "_swap_pointer"),
    (SqlCatalog, "_get_pointer"),
]


class Injector:
    """Counts steps and fires at step ``target`` (``mode`` ``before`` or ``after`` the call)."""

    def __init__(self, target: int | None = None, mode: str = "before", kill: bool = False):
        self.target = target
        self.mode = mode
        self.kill = kill
        self.steps: list[str] = []
        self.fired: str | None = None
        self._lock = threading.Lock()
        self._local = threading.local()

    def _fire(self, name: str) -> None:
        self.fired = f"{self.mode} {name}"
        if self.kill:
            os.kill(os.getpid(), signal.SIGKILL)
        raise KeyboardInterrupt(f"injected {self.mode} step {self.target}: {name}")

    def call(
        self, name: str, fn: Callable[..., Any], *args: Any, container: bool = False, **kwargs: Any
    ) -> Any:
        """Run ``fn`` as one step. I/O calls inside an I/O step are part of it; a catalog
        step is a ``container``: the steps inside it count too (so a commit is interrupted
        before it starts, at each of its own steps, and after it returned)."""
        if getattr(self._local, "depth", 0):
            return fn(*args, **kwargs)
        with self._lock:
            index = len(self.steps)
            self.steps.append(name)
        hit = index == self.target
        if hit and self.mode == "before":
            self._fire(name)
        self._local.depth = 0 if container else 1
        try:
            result = fn(*args, **kwargs)
            if name.endswith("list_prefix"):
                result = list(result)  # the listing happens inside the step
        finally:
            self._local.depth = 0
        if hit and self.mode == "after":
            closing = getattr(result, "close", None)
            if callable(closing):  # a stream the interrupted caller never gets: closed, as
                closing()  # the interpreter would at exit (no ResourceWarning)
            self._fire(name)
        return result

    @contextmanager
    def installed(self) -> Iterator[Injector]:
        """Wrap every method of :data:`_IO_METHODS` and :data:`_CATALOG_METHODS`."""
        saved: list[tuple[type, str, Any]] = []
        for owner, name in _IO_METHODS + _CATALOG_METHODS:
            real = owner.__dict__.get(name)
            if real is None:
                continue
            saved.append((owner, name, real))
            container = (owner, name) in _CATALOG_METHODS
            setattr(owner, name, self._wrap(f"{owner.__name__}.{name}", real, container))
        try:
            yield self
        finally:
            for owner, name, real in reversed(saved):
                setattr(owner, name, real)

    def _wrap(self, label: str, real: Callable[..., Any], container: bool) -> Callable[..., Any]:
        @functools.wraps(real)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return self.call(label, real, *args, container=container, **kwargs)

        return wrapper


# -- the operations ------------------------------------------------------------------------------


def _rows(ids: range | list[int], tag: str = "v") -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "part": pa.array([i % 2 for i in ids], pa.int64()),
            "s": pa.array([f"{tag}{i}" for i in ids], pa.string()),
        }
    )


SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("part", pa.int64()),
        pa.field("s", pa.string()),
    ]
)


@dataclass(frozen=True)
class Operation:
    """A table (``properties``, built by ``prepare``) and the change ``run`` makes to it."""

    properties: dict[str, str]
    prepare: Callable[[Table], None]
    run: Callable[[Table], Any]


def _three_appends(t: Table) -> None:
    for start in (0, 10, 20):
        t.append(_rows(range(start, start + 5)))


def _transaction(t: Table) -> None:
    with t.transaction() as tx:
        tx.append(_rows(range(100, 103), "n"))
        tx.delete("id < 3")
        tx.set_properties({"note": "multi"})


def _prepare_expire(t: Table) -> None:
    _three_appends(t)
    t.delete("id = 11")


MOR = {"format-version": "3", "write.delete.mode": "merge-on-read"}
COW = {"format-version": "2", "write.delete.mode": "copy-on-write"}

OPERATIONS: dict[str, Operation] = {
    "append": Operation(MOR, _three_appends, lambda t: t.append(_rows(range(50, 54), "a"))),
    "mor-delete": Operation(MOR, _three_appends, lambda t: t.delete("id >= 3 and id < 12")),
    "cow-delete": Operation(COW, _three_appends, lambda t: t.delete("id >= 3 and id < 12")),
    "upsert": Operation(
        {**MOR, "write.merge.mode": "merge-on-read"},
        _three_appends,
        lambda t: t.upsert(_rows([2, 11, 60], "u"), ["id"]),
    ),
    "overwrite": Operation(
        COW, _three_appends, lambda t: t.overwrite(_rows([70, 71], "o"), "part = 1")
    ),
    "compaction": Operation(
        MOR,
        lambda t: (_three_appends(t), t.delete("id = 4")),
        lambda t: t.rewrite_data_files(min_input_files=2),
    ),
    "expire": Operation(
        COW,
        _prepare_expire,
        lambda t: t.expire_snapshots(older_than_ms=2**62, retain_last=1),
    ),
    "transaction": Operation(MOR, _three_appends, _transaction),
    "rewrite-manifests": Operation(COW, _three_appends, lambda t: t.rewrite_manifests()),
}


# -- table state: prepare once, restore before every injected run ------------------------------


@dataclass
class Site:
    """Where one operation's table lives, and its prepared state."""

    kind: str  # "sqlite" | "postgres" | "hadoop"
    root: Path
    uri: str | None
    pristine_location: str = ""
    files: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def warehouse(self) -> Path:
        return self.root / "wh"

    @property
    def saved(self) -> Path:
        return self.root / "pristine"

    def catalog(self, name: str | None = None) -> Catalog:
        """A catalog object; for SQL named ``name``, else a new name (no entries yet)."""
        if self.kind == "hadoop":
            return HadoopCatalog("fs", warehouse=self.warehouse.as_uri())
        assert self.uri is not None
        name = name or f"f{uuid.uuid4().hex[:12]}"
        return SqlCatalog(name, uri=self.uri, warehouse=self.warehouse.as_uri())


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Relative path -> (size, mtime in ns) of every file under ``root``."""
    out = {}
    for directory, _, names in os.walk(root):
        for n in names:
            st = os.stat(os.path.join(directory, n))
            out[os.path.relpath(os.path.join(directory, n), root)] = (st.st_size, st.st_mtime_ns)
    return out


def prepare(site: Site, op: Operation) -> None:
    """Create and prepare the table, then save its files as the pristine state."""
    site.root.mkdir(parents=True, exist_ok=True)
    cat = site.catalog()
    cat.create_namespace("db")
    t = cat.create_table(IDENT, SCHEMA, properties=op.properties)
    op.prepare(t)
    site.pristine_location = t.metadata_location
    close(cat)
    shutil.copytree(site.warehouse, site.saved)
    site.files = _tree(site.warehouse)


def restore(site: Site) -> Catalog:
    """The table back at its pristine state, through a fresh catalog: files the last run
    added are removed, files it removed or changed are copied back."""
    now = _tree(site.warehouse)
    for rel in now.keys() - site.files.keys():
        os.unlink(site.warehouse / rel)
    for rel, stat in site.files.items():
        if now.get(rel) != stat:
            (site.warehouse / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(site.saved / rel, site.warehouse / rel)
    cat = site.catalog()
    if isinstance(cat, MetastoreCatalog):
        cat.create_namespace("db")
        cat.register_table(IDENT, site.pristine_location)
    return cat


def close(cat: Catalog) -> None:
    if isinstance(cat, SqlCatalog):
        cat.close()


def run_in_child(site: Site, catalog_name: str, name: str, target: int, mode: str) -> None:
    """Child process: run operation ``name`` on the restored table and die by a real SIGKILL
    at step ``target``; exit code 0 if the step was never reached."""
    t = site.catalog(catalog_name).load_table(IDENT)
    with Injector(target, mode, kill=True).installed():
        OPERATIONS[name].run(t)
    os._exit(0)


def append_loop(uri: str, warehouse: str, log: str, count: int) -> None:
    """Child process: ``count`` appends of one row each (id = its number) under the parent's
    random SIGINTs; ``log`` gets ``ready``, then ``ok <i>`` for every append that returned.

    A SIGINT raises ``KeyboardInterrupt`` (as Python's default handler does, at the next
    bytecode after a C call returns) only while an append runs, at most once per append, so
    the loop itself is never interrupted."""
    armed = {"on": False}

    def on_sigint(signum: int, frame: Any) -> None:
        if armed["on"]:
            armed["on"] = False
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    t = SqlCatalog("loop", uri=uri, warehouse=warehouse).load_table(IDENT)
    with open(log, "a", buffering=1) as out:
        out.write("ready\n")
        for i in range(count):
            try:
                armed["on"] = True
                t.append(_rows([i]))
                armed["on"] = False
                out.write(f"ok {i}\n")
            except KeyboardInterrupt:
                pass
            except Exception as exc:  # reported by the parent
                out.write(f"error {i} {type(exc).__name__}: {exc}".replace("\n", " ") + "\n")
    os._exit(0)
