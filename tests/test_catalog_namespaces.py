"""Namespaces on every catalog: create, list (nested), properties, drop only when empty."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from icefloe.catalog import Catalog
from icefloe.catalog.hadoop import NAMESPACE_FILE, HadoopCatalog
from icefloe.exceptions import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    ValidationError,
)
from icefloe.schema import Schema
from icefloe.types import LongType, NestedField


def _props(catalog: Catalog, ns: str) -> dict[str, str]:
    props = catalog.load_namespace_properties(ns)
    props.pop("location", None)  # the hadoop catalog reports its directory
    return props


def test_create_list_nested(catalog: Catalog) -> None:
    assert catalog.list_namespaces() == []
    catalog.create_namespace("a")
    catalog.create_namespace(("a", "b"), {"owner": "me"})
    catalog.create_namespace("a.b.c")
    catalog.create_namespace("z")
    assert catalog.list_namespaces() == [("a",), ("z",)]
    assert catalog.list_namespaces("a") == [("a", "b")]
    assert catalog.list_namespaces(("a", "b")) == [("a", "b", "c")]
    assert catalog.list_namespaces("a.b.c") == []
    assert catalog.namespace_exists("a.b") and catalog.namespace_exists(("a", "b", "c"))
    assert not catalog.namespace_exists("a.x")
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_namespaces("nope")
    with pytest.raises(NamespaceAlreadyExistsError, match=r"a\.b"):
        catalog.create_namespace("a.b")
    catalog.create_namespace_if_not_exists("a.b")
    catalog.create_namespace_if_not_exists("new")
    assert catalog.namespace_exists("new")


def test_namespace_properties(catalog: Catalog) -> None:
    catalog.create_namespace("db", {"owner": "alice", "comment": "x", "gone": "1"})
    assert _props(catalog, "db") == {"owner": "alice", "comment": "x", "gone": "1"}
    summary = catalog.update_namespace_properties(
        "db", removals={"gone", "never"}, updates={"owner": "bob", "new": "y"}
    )
    assert summary.removed == ["gone"]
    assert summary.missing == ["never"]
    assert summary.updated == ["new", "owner"]
    assert _props(catalog, "db") == {"owner": "bob", "comment": "x", "new": "y"}
    with pytest.raises(ValidationError, match="owner"):
        catalog.update_namespace_properties("db", removals={"owner"}, updates={"owner": "c"})
    with pytest.raises(NoSuchNamespaceError, match="missing"):
        catalog.load_namespace_properties("missing")
    with pytest.raises(NoSuchNamespaceError, match="missing"):
        catalog.update_namespace_properties("missing", updates={"a": "b"})


def test_drop_namespace_only_when_empty(catalog: Catalog) -> None:
    catalog.create_namespace("p")
    catalog.create_namespace("p.q")
    with pytest.raises(NamespaceNotEmptyError, match="p"):
        catalog.drop_namespace("p")
    catalog.drop_namespace("p.q")
    assert catalog.list_namespaces("p") == []
    catalog.drop_namespace("p")
    assert not catalog.namespace_exists("p")
    with pytest.raises(NoSuchNamespaceError):
        catalog.drop_namespace("p")


def test_empty_namespace_rejected(catalog: Catalog) -> None:
    with pytest.raises(NoSuchNamespaceError):
        catalog.create_namespace(())
    with pytest.raises(ValidationError):
        catalog.create_namespace("a..b")


def test_namespaces_differing_in_case_are_other_namespaces(catalog: Catalog) -> None:
    """SQLite's LIKE ignores the case of ASCII letters: ``PY`` existed because ``py.nested``
    did (tables could be created in it), and an empty ``cc`` could not be dropped beside
    ``CC.kid``."""
    import pyarrow as pa

    catalog.create_namespace(("py", "nested"))
    assert catalog.namespace_exists("py") and not catalog.namespace_exists("PY")
    with pytest.raises(NoSuchNamespaceError):
        catalog.create_table(("PY", "ghost"), pa.schema([("id", pa.int64())]))
    catalog.create_namespace("cc")
    catalog.create_namespace(("CC", "kid"))
    catalog.drop_namespace("cc")
    assert not catalog.namespace_exists("cc") and catalog.namespace_exists(("CC", "kid"))
    assert catalog.list_namespaces("CC") == [("CC", "kid")]


def test_names_no_namespace_can_have_are_not_found(catalog: Catalog) -> None:
    """A NUL cut SQLite's pattern short (``a\\x00zz`` was ``a``: its properties could be set,
    and it could not be dropped); a very long name made the pattern too complex (503)."""
    catalog.create_namespace("a")
    for call in (
        lambda name: catalog.namespace_exists(name),
        lambda name: catalog.load_namespace_properties(name),
        lambda name: catalog.update_namespace_properties(name, updates={"k": "v"}),
        lambda name: catalog.drop_namespace(name),
    ):
        with pytest.raises(ValidationError, match=r"NUL|directory name"):
            call("a\x00zz")
    long = "x" * 60_000
    assert not catalog.namespace_exists(long)
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties(long)
    with pytest.raises(NoSuchNamespaceError):
        catalog.update_namespace_properties(long, updates={"k": "v"})
    assert catalog.list_namespaces() == [("a",)]


def test_a_level_with_a_dot_does_not_stand_for_a_nested_namespace(catalog: Catalog) -> None:
    """SQL catalogs store ("a", "b") as "a.b": the one-level ("a.b",), which no catalog
    creates, read, changed and dropped the nested namespace."""
    import pyarrow as pa

    from icefloe.exceptions import NoSuchTableError

    catalog.create_namespace(("al", "b"), {"k": "v"})
    catalog.create_table(("al", "b", "t"), pa.schema([pa.field("id", pa.int64())]))
    dotted = ("al.b",)
    assert not catalog.namespace_exists(dotted)
    with pytest.raises(NoSuchNamespaceError):
        catalog.load_namespace_properties(dotted)
    with pytest.raises(NoSuchNamespaceError):
        catalog.update_namespace_properties(dotted, updates={"k": "changed"})
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_namespaces(dotted)
    with pytest.raises(NoSuchTableError):
        catalog.load_table(("al.b", "t"))
    with pytest.raises(NoSuchNamespaceError):
        catalog.drop_namespace(dotted)
    # nor do listing, dropping and renaming reach its tables and views (they dropped, moved
    # and listed the entries of ("al", "b"))
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_tables(dotted)
    with pytest.raises(NoSuchTableError):
        catalog.drop_table(("al.b", "t"))
    if not isinstance(catalog, HadoopCatalog):  # which cannot rename tables
        with pytest.raises(NoSuchTableError):
            catalog.rename_table(("al.b", "t"), ("al", "b", "moved"))
    if catalog.keeps_views:
        from icefloe.exceptions import NoSuchViewError

        catalog.create_view(
            ("al", "b", "v"), "select 1", pa.schema([("id", pa.int64())]), dialect="spark"
        )
        with pytest.raises(NoSuchNamespaceError):
            catalog.list_views(dotted)
        with pytest.raises(NoSuchViewError):
            catalog.drop_view(("al.b", "v"))
        with pytest.raises(NoSuchViewError):
            catalog.rename_view(("al.b", "v"), ("al", "b", "w"))
        assert catalog.list_views(("al", "b")) == [("al", "b", "v")]
    assert _props(catalog, "al.b") == {"k": "v"}  # the dotted string names the nested one
    assert catalog.list_tables(("al", "b")) == [("al", "b", "t")]


def test_a_file_system_namespace_is_located_at_its_directory(tmp_path: Path) -> None:
    """A file-system catalog creates a namespace's tables in its directory: a ``location``
    property naming another one is refused, and the location reported is the directory. The
    catalog took such a property and reported it, while its tables went to the directory."""
    cat = HadoopCatalog("fs", warehouse=(tmp_path / "wh").as_uri())
    elsewhere = str(tmp_path / "elsewhere")
    with pytest.raises(ValidationError, match="lives at its directory"):
        cat.create_namespace("z", {"location": elsewhere, "owner": "me"})
    assert not cat.namespace_exists("z")
    cat.create_namespace("z", {"location": str(tmp_path / "wh" / "z"), "owner": "me"})
    with pytest.raises(ValidationError, match="lives at its directory"):
        cat.update_namespace_properties("z", updates={"location": elsewhere})
    # the directory however spelled (Java reports file:/x)
    own = tmp_path / "wh" / "z"
    for spelled in (f"file:{own}", f"file://localhost{own}", f"{own.as_uri()}/"):
        cat.update_namespace_properties("z", updates={"location": spelled})
    # a properties file written by other means names another location: not reported
    (tmp_path / "wh" / "z" / NAMESPACE_FILE).write_text(json.dumps({"location": elsewhere}))
    reported = cat.load_namespace_properties("z")["location"]
    t = cat.create_table("z.t", Schema(NestedField(1, "id", LongType())))
    assert t.location == f"{reported}/t" == (tmp_path / "wh" / "z" / "t").as_uri()
    assert not (tmp_path / "elsewhere").exists()
