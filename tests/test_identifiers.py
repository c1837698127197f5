"""Namespace and table names are checked against path syntax before anything is written.

Rejected with ``ValidationError``: empty parts, ``.`` and ``..``, ``/``, ``\\``, control
characters (NUL included), ``?``, ``#``, ``%``, ``.`` inside a namespace level and parts over
255 UTF-8 bytes. A property test over generated identifiers: an accepted one gets a location
strictly under the warehouse, and creating, writing and purging it never touches another table.
"""

from __future__ import annotations

import datetime
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.catalog import Catalog
from icefloe.catalog.hadoop import HadoopCatalog
from icefloe.catalog.sql import SqlCatalog
from icefloe.exceptions import NamespaceAlreadyExistsError, ValidationError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False)])

HOSTILE_TABLES = [
    ("db", ".."),
    ("db", "."),
    ("..", "t"),
    ("db", "a/b"),
    ("db", "..\\..\\x"),
    ("db", "t?x=1#f"),
    ("db", "t#f"),
    ("db", "100%"),
    ("db", "t\x00"),
    ("db", "t\nx"),
    ("db", "x" * 256),
    ("db", "é" * 128),
    ("d.b", "t"),
    ("db", ""),
]


def _tree(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*")} if root.exists() else set()


@pytest.mark.parametrize("ident", HOSTILE_TABLES, ids=repr)
def test_hostile_table_names_are_refused_before_writing(
    catalog: Catalog, tmp_path: Path, ident: tuple[str, ...]
) -> None:
    catalog.create_namespace("db")
    before = _tree(tmp_path)
    with pytest.raises(ValidationError):
        if ident[0] != "db":
            catalog.create_namespace(ident[:-1])
        catalog.create_table(ident, SCHEMA)
    assert _tree(tmp_path) == before
    assert catalog.list_tables("db") == []


@pytest.mark.parametrize("namespace", [("..",), ("a", ".."), ("a/b",), ("a.b",), ("a?",)], ids=repr)
def test_hostile_namespaces_are_refused(catalog: Catalog, namespace: tuple[str, ...]) -> None:
    with pytest.raises(ValidationError):
        catalog.create_namespace(namespace)
    assert catalog.list_namespaces() == []


def test_names_with_lone_surrogates_are_refused_by_every_lookup(catalog: Catalog) -> None:
    """No catalog can store such a name (databases and URIs take UTF-8): PostgreSQL's driver
    raised a bare UnicodeEncodeError on lookups that create_namespace refused typed."""
    catalog.create_namespace("db")
    lookups = [
        lambda: catalog.namespace_exists("a\ud800"),
        lambda: catalog.list_tables("a\ud800"),
        lambda: catalog.table_exists(("db", "t\ud800")),
        lambda: catalog.load_table(("db", "t\ud800")),
        lambda: catalog.drop_table(("db", "t\ud800")),
        lambda: catalog.create_namespace("a\ud800"),
    ]
    for lookup in lookups:
        with pytest.raises(ValidationError, match=r"lone surrogates|must not contain"):
            lookup()


def test_longest_names_and_unicode_are_accepted(catalog: Catalog) -> None:
    name = "é" * 127 + "x"  # 255 bytes
    catalog.create_namespace(("db", "ünï cödé ns"))
    t = catalog.create_table(("db", "ünï cödé ns", name), SCHEMA)
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    assert catalog.load_table(("db", "ünï cödé ns", name)).scan().to_arrow().num_rows == 1


def test_a_name_too_long_for_a_directory_names_no_table(catalog: Catalog) -> None:
    """Over 255 bytes no catalog created the table: it does not exist (the file-system
    catalog failed with the store's ENAMETOOLONG instead)."""
    from icefloe.exceptions import NoSuchTableError

    catalog.create_namespace("db")
    for ident in (("db", "x" * 300), ("db", "y" * 300, "t")):
        assert not catalog.table_exists(ident)
        with pytest.raises(NoSuchTableError):
            catalog.load_table(ident)
        with pytest.raises(NoSuchTableError):
            catalog.drop_table(ident)


def test_rename_and_register_check_the_new_name(tmp_path: Path) -> None:
    cat = SqlCatalog("c", uri=f"sqlite:///{tmp_path}/c.db", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    t = cat.create_table("db.t", SCHEMA)
    with pytest.raises(ValidationError):
        cat.rename_table("db.t", ("db", ".."))
    with pytest.raises(ValidationError):
        cat.register_table(("db", "a#b"), t.metadata_location)
    assert cat.list_tables("db") == [("db", "t")]
    cat.close()


# -- property: accepted identifiers stay inside the warehouse and never touch another table ----

_CHARS = st.sampled_from(list("ab_-. /\\?#%:\x00\n\t~é中")) | st.characters()
_PART = st.one_of(
    st.text(_CHARS, min_size=0, max_size=8),
    st.sampled_from([".", "..", "", "metadata", "data", "x" * 255, "x" * 256, "é" * 128]),
)


@contextmanager
def _catalog(kind: str) -> Iterator[tuple[Catalog, Path]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        wh = root / "wh"
        if kind == "hadoop":
            yield HadoopCatalog("fs", warehouse=wh.as_uri()), root
        else:
            cat = SqlCatalog("c", uri=f"sqlite:///{root}/c.db", warehouse=wh.as_uri())
            yield cat, root
            cat.close()


def _files(root: Path) -> dict[str, int]:
    out = {}
    for directory, _, names in os.walk(root):
        for n in names:
            p = os.path.join(directory, n)
            out[p] = os.stat(p).st_mtime_ns
    return out


@pytest.mark.parametrize("kind", ["sqlite", "hadoop"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(namespace=st.lists(_PART, min_size=1, max_size=3), name=_PART)
def test_accepted_identifiers_stay_in_the_warehouse(
    kind: str, namespace: list[str], name: str
) -> None:
    with _catalog(kind) as (cat, root):
        cat.create_namespace("db")
        victim = cat.create_table("db.victim", SCHEMA)
        victim.append(pa.table({"id": pa.array([7], pa.int64())}))
        theirs = _files(root / "wh" / "db" / "victim")
        wh = (root / "wh").resolve()
        try:
            for depth in range(1, len(namespace) + 1):
                with suppress(NamespaceAlreadyExistsError):
                    cat.create_namespace(tuple(namespace[:depth]))
            t = cat.create_table((*namespace, name), SCHEMA)
        except ValidationError:
            # refused: nothing but the victim and the catalog's own files exist
            outside = {
                p for p in _files(root) if not p.startswith(str(root / "wh" / "db" / "victim"))
            }
            assert all(
                p.endswith(
                    ("c.db", "c.db-journal", "c.db-wal", "c.db-shm", ".icefloe-namespace.json")
                )
                for p in outside
            ), outside
            return
        location = Path(t.location.removeprefix("file://")).resolve()
        assert location != wh and wh in location.parents
        if (*namespace, name) != ("db", "victim"):
            t.append(pa.table({"id": pa.array([1], pa.int64())}))
            # orphan removal (every file counts as old) never lists or deletes the victim's
            victim_dir = str((root / "wh" / "db" / "victim").resolve())
            listed = t.remove_orphan_files(older_than=datetime.timedelta(0), dry_run=True)
            assert not [p for p in listed if victim_dir in p], listed
            t.remove_orphan_files(older_than=datetime.timedelta(0))
            cat.drop_table((*namespace, name), purge=True)
        assert _files(root / "wh" / "db" / "victim") == theirs
        assert cat.load_table("db.victim").scan().to_arrow().column("id").to_pylist() == [7]


def test_file_system_entries_made_elsewhere_still_open(tmp_path: Path) -> None:
    """Lookups only refuse names unsafe as directory names: a namespace directory another
    engine named ``my.db`` (refused for new namespaces) still lists and loads."""
    cat = HadoopCatalog("fs", warehouse=(tmp_path / "wh").as_uri())
    cat.create_namespace("db")
    cat.create_table("db.t", SCHEMA).append(pa.table({"id": pa.array([1], pa.int64())}))
    (tmp_path / "wh" / "db").rename(tmp_path / "wh" / "my.db")
    assert cat.list_tables(("my.db",)) == [("my.db", "t")]
    assert cat.load_table(("my.db", "t")).current_snapshot() is not None
    with pytest.raises(ValidationError):
        cat.load_table(("..", "t"))
