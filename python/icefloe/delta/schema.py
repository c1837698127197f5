"""Delta schemas as Iceberg schemas: column-mapping ids as field ids, physical names kept.

Field ids are ``delta.columnMapping.id`` at every level; list elements and map keys and
values take theirs from the parent's ``delta.columnMapping.nested.ids``, keyed by the physical
path (``<physical>.element``, ``.key``, ``.value``, recursively ``….value.element``). Iceberg
names are the logical names; :func:`name_mapping` lists logical and physical names so files
written without field ids resolve either way. A literal column default becomes the field's
``write-default``. Types as Delta UniForm maps them: byte/short/int to int, timestamp to
timestamptz, timestamp_ntz to timestamp; other types are refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from icefloe.exceptions import DeltaLogError, UnsupportedFeatureError, ValidationError
from icefloe.name_mapping import MappedField, NameMapping
from icefloe.schema import Schema
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    VariantType,
)

__all__ = ["DeltaColumn", "convert_schema", "leaf_columns", "name_mapping", "type_change_problems"]

ID = "delta.columnMapping.id"
PHYSICAL = "delta.columnMapping.physicalName"
NESTED_IDS = "delta.columnMapping.nested.ids"
DEFAULT = "CURRENT_DEFAULT"
TYPE_CHANGES = "delta.typeChanges"

_PRIMITIVES: dict[str, PrimitiveType] = {
    "byte": IntegerType(),
    "short": IntegerType(),
    "integer": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "string": StringType(),
    "binary": BinaryType(),
    "boolean": BooleanType(),
    "date": DateType(),
    "timestamp": TimestamptzType(),
    "timestamp_ntz": TimestampType(),
    "variant": VariantType(),
}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


@dataclass(frozen=True)
class DeltaColumn:
    """A leaf column with Delta statistics: its field id, Iceberg type, Delta type name and
    physical path (the keys of the stats JSON and of ``partitionValues``). ``from_float``: a
    double column Delta's type widening made of a float one, whose files written before hold
    float32 values and statistics (float32 values in their shortest decimal form)."""

    field_id: int
    type: PrimitiveType
    delta_type: str
    physical_path: tuple[str, ...]
    logical_path: tuple[str, ...]
    from_float: bool = False


def _primitive(delta_type: str, where: str) -> PrimitiveType:
    if delta_type in _PRIMITIVES:
        return _PRIMITIVES[delta_type]
    m = _DECIMAL.match(delta_type)
    if m:
        return DecimalType(int(m.group(1)), int(m.group(2)))
    raise UnsupportedFeatureError(f"Delta column {where}: type {delta_type!r} has no Iceberg form")


def _physical(f: dict[str, Any]) -> str:
    meta = f.get("metadata") or {}
    return str(meta.get(PHYSICAL, f["name"]))


#: The largest Iceberg field id (a positive 32-bit integer).
_MAX_ID = 2**31 - 1


def mapping_id(value: Any, what: str) -> int:
    """A column-mapping id (an integer, or its decimal text); anything else is a malformed
    schema (:class:`DeltaLogError`)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise DeltaLogError(f"malformed Delta schema: {what} is {value!r}, not an integer")
    try:
        number = int(value)
    except ValueError as e:
        raise DeltaLogError(f"malformed Delta schema: {what} is {value!r}, not an integer") from e
    if not 1 <= number <= _MAX_ID:
        raise DeltaLogError(
            f"malformed Delta schema: {what} is {number}, outside 1..{_MAX_ID} (a field id)"
        )
    return number


def _field_id(f: dict[str, Any], where: str) -> int:
    meta = f.get("metadata") or {}
    if ID not in meta:
        raise ValidationError(f"Delta column {where} has no {ID} (column mapping is off)")
    return mapping_id(meta[ID], f"the {ID} of column {where}")


_HEX = frozenset("0123456789abcdefABCDEF")
#: Spark's one-character escapes (``\\%`` and ``\\_`` keep their backslash; any other
#: character stands for itself).
_ESCAPES = {
    "0": "\0",
    "b": "\b",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "Z": "\x1a",
    "%": "\\%",
    "_": "\\_",
}


def _unescape(body: str, where: str) -> str:
    """The value of a quoted Spark SQL string literal's ``body`` (between its quotes), by the
    rules of Spark's ``unescapeSQLString``: backslash escapes, ``\\uXXXX``, three-digit
    octal ``\\[01][0-7][0-7]``. Forms whose value depends on the Spark version are refused."""
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]  # a literal never ends in a lone backslash (it escapes the quote)
        if nxt == "u":
            if not set(body[i + 2 : i + 6]) <= _HEX or i + 6 > n:
                raise _ambiguous(where, "\\u not followed by four hex digits")
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        elif nxt == "U" and i + 10 <= n and set(body[i + 2 : i + 10]) <= _HEX:
            raise _ambiguous(where, "\\U with eight hex digits")
        elif i + 4 <= n and body[i + 1] in "01" and set(body[i + 2 : i + 4]) <= set("01234567"):
            out.append(chr(int(body[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    try:  # \\u escapes of a surrogate pair make one character, as in Java's strings
        return "".join(out).encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError as e:
        raise UnsupportedFeatureError(
            f"Delta column {where}: default has an unpaired surrogate escape"
        ) from e


def _ambiguous(where: str, form: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"Delta column {where}: default string literal with {form}, whose value differs "
        "between Spark versions; icefloe does not guess it"
    )


def _spark_string(text: str, where: str) -> str | None:
    """The value of ``text`` when it is Spark SQL string literals ('...', "...", raw r'...'),
    several separated by blanks concatenated as Spark does; None when it is none."""
    parts: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        raw = text[i] in "rR" and i + 1 < n and text[i + 1] in "'\""
        start = i + 1 if raw else i
        quote = text[start] if start < n else ""
        if quote not in ("'", '"'):
            return None
        j = start + 1
        while j < n and text[j] != quote:
            j += 1 if raw or text[j] != "\\" else 2
        if j >= n:
            return None  # unterminated
        if j + 1 < n and text[j + 1] == quote:
            doubled = quote * 2
            raise _ambiguous(where, f"{doubled} inside (an escaped quote or two literals)")
        body = text[start + 1 : j]
        parts.append(body if raw else _unescape(body, where))
        i = j + 1
    return "".join(parts) if parts else None


def _default(f: dict[str, Any], t: IcebergType, where: str) -> Any:
    raw = (f.get("metadata") or {}).get(DEFAULT)
    if raw is None:
        return None
    text = str(raw).strip()
    if text.upper() == "NULL":
        return None
    try:
        if isinstance(t, StringType):
            value = _spark_string(text, where)
            if value is not None:
                return value
        if isinstance(t, BooleanType) and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if isinstance(t, IntegerType | LongType):
            return int(text)
        if isinstance(t, FloatType | DoubleType):
            return float(text)
    except ValueError:
        pass
    raise UnsupportedFeatureError(
        f"Delta column {where}: default {text!r} is not a literal icefloe can carry over"
    )


def _convert(t: Any, nested_ids: dict[str, Any], phys: str, where: str) -> IcebergType:
    """The Iceberg type of Delta type ``t`` of the field at physical path ``phys``."""
    if isinstance(t, str):
        return _primitive(t, where)
    kind = t.get("type")
    if kind == "struct":
        return StructType(*(_field(c, f"{where}.{c['name']}") for c in t["fields"]))

    def nested_id(suffix: str) -> int:
        key = f"{phys}.{suffix}"
        if key not in nested_ids:
            raise ValidationError(
                f"Delta column {where}: no id for {key!r} in {NESTED_IDS} (IcebergCompatV2/V3 "
                "assign one to every list element and map key and value)"
            )
        return mapping_id(nested_ids[key], f"the nested id {key!r} of column {where}")

    if kind == "array":
        elem = _convert(t["elementType"], nested_ids, f"{phys}.element", f"{where}.element")
        return ListType(nested_id("element"), elem, not t.get("containsNull", True))
    if kind == "map":
        key = _convert(t["keyType"], nested_ids, f"{phys}.key", f"{where}.key")
        value = _convert(t["valueType"], nested_ids, f"{phys}.value", f"{where}.value")
        return MapType(
            nested_id("key"), key, nested_id("value"), value, not t.get("valueContainsNull", True)
        )
    raise UnsupportedFeatureError(f"Delta column {where}: type {t!r} has no Iceberg form")


def _field(f: dict[str, Any], where: str) -> NestedField:
    nested = (f.get("metadata") or {}).get(NESTED_IDS) or {}
    t = _convert(f["type"], nested, _physical(f), where)
    return NestedField(
        _field_id(f, where),
        f["name"],
        t,
        required=not f.get("nullable", True),
        doc=(f.get("metadata") or {}).get("comment"),
        write_default=_default(f, t, where) if isinstance(t, PrimitiveType) else None,
    )


def convert_schema(delta_schema: dict[str, Any], schema_id: int = 0) -> Schema:
    """The Iceberg schema of a Delta schema (``metaData.schemaString`` parsed)."""
    fields = [_field(f, f["name"]) for f in delta_schema.get("fields", [])]
    return Schema(*fields, schema_id=schema_id)


def type_change_problems(
    delta_schema: dict[str, Any], partition_columns: tuple[str, ...] | list[str] = ()
) -> list[str]:
    """The type changes Delta's type widening recorded (``delta.typeChanges`` of each field, at
    every level) that are no Iceberg v3 promotion (:func:`~icefloe.evolution.can_promote`):
    data files written before such a change hold the old type, which Iceberg readers refuse to
    read as the new one (int -> double, a decimal's scale, int -> decimal). A top-level partition
    column may not go from date to timestamp either (its identity values would change). Each
    problem is a sentence naming the column."""
    from icefloe.evolution import can_promote

    parts = set(partition_columns)
    out: list[str] = []

    def walk(fields: Any, logical: tuple[str, ...]) -> None:
        if not isinstance(fields, list):
            return
        for f in fields:
            if not isinstance(f, dict):
                continue
            lg = (*logical, str(f.get("name")))
            where = ".".join(lg)
            meta = f.get("metadata")
            changes = meta.get(TYPE_CHANGES) if isinstance(meta, dict) else None
            for change in changes if isinstance(changes, list) else []:
                if not isinstance(change, dict):
                    out.append(f"{where}: malformed {TYPE_CHANGES} entry {change!r}")
                    continue
                before, after = change.get("fromType"), change.get("toType")
                path = change.get("fieldPath")
                col = f"{where}.{path}" if path else where
                try:
                    old = _primitive(str(before), col)
                    new = _primitive(str(after), col)
                except UnsupportedFeatureError:
                    out.append(f"{col}: type change {before} -> {after} has no Iceberg form")
                    continue
                if old == new:
                    continue  # byte, short and int are all Iceberg int
                if not can_promote(old, new, 3):
                    out.append(
                        f"{col}: type change {before} -> {after} is no Iceberg promotion "
                        "(files written before it hold the old type)"
                    )
                elif str(path or "").split(".")[-1] == "key":
                    out.append(f"{col}: type change {before} -> {after} of a map key")
                elif not path and not logical and lg[0] in parts and isinstance(old, DateType):
                    out.append(
                        f"{col}: partition column changed from {before} to {after}, which "
                        "changes its identity partition values"
                    )
            walk_type(f.get("type"), lg)

    def walk_type(t: Any, lg: tuple[str, ...]) -> None:
        if not isinstance(t, dict):
            return
        kind = t.get("type")
        if kind == "struct":
            walk(t.get("fields"), lg)
        elif kind == "array":
            walk_type(t.get("elementType"), (*lg, "element"))
        elif kind == "map":
            walk_type(t.get("keyType"), (*lg, "key"))
            walk_type(t.get("valueType"), (*lg, "value"))

    walk(delta_schema.get("fields", []) if isinstance(delta_schema, dict) else [], ())
    return out


def _from_float(f: dict[str, Any]) -> bool:
    """Whether field ``f`` itself (not a list element or map key or value) was widened from
    float."""
    meta = f.get("metadata")
    changes = meta.get(TYPE_CHANGES) if isinstance(meta, dict) else None
    return any(
        isinstance(c, dict) and c.get("fromType") == "float" and not c.get("fieldPath")
        for c in (changes if isinstance(changes, list) else [])
    )


def leaf_columns(delta_schema: dict[str, Any]) -> list[DeltaColumn]:
    """Primitive columns reachable through structs only (the ones Delta keeps stats for)."""
    out: list[DeltaColumn] = []

    def walk(fields: list[dict[str, Any]], phys: tuple[str, ...], logical: tuple[str, ...]) -> None:
        for f in fields:
            t = f["type"]
            p, lg = (*phys, _physical(f)), (*logical, f["name"])
            if isinstance(t, dict) and t.get("type") == "struct":
                walk(t["fields"], p, lg)
            elif isinstance(t, str):
                where = ".".join(lg)
                prim = _primitive(t, where)
                out.append(DeltaColumn(_field_id(f, where), prim, t, p, lg, _from_float(f)))

    walk(delta_schema.get("fields", []), (), ())
    return out


def name_mapping(delta_schema: dict[str, Any]) -> NameMapping:
    """A name mapping with each column's logical and physical names (nested included)."""

    def mapped_type(t: Any, nested: dict[str, Any], phys: str) -> tuple[MappedField, ...]:
        if isinstance(t, str):
            return ()
        kind = t.get("type")
        if kind == "struct":
            return level(t["fields"])
        if kind == "array":
            key = f"{phys}.element"
            return (
                MappedField(
                    ("element",),
                    nested.get(key),
                    mapped_type(t["elementType"], nested, key),
                ),
            )
        if kind == "map":
            k, v = f"{phys}.key", f"{phys}.value"
            return (
                MappedField(("key",), nested.get(k), mapped_type(t["keyType"], nested, k)),
                MappedField(("value",), nested.get(v), mapped_type(t["valueType"], nested, v)),
            )
        return ()

    def mapped(f: dict[str, Any], taken: set[str]) -> MappedField:
        meta = f.get("metadata") or {}
        phys = _physical(f)
        # files hold physical names; a logical name that is another column's physical name (a
        # column renamed after an upgrade to column mapping, its old name given to a new one)
        # resolves to that column only
        names = (phys,) if phys == f["name"] or f["name"] in taken else (f["name"], phys)
        fid = meta.get(ID)
        return MappedField(
            names,
            mapping_id(fid, f"the {ID} of column {f['name']}") if fid is not None else None,
            mapped_type(f["type"], meta.get(NESTED_IDS) or {}, phys),
        )

    def level(fields: list[dict[str, Any]]) -> tuple[MappedField, ...]:
        physical = {_physical(f) for f in fields}
        return tuple(mapped(f, physical) for f in fields)

    return NameMapping(level(delta_schema.get("fields", [])))


def json_arrow_type(c: DeltaColumn) -> pa.DataType:
    """The Arrow type a column's bounds are read in (numbers widened, text kept as text)."""
    t = c.type
    if isinstance(t, IntegerType | LongType):
        return pa.int64()
    if isinstance(t, FloatType | DoubleType):
        return pa.float64()
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale) if t.precision <= 38 else pa.string()
    if isinstance(t, BooleanType):
        return pa.bool_()
    return pa.string()  # strings, dates, timestamps, binary (never has stats), variant


def widened_from_float(delta_schema: dict[str, Any]) -> frozenset[int]:
    """Field ids of the leaf columns Delta's type widening made doubles of floats."""
    return frozenset(c.field_id for c in leaf_columns(delta_schema) if c.from_float)


def columns_from_iceberg(schema: Schema, mapping: NameMapping) -> list[DeltaColumn]:
    """:func:`leaf_columns` rebuilt from a converted table's schema and name mapping (whose
    last name of each field is the physical one), so a sync needs no Delta snapshot (which
    columns are :func:`widened_from_float` comes from the Delta metadata)."""
    out: list[DeltaColumn] = []

    def walk(
        fields: tuple[NestedField, ...],
        mapped: tuple[MappedField, ...],
        phys: tuple[str, ...],
        logical: tuple[str, ...],
    ) -> None:
        by_id = {m.field_id: m for m in mapped}
        for f in fields:
            m = by_id.get(f.field_id)
            name = m.names[-1] if m is not None and m.names else f.name
            p, lg = (*phys, name), (*logical, f.name)
            if isinstance(f.field_type, StructType):
                walk(f.field_type.fields, m.fields if m else (), p, lg)
            elif isinstance(f.field_type, PrimitiveType):
                out.append(DeltaColumn(f.field_id, f.field_type, str(f.field_type), p, lg))

    walk(schema.fields, mapping.fields, (), ())
    return out
