"""View operations of the REST catalog: list, create, load, exists, replace and other changes
(``POST .../views/{view}`` with requirements and updates), rename, register and drop. Each
needs the server to offer its endpoint (config ``endpoints``, or ``view-endpoints-supported``
when the server lists none); otherwise :class:`UnsupportedFeatureError`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from icefloe.catalog.base import Identifier, to_identifier
from icefloe.catalog.rest import config as ep
from icefloe.catalog.rest.client import RestClient
from icefloe.catalog.rest.errors import UNKNOWN_OUTCOME_STATUS
from icefloe.catalog.rest.http import TransportError
from icefloe.catalog.rest.wire import identifier_from_json, identifier_to_json, uuid7
from icefloe.catalog.views import View, new_version
from icefloe.exceptions import (
    CommitFailedError,
    CommitStateUnknownError,
    NoSuchViewError,
    ValidationError,
    ViewAlreadyExistsError,
)
from icefloe.metadata.updates import TableUpdate
from icefloe.metadata.view_metadata import AssertViewUUID, ViewMetadata

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.schema import Schema

__all__ = ["RestViews", "view_result"]


def view_result(body: Any, what: str) -> tuple[str, ViewMetadata, dict[str, str]]:
    """``(metadata-location, metadata, config)`` of a ``LoadViewResult``."""
    if not isinstance(body, dict):
        raise ValidationError(f"{what}: the server's answer is not a JSON object")
    location = body.get("metadata-location")
    if not isinstance(location, str) or not location:
        raise ValidationError(f"{what}: the server's answer has no metadata-location")
    config = body.get("config") or {}
    if not isinstance(config, dict):
        raise ValidationError(f"{what}: the server's config is not an object")
    return (
        location,
        ViewMetadata.from_json(body.get("metadata")),
        {str(k): str(v) for k, v in config.items()},
    )


class RestViews(RestClient):
    """Views over REST."""

    keeps_views = True

    def _view(self, ident: Identifier, body: Any, what: str) -> View:
        location, metadata, _ = view_result(body, what)
        return View(ident, metadata, location, self)

    def list_views(self, namespace: str | Iterable[str]) -> list[Identifier]:
        """Identifiers of the views in ``namespace`` (none from a server without view
        endpoints, as Iceberg Java's REST catalog answers)."""
        ns = to_identifier(namespace)
        self._ns_string(ns)
        if ep.LIST_VIEWS not in self.endpoints:
            return []
        found = self._paged(
            f"{self._ns_path(ns)}/views", f"list views of {'.'.join(ns)!r}", "identifiers", {}
        )
        return [identifier_from_json(i) for i in found]

    def create_view(
        self,
        identifier: str | Iterable[str],
        sql: str | Mapping[str, str],
        schema: Schema | pa.Schema,
        *,
        dialect: str | None = None,
        default_namespace: Iterable[str] | None = None,
        default_catalog: str | None = None,
        properties: Mapping[str, str] | None = None,
        location: str | None = None,
        summary: Mapping[str, str] | None = None,
    ) -> View:
        """Create a view on the server (see :meth:`Catalog.create_view`)."""
        from icefloe.arrow_schema import to_schema

        self._require(ep.CREATE_VIEW)
        ident = self._table_identifier(identifier)
        schema = to_schema(schema)
        version = new_version(1, ident, sql, dialect, default_namespace, default_catalog, summary)
        body: dict[str, Any] = {
            "name": ident[-1],
            "schema": schema.to_json(),
            "view-version": version.to_json(),
            "properties": dict(properties or {}),
        }
        if location:
            body["location"] = location
        what = f"create view {'.'.join(ident)!r}"
        resp = self._call(
            "POST",
            f"{self._ns_path(ident[:-1])}/views",
            what,
            body=body,
            exists=ViewAlreadyExistsError,
            mutation=True,
        )
        return self._view(ident, resp.json(), what)

    def load_view(self, identifier: str | Iterable[str]) -> View:
        """The view (``LoadViewResult``); :class:`NoSuchViewError` if there is none."""
        self._require(ep.LOAD_VIEW)
        ident = self._table_identifier(identifier)
        resp = self._send("GET", self._view_path(ident))
        what = f"load view {'.'.join(ident)!r}"
        if resp.status == 404:
            raise NoSuchViewError(f"view {'.'.join(ident)!r} does not exist")
        if resp.status != 200:
            raise self._error(resp, what)
        return self._view(ident, resp.json(), what)

    def view_exists(self, identifier: str | Iterable[str]) -> bool:
        """Whether the view exists (HEAD, or GET when the server lists no HEAD; false on a
        server without view endpoints, as Iceberg Java's REST catalog answers)."""
        ident = self._table_identifier(identifier)
        method = "HEAD" if ep.VIEW_EXISTS in self.endpoints else "GET"
        if method == "GET" and ep.LOAD_VIEW not in self.endpoints:
            return False
        resp = self._send(method, self._view_path(ident))
        if resp.status == 404:
            return False
        if resp.status not in (200, 204):
            raise self._error(resp, f"view {'.'.join(ident)!r}")
        return True

    def commit_view(
        self,
        view: View,
        requirements: Iterable[AssertViewUUID],
        updates: Iterable[TableUpdate],
        rebuild: Callable[[ViewMetadata], list[TableUpdate]] | None = None,
    ) -> View:
        """Send the updates; the server checks the requirements against its current view (and
        retries a lost race itself: ``rebuild`` is not used). An answer lost or a 5xx is
        :class:`CommitStateUnknownError` (the server may have committed), as Iceberg Java's
        view commit error handler says."""
        self._require(ep.UPDATE_VIEW)
        what = f"commit to view {view.name!r}"
        body = {
            "identifier": identifier_to_json(view.identifier),
            "requirements": [r.to_json() for r in requirements],
            "updates": [u.to_json() for u in updates],
        }
        headers = {"Idempotency-Key": uuid7()} if self.idempotency_lifetime else {}
        try:
            resp = self._send("POST", self._view_path(view.identifier), body=body, headers=headers)
        except TransportError as exc:
            if not exc.maybe_sent:
                raise
            raise CommitStateUnknownError(f"{what}: the outcome is unknown ({exc})") from exc
        if resp.status in UNKNOWN_OUTCOME_STATUS:
            failure = self._error(resp, what)
            raise CommitStateUnknownError(f"{what}: the outcome is unknown ({failure})")
        if resp.status not in (200, 204):  # a 409 is a conflict: the commit failed
            raise self._error(resp, what, CommitFailedError)
        return self._view(view.identifier, resp.json(), what)

    def drop_view(self, identifier: str | Iterable[str]) -> None:
        """Drop a view (the server decides what happens to its files)."""
        self._require(ep.DROP_VIEW)
        ident = self._table_identifier(identifier)
        resp = self._call(
            "DELETE",
            self._view_path(ident),
            f"drop view {'.'.join(ident)!r}",
            ok=(200, 204, 404),
            mutation=True,
        )
        if resp.status == 404:
            raise NoSuchViewError(f"view {'.'.join(ident)!r} does not exist")

    def _rename_view_entry(
        self, source: str | Iterable[str], target: str | Iterable[str]
    ) -> Identifier:
        """Rename a view on the server."""
        self._require(ep.RENAME_VIEW)
        src = self._table_identifier(source)
        dst = self._table_identifier(target)
        self._call(
            "POST",
            f"{self._prefix}/views/rename",
            f"rename view {'.'.join(src)!r} to {'.'.join(dst)!r}",
            body={"source": identifier_to_json(src), "destination": identifier_to_json(dst)},
            exists=ViewAlreadyExistsError,
            mutation=True,
        )
        return dst

    def register_view(self, identifier: str | Iterable[str], metadata_location: str) -> View:
        """Register an existing view metadata file as a view."""
        self._require(ep.REGISTER_VIEW)
        ident = self._table_identifier(identifier)
        what = f"register view {'.'.join(ident)!r}"
        resp = self._call(
            "POST",
            f"{self._ns_path(ident[:-1])}/register-view",
            what,
            body={"name": ident[-1], "metadata-location": metadata_location},
            exists=ViewAlreadyExistsError,
            mutation=True,
        )
        return self._view(ident, resp.json(), what)
