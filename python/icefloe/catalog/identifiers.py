"""Namespace and table identifiers: parsing (``"a.b.t"`` or ``("a", "b", "t")``), and the
rules that make a name safe as a directory name and a part of location URIs other engines
parse."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping

from icefloe.exceptions import NoSuchNamespaceError, ValidationError
from icefloe.table.committer import Identifier

__all__ = [
    "MAX_NAME_BYTES",
    "check_name",
    "check_namespace",
    "check_table_identifier",
    "namespace_to_string",
    "split_identifier",
    "to_identifier",
    "too_long",
]


def _looks_like_a_path(value: str) -> bool:
    """Whether an identifier string is a path or URI a user passed instead of a name."""
    return (
        "://" in value
        or value.startswith(("/", "./", "../", "~/", "\\"))
        or value.endswith((".metadata.json", ".metadata.json.gz"))
    )


def _path_error(value: str) -> ValidationError:
    return ValidationError(
        f"{value!r} is a path or URI, not a table identifier: pass the table's name in the "
        "catalog (like 'db.events'), or open a table by path, read-only, with "
        "icefloe.StaticTable.from_metadata(path)"
    )


def to_identifier(value: str | Iterable[str]) -> Identifier:
    """A namespace or table identifier as a tuple: ``"a.b"`` and ``("a", "b")`` both work."""
    if isinstance(value, str):
        if _looks_like_a_path(value):
            raise _path_error(value)
        parts: tuple[str, ...] = tuple(value.split(".")) if value else ()
    elif isinstance(value, Iterable) and not isinstance(value, bytes | Mapping):
        parts = tuple(value)
    else:
        raise ValidationError(
            f"invalid identifier {value!r}: give a string ('db.t') or a sequence of strings"
        )
    for part in parts:
        if not isinstance(part, str) or not part:
            raise ValidationError(f"invalid identifier {value!r}: empty or non-string part")
        try:
            part.encode("utf-8")
        except UnicodeEncodeError:  # no catalog stores such a name (databases take UTF-8)
            raise ValidationError(
                f"invalid identifier {value!r}: a name cannot hold lone surrogates"
            ) from None
    return parts


MAX_NAME_BYTES = 255
_FORBIDDEN = frozenset("/\\?#%")


def too_long(part: str) -> bool:
    """Whether a name is longer than :data:`MAX_NAME_BYTES` UTF-8 bytes (a directory name's
    limit on common file systems)."""
    return len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES


def check_name(part: object, *, namespace: bool, existing: bool = False, dots: bool = False) -> str:
    """``part`` if it can name a new namespace level (``namespace``) or a new table, else
    :class:`ValidationError`; with ``existing``, only what makes it unsafe as a directory name
    (``.``, ``..``, separators, NUL) is refused, so entries made by other engines still open.

    Names become directory names of the default layout (``<warehouse>/<ns...>/<name>``) and
    parts of location URIs that other engines parse, so a name must be a non-empty string of
    at most 255 UTF-8 bytes, not ``.`` or ``..``, without ``/``, ``\\``, control characters
    (NUL included), lone surrogates or the URI syntax characters ``?``, ``#`` and ``%``.
    Namespace levels also cannot contain ``.`` (unless ``dots``, for REST catalogs, which send
    levels as a list): SQL catalogs store namespaces dotted (``a.b``), so ``("a.b",)`` and
    ``("a", "b")`` would be one namespace. Nothing is escaped: the
    directory of a table is its name, as every engine computes it.
    """
    what = "namespace level" if namespace else "table name"
    if not isinstance(part, str) or not part:
        raise ValidationError(f"invalid {what} {part!r}: it must be a non-empty string")
    if part in (".", ".."):
        raise ValidationError(f"invalid {what} {part!r}: it would be a relative directory")
    if existing:
        if any(c in part for c in "/\\\x00"):
            raise ValidationError(f"invalid {what} {part!r}: it cannot be a directory name")
        return part
    bad = sorted({c for c in part if c in _FORBIDDEN or unicodedata.category(c) in ("Cc", "Cs")})
    if namespace and "." in part and not dots:
        bad.append(".")
    if bad:
        raise ValidationError(f"invalid {what} {part!r}: it must not contain {bad}")
    if too_long(part):
        raise ValidationError(
            f"invalid {what} {part[:20]!r}...: longer than {MAX_NAME_BYTES} UTF-8 bytes"
        )
    return part


def check_namespace(
    namespace: Identifier, *, existing: bool = False, dots: bool = False
) -> Identifier:
    """``namespace`` if every level passes :func:`check_name`, else :class:`ValidationError`."""
    for part in namespace:
        check_name(part, namespace=True, existing=existing, dots=dots)
    return namespace


def check_table_identifier(identifier: Identifier, *, dots: bool = False) -> Identifier:
    """``identifier`` if its namespace and name pass :func:`check_name`."""
    check_namespace(identifier[:-1], dots=dots)
    check_name(identifier[-1], namespace=False)
    return identifier


def namespace_to_string(namespace: str | Iterable[str]) -> str:
    """The dotted form of a namespace, as stored by SQL catalogs (``"a.b"``)."""
    parts = to_identifier(namespace)
    if not parts:
        raise NoSuchNamespaceError("the empty namespace is not a namespace")
    if any("\x00" in p for p in parts):  # no catalog creates one; databases cut the text
        raise ValidationError(f"invalid namespace {parts!r}: a name cannot hold NUL")
    return ".".join(parts)


def split_identifier(identifier: str | Iterable[str]) -> tuple[Identifier, str]:
    """``(namespace, table name)`` of a table identifier; the namespace must not be empty."""
    parts = to_identifier(identifier)
    if len(parts) < 2:
        if isinstance(identifier, str) and "/" in identifier:
            raise _path_error(identifier)
        raise ValidationError(
            f"table identifier {identifier!r} needs a namespace and a name, like 'db.table'"
        )
    return parts[:-1], parts[-1]
