"""Checks of REST request bodies, field by field: a body that is not what the spec says is a
:class:`ValidationError` (HTTP 400) before the catalog is touched."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlparse

from icefloe.exceptions import CorruptFileError, FileIOError, NotFoundError, ValidationError
from icefloe.io import check_location
from icefloe.metadata.updates import SetLocation, SetProperties
from icefloe.properties import string_map
from icefloe.table_paths import (
    PATH_PROPERTIES,
    absolute_location,
    resolve_table_paths,
    table_location,
)

__all__ = [
    "all_strings",
    "body_list",
    "body_object",
    "checked_locations",
    "flag",
    "nonempty_string",
    "server_location",
    "string_properties",
]


def all_strings(values: Any) -> bool:
    return all(isinstance(v, str) for v in values)


def body_object(body: Any, *keys: str, what: str = "the request body") -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ValidationError(f"{what} must be a JSON object")
    for key in keys:
        if key not in body:
            raise ValidationError(f"{what} lacks {key!r}")
    return body


def nonempty_string(b: Mapping[str, Any], key: str) -> str:
    """``b[key]``: a non-empty string."""
    value = b.get(key)
    if not isinstance(value, str) or not value:
        raise ValidationError(f"{key} must be a non-empty string, got {value!r}")
    return value


def flag(b: Mapping[str, Any], key: str) -> bool:
    """``b[key]``: a boolean, False when absent or null."""
    value = b.get(key)
    if value is not None and not isinstance(value, bool):
        raise ValidationError(f"{key} must be a boolean, got {value!r}")
    return bool(value)


def string_properties(value: Any, what: str, *, values_nul: bool = True) -> dict[str, str]:
    """Properties from a request: an object of strings (null or absent: none) without NUL in
    keys (nor in values, with ``values_nul``: catalog databases refuse NUL in text)."""
    props = string_map(value, what)
    for k, v in props.items():
        if "\x00" in k or (values_nul and "\x00" in v):
            raise ValidationError(f"{what} cannot contain NUL characters: {k!r}")
    return props


def body_list(value: Any, what: str) -> list[Any]:
    """A list from a request (null or absent: empty)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationError(f"{what} must be a list, got {type(value).__name__}")
    return value


@contextlib.contextmanager
def registered_file(io: Any, location: str) -> Iterator[None]:
    """Around registering the metadata file a register body names: a file that is not
    metadata, or a directory, is the client's mistake (400); a missing file stays 404 and
    other storage failures stay the server's."""
    try:
        yield
    except CorruptFileError as exc:
        raise ValidationError(str(exc)) from exc
    except FileIOError as exc:
        if not isinstance(exc, NotFoundError) and _is_dir(io, location):
            raise ValidationError(f"metadata file {location} is a directory") from exc
        raise


def _is_dir(io: Any, location: str) -> bool:
    try:
        return bool(io.is_dir(location))
    except Exception:  # the original error says more
        return False


def server_location(location: str, what: str = "location") -> str:
    """``location`` if a server can resolve it as its client means it: a URI or an absolute
    path. A relative path (or ``~``) is refused with :class:`ValidationError`: the server
    would resolve it against its own working directory, not the client's."""
    check_location(location)
    parsed = urlparse(location)
    if parsed.scheme.lower() == "file":
        relative = not parsed.path.startswith("/")  # file:rel/t
    else:
        relative = not parsed.scheme and not os.path.isabs(location)
    if not relative:
        return location
    raise ValidationError(
        f"{what} {location!r} is a relative path; give an absolute path or a URI (a server "
        "resolves relative paths against its own working directory)"
    )


def checked_locations(location: str, updates: list[Any], *, table: bool = True) -> list[Any]:
    """``updates`` of a table (or, ``table=False``, a view) at ``location`` with its
    locations checked and stored as a create stores them: a ``set-location`` made absolute
    and plain (an object store key with ``..`` was written, then never found by the reads
    that normalise it), a table's path properties (``write.data.path``, ...) resolved under
    the location then in force."""
    out = []
    for u in updates:
        if isinstance(u, SetLocation):
            server_location(u.location)
            if table:
                location = table_location(u.location)
            else:
                check_location(u.location)
                location = absolute_location(u.location).rstrip("/")
            u = SetLocation(location)
        elif table and isinstance(u, SetProperties) and PATH_PROPERTIES & set(u.updates):
            u = replace(u, updates=resolve_table_paths(location, u.updates))
        out.append(u)
    return out
