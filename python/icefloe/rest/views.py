"""The REST catalog's view operations over an icefloe catalog that keeps views: list, create,
load, exists, replace (requirements and updates, retried on a lost race while the requirements
hold), rename, register and drop. A create keeps the client's first version as sent (its
summary and timestamp); the server assigns the schema and version ids.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from icefloe.catalog.base import Catalog, Identifier
from icefloe.catalog.rest.errors import IllegalArgumentError
from icefloe.catalog.rest.wire import identifier_from_json, identifier_to_json
from icefloe.catalog.sql_hook import PointerChange
from icefloe.catalog.views import View, create_view_from, read_view_metadata
from icefloe.exceptions import ValidationError
from icefloe.metadata.updates import SetProperties
from icefloe.metadata.view_metadata import (
    SQLRepresentation,
    ViewVersion,
    view_requirement_from_json,
    view_update_from_json,
)
from icefloe.rest.bodies import (
    body_list,
    body_object,
    checked_locations,
    nonempty_string,
    registered_file,
    server_location,
    string_properties,
)
from icefloe.rest.paging import page
from icefloe.schema import Schema

__all__ = ["ViewRoutes"]

Reply = tuple[int, dict[str, Any] | None, dict[str, str]]


@contextlib.contextmanager
def _view_rules() -> Iterator[None]:
    """A view rule broken by the request (a dialect twice, one dropped, ...) is answered as
    Java's server answers it, 400 ``IllegalArgumentException``, which Java clients raise."""
    try:
        yield
    except IllegalArgumentError:
        raise
    except ValidationError as exc:
        raise IllegalArgumentError(str(exc)) from exc


class ViewRoutes:
    """The view half of :class:`~icefloe.rest.service.RestService`."""

    catalog: Catalog

    def _view_result(self, view: View) -> dict[str, Any]:
        return {
            "metadata-location": view.metadata_location,
            "metadata": view.metadata.to_json(),
            "config": {},
        }

    def list_views(self, ns: Identifier, query: Mapping[str, str]) -> Reply:
        found = sorted(self.catalog.list_views(ns))
        items, token = page(found, list, query)
        return (
            200,
            {"identifiers": [identifier_to_json(i) for i in items], "next-page-token": token},
            {},
        )

    def create_view(self, ns: Identifier, body: Any) -> Reply:
        b = body_object(body)
        name = nonempty_string(b, "name")
        schema = Schema.from_json(body_object(b.get("schema"), what="schema"))
        version = ViewVersion.from_json(body_object(b.get("view-version"), what="view-version"))
        if not version.representations:
            raise ValidationError("Cannot create view without specifying a query")
        unknown = [r.type for r in version.representations if not isinstance(r, SQLRepresentation)]
        if unknown:
            raise ValidationError(f"unsupported view representations: {unknown}")
        location = b.get("location") or None
        if location is not None and not isinstance(location, str):
            raise ValidationError(f"location must be a string, got {location!r}")
        if location is not None:
            server_location(location)
        with _view_rules():
            view = create_view_from(
                self.catalog,
                (*ns, name),
                schema,
                version,
                string_properties(b.get("properties"), "view properties", values_nul=False),
                location,
            )
        return 200, self._view_result(view), {}

    def changed_view(self, change: PointerChange) -> Reply:
        """The answer of a create, register or replace that made ``change``: the view's
        metadata as it was committed, read back from its file."""
        ident, location = change.identifiers[0], change.metadata_locations[0]
        metadata = read_view_metadata(self.catalog, location)
        return 200, self._view_result(View(ident, metadata, location, self.catalog)), {}

    def load_view(self, ident: Identifier) -> Reply:
        return 200, self._view_result(self.catalog.load_view(ident)), {}

    def view_exists(self, ident: Identifier) -> Reply:
        self.catalog.load_view(ident)  # NoSuchViewError: 404
        return 204, None, {}

    def replace_view(self, ident: Identifier, body: Any) -> Reply:
        b = body_object(body)
        if b.get("identifier") is not None and identifier_from_json(b["identifier"]) != ident:
            raise ValidationError("the body's identifier does not match the path")
        reqs = [
            view_requirement_from_json(body_object(r, what="a requirement"))
            for r in body_list(b.get("requirements"), "requirements")
        ]
        ups = [
            view_update_from_json(body_object(u, what="an update"))
            for u in body_list(b.get("updates"), "updates")
        ]
        for u in ups:
            if isinstance(u, SetProperties) and any("\x00" in k for k in u.updates):
                raise ValidationError("view property keys cannot contain NUL characters")
        view = self.catalog.load_view(ident)
        ups = checked_locations(view.metadata.location, ups, table=False)
        with _view_rules():
            committed = self.catalog.commit_view(view, reqs, ups)
        return 200, self._view_result(committed), {}

    def drop_view(self, ident: Identifier) -> Reply:
        self.catalog.drop_view(ident)
        return 204, None, {}

    def rename_view(self, body: Any) -> Reply:
        b = body_object(body, "source", "destination")
        self.catalog._rename_view_entry(  # the rename alone: the metadata is not read
            identifier_from_json(b["source"]), identifier_from_json(b["destination"])
        )
        return 204, None, {}

    def register_view(self, ns: Identifier, body: Any) -> Reply:
        b = body_object(body)
        name = nonempty_string(b, "name")
        location = server_location(nonempty_string(b, "metadata-location"), "metadata-location")
        with registered_file(self.catalog.io, location):
            view = self.catalog.register_view((*ns, name), location)
        return 200, self._view_result(view), {}
