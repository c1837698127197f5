"""Namespace operations of the REST catalog: create, list (all pages), load, update
properties, drop, exists (HEAD, or GET when the server lists no HEAD).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from icefloe.catalog.base import (
    Identifier,
    PropertiesUpdateSummary,
    check_namespace,
    to_identifier,
)
from icefloe.catalog.rest import config as ep
from icefloe.catalog.rest.client import RestClient
from icefloe.catalog.rest.wire import answer_list, answer_map, answer_object, namespace_from_json
from icefloe.exceptions import NamespaceAlreadyExistsError
from icefloe.properties import string_map

__all__ = ["RestNamespaces"]


class RestNamespaces(RestClient):
    """Namespaces over REST."""

    def create_namespace(
        self, namespace: str | Iterable[str], properties: Mapping[str, str] | None = None
    ) -> None:
        """Create a namespace; :class:`NamespaceAlreadyExistsError` if it exists."""
        self._require(ep.CREATE_NAMESPACE)
        ns = check_namespace(to_identifier(namespace), dots=True)  # a new name, as everywhere
        self._ns_string(ns)
        self._call(
            "POST",
            f"{self._prefix}/namespaces",
            f"create namespace {'.'.join(ns)!r}",
            exists=NamespaceAlreadyExistsError,
            body={"namespace": list(ns), "properties": string_map(properties, "properties")},
            mutation=True,
        )

    def list_namespaces(self, namespace: str | Iterable[str] = ()) -> list[Identifier]:
        """The namespaces directly under ``namespace`` (all pages)."""
        self._require(ep.LIST_NAMESPACES)
        parent = to_identifier(namespace)
        query = {"parent": self._separator.join(self._ns_levels(parent))} if parent else {}
        found = self._paged(
            f"{self._prefix}/namespaces",
            f"list namespaces {'.'.join(parent)!r}",
            "namespaces",
            query,
        )
        return [namespace_from_json(ns) for ns in found]

    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        """The properties of a namespace."""
        self._require(ep.LOAD_NAMESPACE)
        ns = to_identifier(namespace)
        self._ns_string(ns)
        what = f"load namespace {'.'.join(ns)!r}"
        body = answer_object(self._call("GET", self._ns_path(ns), what).json(), what)
        return answer_map(body.get("properties"), what)

    def update_namespace_properties(
        self,
        namespace: str | Iterable[str],
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Remove and set namespace properties in one request."""
        self._require(ep.UPDATE_NAMESPACE)
        ns = to_identifier(namespace)
        self._ns_string(ns)
        removal_set, update_map = self._check_update(removals, updates)
        what = f"update namespace {'.'.join(ns)!r}"
        body = self._call(
            "POST",
            f"{self._ns_path(ns)}/properties",
            what,
            body={"removals": sorted(removal_set), "updates": update_map},
            mutation=True,
        ).json()
        body = answer_object(body, what)
        return PropertiesUpdateSummary(
            removed=sorted(str(k) for k in answer_list(body.get("removed"), what)),
            updated=sorted(str(k) for k in answer_list(body.get("updated"), what)),
            missing=sorted(str(k) for k in answer_list(body.get("missing"), what)),
        )

    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        """Drop an empty namespace."""
        self._require(ep.DROP_NAMESPACE)
        ns = to_identifier(namespace)
        self._ns_string(ns)
        self._call("DELETE", self._ns_path(ns), f"drop namespace {'.'.join(ns)!r}", mutation=True)

    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        """Whether the namespace exists (HEAD, or GET when the server lists no HEAD)."""
        ns = to_identifier(namespace)
        self._ns_string(ns)
        method = "HEAD" if ep.NAMESPACE_EXISTS in self.endpoints else "GET"
        resp = self._send(method, self._ns_path(ns))
        if resp.status == 404:
            return False
        if resp.status not in (200, 204):
            raise self._error(resp, f"namespace {'.'.join(ns)!r}")
        return True
