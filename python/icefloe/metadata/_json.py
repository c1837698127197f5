"""Strict readers for JSON values in metadata objects.

Every reader names the field (and the object it belongs to) in the :class:`ValidationError` it
raises, so a bad metadata file says exactly which key is wrong. Booleans are never accepted
where a number is expected (``True`` is an ``int`` in Python but not in JSON).

Integers are range-checked as the Java reference's ``JsonUtil`` does: every integer field must
fit a 64-bit long (``getLong``), and fields the reference reads with ``getInt`` (ids,
``format-version`` ...) must fit a 32-bit int: use :func:`get_int32` / :func:`opt_int32` /
:func:`check_int32` for those. :func:`loads` parses metadata text into a
:class:`ValidationError` on any failure, including over-long integer literals and strings with
lone UTF-16 surrogates (which cannot be written back as UTF-8).
"""

from __future__ import annotations

import codecs
import gzip
import json
import re
import zlib
from collections.abc import Callable, Mapping
from typing import Any

from icefloe.exceptions import ValidationError

__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "cached_compact",
    "check_int32",
    "check_no_surrogates",
    "compact",
    "get_bool",
    "get_int",
    "get_int32",
    "get_int_list",
    "get_list",
    "get_object",
    "get_str",
    "get_str_map",
    "loads",
    "opt_int",
    "opt_int32",
    "opt_list",
    "opt_str",
    "opt_str_map",
    "parse_document",
    "require_object",
]

_MISSING = object()

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

#: A JSON ``\uXXXX`` escape of a UTF-16 surrogate (D800-DFFF): the only way JSON text decoded
#: from UTF-8 can carry one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


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


def _ranged(v: Any, key: str, what: str, lo: int, hi: int, kind: str) -> int:
    if not _is_int(v):
        raise ValidationError(f"{what}: field {key!r} must be an integer, got {v!r}")
    if not lo <= v <= hi:
        raise ValidationError(f"{what}: field {key!r} is out of range for {kind}: {_short(v)}")
    return int(v)


def _short(v: int) -> str:
    """``v`` as text, shortened when huge (for error messages)."""
    try:
        text = str(v)
    except ValueError:  # beyond the interpreter's digit limit for int -> str
        return "an integer too large to print"
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} digits)"


def check_int32(v: Any, what: str) -> int:
    """``v`` itself, after checking that it is an integer that fits a 32-bit int; ``what``
    names the value (e.g. ``"partition spec spec-id"``)."""
    if not _is_int(v):
        raise ValidationError(f"{what} must be an integer, got {v!r}")
    if not INT32_MIN <= v <= INT32_MAX:
        raise ValidationError(f"{what} is out of range for a 32-bit int: {_short(v)}")
    return int(v)


def get_int(obj: Mapping[str, Any], key: str, what: str) -> int:
    """A required integer field that fits a 64-bit long (Java ``JsonUtil.getLong``)."""
    v = obj.get(key, _MISSING)
    if v is _MISSING or v is None:
        raise ValidationError(f"{what}: missing required int field {key!r}")
    return _ranged(v, key, what, INT64_MIN, INT64_MAX, "a 64-bit long")


def opt_int(obj: Mapping[str, Any], key: str, what: str) -> int | None:
    """An optional integer field that fits a 64-bit long: absent and ``null`` give ``None``."""
    v = obj.get(key)
    if v is None:
        return None
    return _ranged(v, key, what, INT64_MIN, INT64_MAX, "a 64-bit long")


def get_int32(obj: Mapping[str, Any], key: str, what: str) -> int:
    """A required integer field that fits a 32-bit int (Java ``JsonUtil.getInt``)."""
    v = obj.get(key, _MISSING)
    if v is _MISSING or v is None:
        raise ValidationError(f"{what}: missing required int field {key!r}")
    return _ranged(v, key, what, INT32_MIN, INT32_MAX, "a 32-bit int")


def opt_int32(obj: Mapping[str, Any], key: str, what: str) -> int | None:
    """An optional integer field that fits a 32-bit int: absent and ``null`` give ``None``."""
    v = obj.get(key)
    if v is None:
        return None
    return _ranged(v, key, what, INT32_MIN, INT32_MAX, "a 32-bit int")


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
        if not INT64_MIN <= item <= INT64_MAX:
            raise ValidationError(
                f"{what}: {key!r} holds an integer out of range for a 64-bit long: {_short(item)}"
            )
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


def loads(text: str, what: str) -> Any:
    """Parses JSON ``text`` (a metadata file): every failure is a :class:`ValidationError`.

    Besides syntax errors this refuses JSON nested too deeply for the parser, integer literals
    too long to convert, and strings (keys or values) holding a lone UTF-16 surrogate, which
    could never be written back as UTF-8. The surrogate check walks the parsed value only when
    the text holds a surrogate escape, so ordinary files cost one regex scan.
    """
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValidationError(f"{what} is not valid JSON: {e}") from None
    except RecursionError:
        raise ValidationError(f"{what} JSON is nested too deeply") from None
    except ValueError as e:  # e.g. an integer literal beyond the interpreter's digit limit
        raise ValidationError(f"{what} is not valid JSON: {e}") from None
    if _SURROGATE_ESCAPE.search(text) is not None:
        check_no_surrogates(obj, what)
    return obj


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_no_surrogates(obj: Any, what: str) -> None:
    """Raises :class:`ValidationError` naming the first string (key or value) in the parsed
    JSON ``obj`` that holds a lone surrogate. Iterative: safe for any nesting depth."""
    stack: list[tuple[Any, str]] = [(obj, "$")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if _has_surrogate(value):
                raise ValidationError(
                    f"{what}: string at {path} holds a lone UTF-16 surrogate: {value!r}"
                )
        elif isinstance(value, Mapping):
            for k, v in value.items():
                if isinstance(k, str) and _has_surrogate(k):
                    raise ValidationError(
                        f"{what}: key {k!r} in {path} holds a lone UTF-16 surrogate"
                    )
                stack.append((v, f"{path}.{k}"))
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(value))


_GZIP_MAGIC = b"\x1f\x8b"


def parse_document(data: str | bytes | bytearray | memoryview, what: str) -> Any:
    """A metadata file's JSON from its text or bytes (gzip detected by its magic number, UTF-8
    checked), parsed by :func:`loads`: every failure is a :class:`ValidationError`."""
    if isinstance(data, str):
        return loads(data, what)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ValidationError(f"{what}: expected JSON text or bytes, got {type(data).__name__}")
    raw = bytes(data)
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise ValidationError(f"{what}: corrupt gzip data: {e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValidationError(f"{what} is not UTF-8: {e}") from None
    return loads(text, what)


_WHITESPACE = " \t\n\r"


def leading_value(prefix: bytes, key: str) -> tuple[bool, Any]:
    """The value of the top-level ``key`` of a JSON object document of which ``prefix`` is
    the start (gzip detected by its magic number): ``(True, value)`` when a key before the
    prefix ends is ``key``, ``(True, None)`` when the document ends without it, and
    ``(False, None)`` when the prefix does not settle it (cut short, or not JSON): read the
    whole document then. Writers put ``format-version`` and ``table-uuid`` first, so a few
    kilobytes answer for metadata files of any size."""
    raw = prefix
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw)
        except zlib.error:
            return False, None
    text = codecs.getincrementaldecoder("utf-8")(errors="strict")
    try:
        doc = text.decode(raw)  # a character cut at the end is held back, not an error
    except UnicodeDecodeError:
        return False, None
    decoder = json.JSONDecoder()
    i = _skip(doc, 0)
    if doc[i : i + 1] != "{":
        return False, None
    i += 1
    while True:
        i = _skip(doc, i)
        if doc[i : i + 1] == "}":
            return True, None
        try:
            name, i = decoder.raw_decode(doc, i)
            i = _skip(doc, i)
            if doc[i : i + 1] != ":" or not isinstance(name, str):
                return False, None
            value, i = decoder.raw_decode(doc, _skip(doc, i + 1))
        except (ValueError, RecursionError):
            return False, None  # cut short inside a value
        if name == key:
            return True, value
        i = _skip(doc, i)
        if doc[i : i + 1] != ",":
            return (True, None) if doc[i : i + 1] == "}" else (False, None)
        i += 1


def _skip(doc: str, i: int) -> int:
    while i < len(doc) and doc[i] in _WHITESPACE:
        i += 1
    return i
