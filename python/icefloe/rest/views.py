"""The REST catalog's view operations over an icefloe catalog that keeps views: list, create,
load, exists, replace (requirements and updates, retried on a lost race while the requirements
hold), rename, register and drop. A create keeps the client's first version as sent (its
summary and timestamp); the server assigns the schema and version ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icefloe.catalog.base import Catalog, Identifier
from icefloe.catalog.rest.errors import IllegalArgumentError
from icefloe.catalog.rest.wire import identifier_from_json, identifier_to_json
from icefloe.catalog.views import View, create_view_from
from icefloe.exceptions import CorruptFileError, ValidationError
from icefloe.metadata.updates import SetProperties
from icefloe.metadata.view_metadata import (
    SQLRepresentation,
    ViewVersion,
    view_requirement_from_json,
    view_update_from_json,
)
from icefloe.rest.paging import page
from icefloe.schema import Schema

__all__ = ["ViewRoutes"]

Reply = tuple[int, dict[str, Any] | None, dict[str, str]]


def _obj(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValidationError(f"{what} must be a JSON object")
    return value


def _str(b: Mapping[str, Any], key: str) -> str:
    value = b.get(key)
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{key} must be a non-empty string")
    return value


def _props(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValidationError("view properties must be an object of strings")
    if any("\x00" in k for k in value):
        raise ValidationError("view property keys cannot contain NUL characters")
    return dict(value)


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationError(f"{what} must be a list")
    return value


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
        b = _obj(body, "the request body")
        name = _str(b, "name")
        schema = Schema.from_json(_obj(b.get("schema"), "schema"))
        version = ViewVersion.from_json(_obj(b.get("view-version"), "view-version"))
        if not version.representations:
            raise ValidationError("Cannot create view without specifying a query")
        unknown = [r.type for r in version.representations if not isinstance(r, SQLRepresentation)]
        if unknown:
            raise ValidationError(f"unsupported view representations: {unknown}")
        location = b.get("location") or None
        if location is not None and not isinstance(location, str):
            raise ValidationError(f"location must be a string, got {location!r}")
        try:
            view = create_view_from(
                self.catalog, (*ns, name), schema, version, _props(b.get("properties")), location
            )
        except IllegalArgumentError:
            raise
        except ValidationError as exc:  # the view's rules: Java's clients expect this type
            raise IllegalArgumentError(str(exc)) from exc
        return 200, self._view_result(view), {}

    def load_view(self, ident: Identifier) -> Reply:
        return 200, self._view_result(self.catalog.load_view(ident)), {}

    def view_exists(self, ident: Identifier) -> Reply:
        self.catalog.load_view(ident)  # NoSuchViewError: 404
        return 204, None, {}

    def replace_view(self, ident: Identifier, body: Any) -> Reply:
        b = _obj(body, "the request body")
        if b.get("identifier") is not None and identifier_from_json(b["identifier"]) != ident:
            raise ValidationError("the body's identifier does not match the path")
        reqs = [
            view_requirement_from_json(_obj(r, "a requirement"))
            for r in _list(b.get("requirements"), "requirements")
        ]
        ups = [
            view_update_from_json(_obj(u, "an update")) for u in _list(b.get("updates"), "updates")
        ]
        for u in ups:
            if isinstance(u, SetProperties) and any("\x00" in k for k in u.updates):
                raise ValidationError("view property keys cannot contain NUL characters")
        view = self.catalog.load_view(ident)
        try:
            committed = self.catalog.commit_view(view, reqs, ups)
        except IllegalArgumentError:
            raise
        except ValidationError as exc:
            raise IllegalArgumentError(str(exc)) from exc
        return 200, self._view_result(committed), {}

    def drop_view(self, ident: Identifier) -> Reply:
        self.catalog.drop_view(ident)
        return 204, None, {}

    def rename_view(self, body: Any) -> Reply:
        b = _obj(body, "the request body")
        if "source" not in b or "destination" not in b:
            raise ValidationError("a rename needs a source and a destination")
        self.catalog.rename_view(
            identifier_from_json(b["source"]), identifier_from_json(b["destination"])
        )
        return 204, None, {}

    def register_view(self, ns: Identifier, body: Any) -> Reply:
        b = _obj(body, "the request body")
        name = _str(b, "name")
        location = _str(b, "metadata-location")
        try:
            view = self.catalog.register_view((*ns, name), location)
        except CorruptFileError as exc:  # the client named a file that is not view metadata
            raise ValidationError(str(exc)) from exc
        return 200, self._view_result(view), {}
