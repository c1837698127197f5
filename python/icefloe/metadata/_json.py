"""Strict readers for JSON values in metadata objects.

Every reader names the field (and the object it belongs to) in the :class:`ValidationError` it
raises, so a bad metadata file says exactly which key is wrong. Booleans are never accepted
where a number is expected (``True`` is an ``int`` in Python but not in JSON).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from icefloe.exceptions import ValidationError

__all__ = [
    "cached_compact",
    "compact",
    "get_bool",
    "get_int",
    "get_int_list",
    "get_list",
    "get_object",
    "get_str",
    "get_str_map",
    "opt_int",
    "opt_list",
    "opt_str",
    "opt_str_map",
    "require_object",
]

_MISSING = object()


def compact(value: Any) -> str:
    """``value`` as compact JSON text, as the Java writer lays it out (no spaces)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def cached_compact(owner: Any, key: str, make: Callable[[], Any]) -> str:
    """The compact JSON text of ``make()``, kept on the immutable value ``owner`` under ``key``.

    Metadata files repeat every snapshot and log entry of the table's history at each commit;
    each value is encoded once and its text reused. ``owner`` must be a frozen dataclass
    without slots (the text goes into its ``__dict__``, beside the fields, so it takes no part
    in equality, hashing or ``dataclasses.replace``).
    """
    cache = owner.__dict__
    text: str | None = cache.get(key)
    if text is None:
        text = cache[key] = compact(make())
    return text


def require_object(obj: Any, what: str) -> Mapping[str, Any]:
    """``obj`` itself, after checking that it is a JSON object."""
    if type(obj) is dict:  # the common case, without the slower ABC check
        return obj
    if not isinstance(obj, Mapping):
        raise ValidationError(f"cannot parse {what} from a non-object: {obj!r}")
    return obj


def _is_int(v: Any) -> bool:
    return type(v) is int or (isinstance(v, int) and not isinstance(v, bool))


def get_int(obj: Mapping[str, Any], key: str, what: str) -> int:
    """A required integer field."""
    v = obj.get(key, _MISSING)
    if v is _MISSING or v is None:
        raise ValidationError(f"{what}: missing required int field {key!r}")
    if not _is_int(v):
        raise ValidationError(f"{what}: field {key!r} must be an integer, got {v!r}")
    return int(v)


def opt_int(obj: Mapping[str, Any], key: str, what: str) -> int | None:
    """An optional integer field: absent and ``null`` both give ``None``."""
    v = obj.get(key)
    if v is None:
        return None
    if not _is_int(v):
        raise ValidationError(f"{what}: field {key!r} must be an integer, got {v!r}")
    return int(v)


def get_str(obj: Mapping[str, Any], key: str, what: str) -> str:
    """A required string field."""
    v = obj.get(key)
    if v is None:
        raise ValidationError(f"{what}: missing required string field {key!r}")
    if not isinstance(v, str):
        raise ValidationError(f"{what}: field {key!r} must be a string, got {v!r}")
    return v


def opt_str(obj: Mapping[str, Any], key: str, what: str) -> str | None:
    """An optional string field."""
    v = obj.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise ValidationError(f"{what}: field {key!r} must be a string, got {v!r}")
    return v


def get_bool(obj: Mapping[str, Any], key: str, what: str, default: bool) -> bool:
    """An optional boolean field with a default."""
    v = obj.get(key)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise ValidationError(f"{what}: field {key!r} must be a boolean, got {v!r}")
    return v


def get_list(obj: Mapping[str, Any], key: str, what: str) -> list[Any]:
    """A required array field."""
    v = obj.get(key)
    if v is None:
        raise ValidationError(f"{what}: missing required array field {key!r}")
    if not isinstance(v, list):
        raise ValidationError(f"{what}: cannot parse {key!r} from a non-array: {v!r}")
    return v


def opt_list(obj: Mapping[str, Any], key: str, what: str) -> list[Any]:
    """An optional array field; absent or ``null`` gives an empty list."""
    v = obj.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise ValidationError(f"{what}: cannot parse {key!r} from a non-array: {v!r}")
    return v


def get_int_list(obj: Mapping[str, Any], key: str, what: str) -> tuple[int, ...]:
    """A required array of integers."""
    items = get_list(obj, key, what)
    for item in items:
        if not _is_int(item):
            raise ValidationError(f"{what}: {key!r} must hold integers, got {item!r}")
    return tuple(int(i) for i in items)


def get_object(obj: Mapping[str, Any], key: str, what: str) -> Mapping[str, Any]:
    """A required object field."""
    v = obj.get(key)
    if v is None:
        raise ValidationError(f"{what}: missing required object field {key!r}")
    return require_object(v, f"{what} field {key!r}")


def _str_map(v: Any, key: str, what: str) -> dict[str, str]:
    if not isinstance(v, Mapping):
        raise ValidationError(f"{what}: cannot parse {key!r} from a non-object: {v!r}")
    out: dict[str, str] = {}
    for k, val in v.items():
        if not isinstance(val, str):
            raise ValidationError(f"{what}: {key!r} value for {k!r} must be a string, got {val!r}")
        out[str(k)] = val
    return out


def get_str_map(obj: Mapping[str, Any], key: str, what: str) -> dict[str, str]:
    """A required string-to-string map."""
    v = obj.get(key)
    if v is None:
        raise ValidationError(f"{what}: missing required object field {key!r}")
    return _str_map(v, key, what)


def opt_str_map(obj: Mapping[str, Any], key: str, what: str) -> dict[str, str]:
    """An optional string-to-string map; absent or ``null`` gives an empty dict."""
    v = obj.get(key)
    if v is None:
        return {}
    return _str_map(v, key, what)
