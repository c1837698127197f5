"""View operations of the REST catalog: list, load, exists, drop."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from icefloe.catalog.base import Identifier, to_identifier
from icefloe.catalog.rest import config as ep
from icefloe.catalog.rest.client import RestClient
from icefloe.catalog.rest.errors import exception_for_error
from icefloe.catalog.rest.wire import identifier_from_json
from icefloe.exceptions import NoSuchViewError

__all__ = ["RestViews"]


class RestViews(RestClient):
    """Views over REST."""

    def list_views(self, namespace: str | Iterable[str]) -> list[Identifier]:
        """Identifiers of the views in ``namespace``."""
        self._require(ep.LIST_VIEWS)
        ns = to_identifier(namespace)
        self._ns_string(ns)
        found = self._paged(
            f"{self._ns_path(ns)}/views", f"list views of {'.'.join(ns)!r}", "identifiers", {}
        )
        return [identifier_from_json(i) for i in found]

    def load_view(self, identifier: str | Iterable[str]) -> dict[str, Any]:
        """The view's ``LoadViewResult`` (``metadata-location``, ``metadata``, ``config``)."""
        self._require(ep.LOAD_VIEW)
        ident = self._table_identifier(identifier)
        resp = self._send("GET", self._view_path(ident))
        if resp.status == 404:
            raise NoSuchViewError(f"view {'.'.join(ident)!r} does not exist")
        if resp.status != 200:
            raise exception_for_error(resp.status, resp.body, f"load view {'.'.join(ident)!r}")
        body: dict[str, Any] = resp.json()
        return body

    def view_exists(self, identifier: str | Iterable[str]) -> bool:
        """Whether the view exists."""
        try:
            self.load_view(identifier)
        except NoSuchViewError:
            return False
        return True

    def drop_view(self, identifier: str | Iterable[str]) -> None:
        """Drop a view."""
        self._require(ep.DROP_VIEW)
        ident = self._table_identifier(identifier)
        resp = self._send("DELETE", self._view_path(ident))
        if resp.status == 404:
            raise NoSuchViewError(f"view {'.'.join(ident)!r} does not exist")
        if resp.status not in (200, 204):
            raise exception_for_error(resp.status, resp.body, f"drop view {'.'.join(ident)!r}")
