"""Stored table properties icefloe refuses, for the commands that only read a table.

Another engine may have stored a value icefloe would not accept (``write.target-file-size-bytes
=128MB``, ``write.format.default='PARQUET '``). Writes refuse such a table until the value is
fixed, but the read-only diagnostics (``files``, ``health``, ``report``) must still describe
it: they read a copy of the table without those properties, so each takes its default, and
say so (``health`` as a check with its fixing command, the others as a warning on standard
error).
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from icefloe.exceptions import ValidationError
from icefloe.properties import InvalidPropertyWarning, TableProperties, gc_enabled, parse_value

__all__ = ["how_read", "invalid_properties", "using_defaults", "warn_defaults"]


def invalid_properties(
    properties: Mapping[str, str], keys: Iterable[str] | None = None
) -> dict[str, str]:
    """The properties among ``keys`` (default: all) whose stored value icefloe refuses, in
    order of key, each with the reason (``table property k='v' is invalid: ...``)."""
    wanted = sorted(properties) if keys is None else sorted(k for k in keys if k in properties)
    out: dict[str, str] = {}
    for key in wanted:
        try:
            parse_value(key, properties[key])
        except ValidationError as exc:
            out[key] = str(exc)
    return out


def _kept(key: str) -> bool:
    """Whether an invalid ``key`` stays in the copy: ``gc.enabled`` is read as Java reads it
    (anything but ``true`` is false), never as its default, so no file is deleted on a guess."""
    return key == TableProperties.GC_ENABLED


def how_read(key: str, properties: Mapping[str, str]) -> str:
    """How the read-only commands take invalid property ``key``: ``using the default`` or,
    for ``gc.enabled``, ``read as false``."""
    if _kept(key):
        return f"read as {str(gc_enabled(properties)).lower()}"
    return "using the default"


def using_defaults(table: Any, invalid: Mapping[str, str]) -> Any:
    """``table`` itself when ``invalid`` is empty, else a copy whose metadata lacks the
    ``invalid`` properties (so every reader takes their defaults); the copy is only read."""
    meta = table.metadata
    dropped = [k for k in invalid if not _kept(k)]
    if not dropped:
        return table
    props = {k: v for k, v in meta.properties.items() if k not in dropped}
    clone = copy.copy(table)
    clone.metadata = dataclasses.replace(meta, properties=props)
    if getattr(table, "_complete", None) is meta:  # the copy holds every snapshot too
        clone._complete = clone.metadata
    return clone


def warn_defaults(invalid: Mapping[str, str], properties: Mapping[str, str]) -> None:
    """One :class:`InvalidPropertyWarning` per ``invalid`` property: the reason and how it is
    read (the command line prints each as one ``warning:`` line)."""
    for key, reason in invalid.items():
        warnings.warn(
            f"{reason}; {how_read(key, properties)}",
            InvalidPropertyWarning,
            stacklevel=2,
        )
