"""Namespaces on every catalog: create, list (nested), properties, drop only when empty."""

from __future__ import annotations

import pytest

from icefloe.catalog import Catalog
from icefloe.exceptions import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    ValidationError,
)


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
