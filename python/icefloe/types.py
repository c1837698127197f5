"""Iceberg data types (spec "Schemas and Data Types"), v1 to v3, with their JSON form.

Types are immutable values: ``IntegerType() == IntegerType()``, ``str(t)`` is the spec's JSON type
string for primitives (``"decimal(9,2)"``, ``"fixed[16]"``, ``"timestamptz_ns"``) and
:func:`type_from_json` / :meth:`IcebergType.to_json` convert to and from Appendix C JSON.

Default values (``initial-default``, ``write-default``) are held on :class:`NestedField` in their
JSON single-value form (spec Appendix D) exactly as they appear in metadata, so metadata round
trips byte for byte; ``icefloe.values.from_json(field.field_type, field.initial_default)`` gives
the Python value.
"""

from __future__ import annotations

import json
import operator
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from icefloe.exceptions import ValidationError

__all__ = [
    "BinaryType",
    "BooleanType",
    "DateType",
    "DecimalType",
    "DoubleType",
    "FixedType",
    "FloatType",
    "GeographyType",
    "GeometryType",
    "IcebergType",
    "IntegerType",
    "ListType",
    "LongType",
    "MapType",
    "NestedField",
    "NestedType",
    "PrimitiveType",
    "StringType",
    "StructType",
    "TimeType",
    "TimestampNanoType",
    "TimestampType",
    "TimestamptzNanoType",
    "TimestamptzType",
    "UUIDType",
    "UnknownType",
    "VariantType",
    "integer_arg",
    "integer_parameter",
    "type_from_json",
]

DEFAULT_CRS = "OGC:CRS84"
DEFAULT_EDGE_ALGORITHM = "spherical"
EDGE_ALGORITHMS = ("spherical", "vincenty", "thomas", "andoyer", "karney")


class IcebergType(ABC):
    """Base of every Iceberg type."""

    #: The lowest table format version that allows this type.
    min_format_version: ClassVar[int] = 1

    @property
    def is_primitive(self) -> bool:
        return isinstance(self, PrimitiveType)

    @property
    def is_nested(self) -> bool:
        return isinstance(self, NestedType)

    @abstractmethod
    def to_json(self) -> Any:
        """The spec's JSON form: a string for primitives, an object for nested types."""


@dataclass(frozen=True)
class PrimitiveType(IcebergType):
    """A type without child fields; its JSON form is ``str(self)``."""

    name: ClassVar[str] = ""

    def __str__(self) -> str:
        return self.name

    def to_json(self) -> str:
        return str(self)


@dataclass(frozen=True)
class UnknownType(PrimitiveType):
    """v3 ``unknown``: a column whose values are always null."""

    name: ClassVar[str] = "unknown"
    min_format_version: ClassVar[int] = 3


@dataclass(frozen=True)
class BooleanType(PrimitiveType):
    name: ClassVar[str] = "boolean"


@dataclass(frozen=True)
class IntegerType(PrimitiveType):
    """32-bit signed integer (``int``)."""

    name: ClassVar[str] = "int"


@dataclass(frozen=True)
class LongType(PrimitiveType):
    """64-bit signed integer (``long``)."""

    name: ClassVar[str] = "long"


@dataclass(frozen=True)
class FloatType(PrimitiveType):
    """32-bit IEEE 754 floating point."""

    name: ClassVar[str] = "float"


@dataclass(frozen=True)
class DoubleType(PrimitiveType):
    """64-bit IEEE 754 floating point."""

    name: ClassVar[str] = "double"


def integer_arg(value: object) -> int | None:
    """``value`` as a Python ``int`` when it is an integer: an ``int`` or another integral
    type (numpy's, as ``to_numpy()`` gives ids read from a table); None for anything else,
    bools included."""
    if isinstance(value, bool):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def integer_parameter(what: str, value: object) -> int:
    """An integer argument (a type parameter, a snapshot id, ...) as an ``int``
    (:func:`integer_arg`: numpy integers too); a float, a bool or a string is a
    :class:`ValidationError` naming ``what`` (written into the metadata as ``fixed[1.5]``, a
    type parameter made the table unloadable to every engine)."""
    out = integer_arg(value)
    if out is None:
        raise ValidationError(f"{what} must be an integer, got {value!r}")
    return out


@dataclass(frozen=True)
class DecimalType(PrimitiveType):
    """Fixed-point decimal with ``precision`` <= 38 digits and ``scale`` digits after the point."""

    precision: int
    scale: int

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "precision", integer_parameter("decimal precision", self.precision)
        )
        object.__setattr__(self, "scale", integer_parameter("decimal scale", self.scale))
        if not 1 <= self.precision <= 38:
            raise ValidationError(f"decimal precision must be 1..38, got {self.precision}")
        if not 0 <= self.scale <= self.precision:
            raise ValidationError(
                f"decimal scale must be 0..precision ({self.precision}), got {self.scale}"
            )

    def __str__(self) -> str:
        return f"decimal({self.precision},{self.scale})"


@dataclass(frozen=True)
class DateType(PrimitiveType):
    """Calendar date without time zone or time."""

    name: ClassVar[str] = "date"


@dataclass(frozen=True)
class TimeType(PrimitiveType):
    """Time of day, microsecond precision, without date or time zone."""

    name: ClassVar[str] = "time"


@dataclass(frozen=True)
class TimestampType(PrimitiveType):
    """Timestamp, microsecond precision, without time zone."""

    name: ClassVar[str] = "timestamp"


@dataclass(frozen=True)
class TimestamptzType(PrimitiveType):
    """Timestamp, microsecond precision, with time zone (stored as UTC)."""

    name: ClassVar[str] = "timestamptz"


@dataclass(frozen=True)
class TimestampNanoType(PrimitiveType):
    """v3 timestamp, nanosecond precision, without time zone."""

    name: ClassVar[str] = "timestamp_ns"
    min_format_version: ClassVar[int] = 3


@dataclass(frozen=True)
class TimestamptzNanoType(PrimitiveType):
    """v3 timestamp, nanosecond precision, with time zone (stored as UTC)."""

    name: ClassVar[str] = "timestamptz_ns"
    min_format_version: ClassVar[int] = 3


@dataclass(frozen=True)
class StringType(PrimitiveType):
    """Arbitrary-length UTF-8 character sequence."""

    name: ClassVar[str] = "string"


@dataclass(frozen=True)
class UUIDType(PrimitiveType):
    """Universally unique identifier (16 bytes)."""

    name: ClassVar[str] = "uuid"


#: Parquet stores a fixed-length byte array's length as a 32-bit signed integer (as Java does).
_MAX_FIXED_LENGTH = 2**31 - 1


@dataclass(frozen=True)
class FixedType(PrimitiveType):
    """Fixed-length byte array of ``length`` bytes."""

    length: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "length", integer_parameter("fixed length", self.length))
        if not 1 <= self.length <= _MAX_FIXED_LENGTH:
            raise ValidationError(
                f"fixed length must be between 1 and {_MAX_FIXED_LENGTH}, got {self.length}"
            )

    def __str__(self) -> str:
        return f"fixed[{self.length}]"


@dataclass(frozen=True)
class BinaryType(PrimitiveType):
    """Arbitrary-length byte array."""

    name: ClassVar[str] = "binary"


@dataclass(frozen=True)
class VariantType(PrimitiveType):
    """v3 semi-structured ``variant`` value."""

    name: ClassVar[str] = "variant"
    min_format_version: ClassVar[int] = 3


#: Characters a CRS cannot hold: type-string parsers (Java's included) read ``geometry(C)`` and
#: ``geography(C, A)`` up to the first ``)`` or ``,``, so such a CRS would not read back.
_CRS_FORBIDDEN = frozenset("(),")


def _check_crs(crs: Any, kind: str) -> str:
    """The CRS of a geo type: ``None`` is the default (``OGC:CRS84``); anything that would not
    read back from the type string (spec: ``type:identifier``) raises :class:`ValidationError`."""
    if crs is None:
        return DEFAULT_CRS
    if not isinstance(crs, str):
        raise ValidationError(f"invalid {kind} CRS {crs!r}: a CRS is a string such as 'srid:4326'")
    if not crs.strip():
        raise ValidationError(
            f"invalid {kind} CRS {crs!r}: a CRS cannot be empty (omit it for the default "
            f"{DEFAULT_CRS})"
        )
    bad = (
        sorted(set(crs) & _CRS_FORBIDDEN)
        or [c for c in crs if not c.isprintable() and not c.isspace()][:1]
    )
    if bad:
        raise ValidationError(
            f"invalid {kind} CRS {crs!r}: it cannot hold {' '.join(map(repr, bad))} (the type "
            f"string {kind}(C) could not be read back); use 'srid:<N>' or 'projjson:<property>'"
        )
    if crs != crs.strip() or any(c.isspace() and c != " " for c in crs):
        raise ValidationError(
            f"invalid {kind} CRS {crs!r}: it cannot start or end with whitespace or hold tabs "
            "or line breaks (the type string could not be read back)"
        )
    return crs


def _check_algorithm(algorithm: Any) -> str:
    """A geography edge algorithm, lower-cased (``None`` is the default, ``spherical``)."""
    if algorithm is None:
        return DEFAULT_EDGE_ALGORITHM
    name = algorithm.lower() if isinstance(algorithm, str) else algorithm
    if name not in EDGE_ALGORITHMS:
        raise ValidationError(
            f"geography edge algorithm must be one of {EDGE_ALGORITHMS}, got {algorithm!r}"
        )
    return str(name)


@dataclass(frozen=True)
class GeometryType(PrimitiveType):
    """v3 ``geometry(C)``: OGC simple features with planar edges, in coordinate system ``crs``
    (``None`` or omitted: ``OGC:CRS84``). A CRS that could not be read back from the type
    string (empty, or holding ``(``, ``)`` or ``,``) raises :class:`ValidationError`."""

    crs: str = DEFAULT_CRS
    min_format_version: ClassVar[int] = 3

    def __post_init__(self) -> None:
        object.__setattr__(self, "crs", _check_crs(self.crs, "geometry"))

    def __str__(self) -> str:
        # as the reference writes it (Types.GeometryType.toString): the CRS always spelled out
        return f"geometry({self.crs})"

    # CRS identifiers compare ignoring case, as the reference's types do (OGC:CRS84 is ogc:crs84)
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GeometryType):
            return NotImplemented
        return self.crs.upper() == other.crs.upper()

    def __hash__(self) -> int:
        return hash((GeometryType, self.crs.upper()))


@dataclass(frozen=True)
class GeographyType(PrimitiveType):
    """v3 ``geography(C, A)``: OGC features on a geographic ``crs`` with edge ``algorithm``
    (``None`` or omitted: ``OGC:CRS84`` and ``spherical``). The CRS is checked as for
    :class:`GeometryType`; the algorithm is one of :data:`EDGE_ALGORITHMS` (any case)."""

    crs: str = DEFAULT_CRS
    algorithm: str = DEFAULT_EDGE_ALGORITHM
    min_format_version: ClassVar[int] = 3

    def __post_init__(self) -> None:
        object.__setattr__(self, "crs", _check_crs(self.crs, "geography"))
        object.__setattr__(self, "algorithm", _check_algorithm(self.algorithm))

    def __str__(self) -> str:
        # as the reference writes it (Types.GeographyType.toString): both parameters spelled out
        return f"geography({self.crs}, {self.algorithm})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GeographyType):
            return NotImplemented
        return (self.crs.upper(), self.algorithm) == (other.crs.upper(), other.algorithm)

    def __hash__(self) -> int:
        return hash((GeographyType, self.crs.upper(), self.algorithm))


class NestedType(IcebergType):
    """A struct, list or map: a type with child fields, each with its own field id."""

    @property
    @abstractmethod
    def fields(self) -> tuple[NestedField, ...]:
        """The child fields, in order."""


@dataclass(frozen=True)
class NestedField:
    """A named, id-carrying field of a struct (also used for list elements and map entries).

    ``initial_default`` and ``write_default`` are in JSON single-value form (see module doc);
    ``None`` means no default (a null default).
    """

    field_id: int
    name: str
    field_type: IcebergType
    required: bool = False
    doc: str | None = None
    initial_default: Any = None
    write_default: Any = None

    def __post_init__(self) -> None:
        # written to the metadata as given: any other JSON type makes the table unreadable
        if not isinstance(self.name, str):
            raise ValidationError(f"field name must be a string, got {self.name!r}")
        if not isinstance(self.field_type, IcebergType):
            raise ValidationError(
                f"the type of field {self.name!r} must be an icefloe type (LongType(), ...; "
                f"type_from_json('long') reads a name), got {self.field_type!r}"
            )
        if "\x00" in self.name:  # Arrow's C data interface ends a name at its first NUL
            raise ValidationError(f"field name {self.name!r} holds a NUL character")
        if self.required and isinstance(self.field_type, UnknownType):  # always null
            raise ValidationError(f"column {self.name!r} of type unknown must be optional")
        if self.doc is not None and not isinstance(self.doc, str):
            raise ValidationError(f"doc of field {self.name!r} must be a string, got {self.doc!r}")

    @property
    def optional(self) -> bool:
        return not self.required

    def __hash__(self) -> int:
        # Defaults may be JSON objects or lists (struct, map and list values): hash their text.
        return hash(
            (
                self.field_id,
                self.name,
                self.field_type,
                self.required,
                self.doc,
                _json_key(self.initial_default),
                _json_key(self.write_default),
            )
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.field_id,
            "name": self.name,
            "required": self.required,
            "type": self.field_type.to_json(),
        }
        if self.doc is not None:
            out["doc"] = self.doc
        if self.initial_default is not None:
            out["initial-default"] = self.initial_default
        if self.write_default is not None:
            out["write-default"] = self.write_default
        return out

    @staticmethod
    def from_json(obj: Any) -> NestedField:
        if not isinstance(obj, dict):
            raise ValidationError(f"a struct field must be a JSON object, got {obj!r}")
        for key in ("id", "name", "type"):
            if key not in obj:
                raise ValidationError(f"struct field is missing {key!r}: {obj!r}")
        field_id = _int(obj["id"], "field id")
        if not isinstance(obj["name"], str):
            raise ValidationError(f"field name must be a string, got {obj['name']!r}")
        required = obj.get("required", False)
        if not isinstance(required, bool):
            raise ValidationError(f"field 'required' must be a boolean, got {required!r}")
        return NestedField(
            field_id=field_id,
            name=obj["name"],
            field_type=type_from_json(obj["type"]),
            required=required,
            doc=obj.get("doc"),
            initial_default=obj.get("initial-default"),
            write_default=obj.get("write-default"),
        )

    def __str__(self) -> str:
        req = "required" if self.required else "optional"
        doc = f" ({self.doc})" if self.doc else ""
        return f"{self.field_id}: {self.name}: {req} {self.field_type}{doc}"


@dataclass(frozen=True)
class StructType(NestedType):
    """A tuple of typed, named fields."""

    struct_fields: tuple[NestedField, ...] = field(default=())

    def __init__(self, *fields: NestedField) -> None:
        object.__setattr__(self, "struct_fields", tuple(fields))

    @property
    def fields(self) -> tuple[NestedField, ...]:
        return self.struct_fields

    def field_by_id(self, field_id: int) -> NestedField | None:
        for f in self.struct_fields:
            if f.field_id == field_id:
                return f
        return None

    def field_by_name(self, name: str, case_sensitive: bool = True) -> NestedField | None:
        if case_sensitive:
            return next((f for f in self.struct_fields if f.name == name), None)
        lowered = name.lower()
        return next((f for f in self.struct_fields if f.name.lower() == lowered), None)

    def to_json(self) -> dict[str, Any]:
        return {"type": "struct", "fields": [f.to_json() for f in self.struct_fields]}

    def __str__(self) -> str:
        return "struct<" + ", ".join(str(f) for f in self.struct_fields) + ">"


@dataclass(frozen=True)
class ListType(NestedType):
    """A list whose elements have field id ``element_id``."""

    element_id: int
    element_type: IcebergType
    element_required: bool = True

    @property
    def element_field(self) -> NestedField:
        return NestedField(self.element_id, "element", self.element_type, self.element_required)

    @property
    def fields(self) -> tuple[NestedField, ...]:
        return (self.element_field,)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "list",
            "element-id": self.element_id,
            "element": self.element_type.to_json(),
            "element-required": self.element_required,
        }

    def __str__(self) -> str:
        return f"list<{self.element_type}>"


@dataclass(frozen=True)
class MapType(NestedType):
    """A map with key field ``key_id`` (always required) and value field ``value_id``."""

    key_id: int
    key_type: IcebergType
    value_id: int
    value_type: IcebergType
    value_required: bool = True

    @property
    def key_field(self) -> NestedField:
        return NestedField(self.key_id, "key", self.key_type, True)

    @property
    def value_field(self) -> NestedField:
        return NestedField(self.value_id, "value", self.value_type, self.value_required)

    @property
    def fields(self) -> tuple[NestedField, ...]:
        return (self.key_field, self.value_field)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "map",
            "key-id": self.key_id,
            "key": self.key_type.to_json(),
            "value-id": self.value_id,
            "value": self.value_type.to_json(),
            "value-required": self.value_required,
        }

    def __str__(self) -> str:
        return f"map<{self.key_type}, {self.value_type}>"


_SIMPLE: dict[str, PrimitiveType] = {
    t.name: t
    for t in (
        UnknownType(),
        BooleanType(),
        IntegerType(),
        LongType(),
        FloatType(),
        DoubleType(),
        DateType(),
        TimeType(),
        TimestampType(),
        TimestamptzType(),
        TimestampNanoType(),
        TimestamptzNanoType(),
        StringType(),
        UUIDType(),
        BinaryType(),
        VariantType(),
    )
}
# ASCII digits and spaces, as Iceberg Java's patterns match them
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)", re.ASCII)
_FIXED = re.compile(r"fixed\[\s*(\d+)\s*\]", re.ASCII)
# the reference's patterns (Types.GEOMETRY_PARAMETERS / GEOGRAPHY_PARAMETERS): the name in any
# case, optional parameters, whitespace around each
_GEOMETRY = re.compile(r"geometry\s*(?:\(\s*([^)]*?)\s*\))?", re.IGNORECASE | re.ASCII)
_GEOGRAPHY = re.compile(
    r"geography\s*(?:\(\s*([^,]*?)\s*(?:,\s*(\w*)\s*)?\))?", re.IGNORECASE | re.ASCII
)


def primitive_from_string(text: str) -> PrimitiveType:
    """Parses a primitive type string such as ``"long"``, ``"decimal(9, 2)"`` or ``"fixed[16]"``."""
    s = text.strip().lower()
    if s in _SIMPLE:
        return _SIMPLE[s]
    if m := _DECIMAL.fullmatch(s):
        return DecimalType(int(m.group(1)), int(m.group(2)))
    if m := _FIXED.fullmatch(s):
        return FixedType(int(m.group(1)))
    # CRS identifiers are case-sensitive: match on the original text.
    raw = text.strip()
    if m := _GEOMETRY.fullmatch(raw):
        return _read_geo(GeometryType, m.group(1))
    if m := _GEOGRAPHY.fullmatch(raw):
        return _read_geo(GeographyType, m.group(1), _check_algorithm(m.group(2)))
    raise ValidationError(f"unknown type: {text!r}")


def _read_geo(cls: type[Any], crs: str | None, *algorithm: str) -> PrimitiveType:
    """A geo type read from metadata: an empty CRS is refused (as by the reference), but a CRS
    that the reference's pattern reads though the constructor refuses it (``geometry(a,b)``,
    written by another engine) is kept, so that such a table still loads."""
    if crs is None:
        out: PrimitiveType = cls(None, *algorithm)
        return out
    try:
        out = cls(crs, *algorithm)
    except ValidationError:
        if not crs.strip():
            raise
        out = object.__new__(cls)
        object.__setattr__(out, "crs", crs)
        if algorithm:
            object.__setattr__(out, "algorithm", algorithm[0])
    return out


def type_from_json(obj: Any) -> IcebergType:
    """Parses the spec's JSON form of a type (Appendix C)."""
    if isinstance(obj, str):
        return primitive_from_string(obj)
    if not isinstance(obj, dict):
        raise ValidationError(f"a type must be a JSON string or object, got {obj!r}")
    kind = obj.get("type")
    try:
        if kind == "struct":
            fields = obj["fields"]
            if not isinstance(fields, list):
                raise ValidationError(f"struct 'fields' must be a list, got {fields!r}")
            return StructType(*(NestedField.from_json(f) for f in fields))
        if kind == "list":
            return ListType(
                element_id=_int(obj["element-id"], "element-id"),
                element_type=type_from_json(obj["element"]),
                element_required=_bool(obj["element-required"], "element-required"),
            )
        if kind == "map":
            return MapType(
                key_id=_int(obj["key-id"], "key-id"),
                key_type=type_from_json(obj["key"]),
                value_id=_int(obj["value-id"], "value-id"),
                value_type=type_from_json(obj["value"]),
                value_required=_bool(obj["value-required"], "value-required"),
            )
    except KeyError as e:
        raise ValidationError(f"{kind} type is missing {e.args[0]!r}: {obj!r}") from None
    raise ValidationError(f"unknown nested type {kind!r} in {obj!r}")


def _json_key(v: Any) -> Any:
    """A hashable stand-in for a JSON default value."""
    if isinstance(v, dict | list):
        return json.dumps(v, sort_keys=True)
    return v


_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


def _int(v: Any, name: str) -> int:
    """A field id read from JSON: an integer that fits a 32-bit int, as Java's
    ``JsonUtil.getInt`` requires (ids are ints everywhere else: Avro, Parquet, Arrow)."""
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValidationError(f"{name} must be an int, got {v!r}")
    if not _INT32_MIN <= v <= _INT32_MAX:
        text = str(v) if v.bit_length() < 128 else f"an integer of {v.bit_length()} bits"
        raise ValidationError(f"{name} is out of range for a 32-bit int: {text}")
    return v


def _bool(v: Any, name: str) -> bool:
    if not isinstance(v, bool):
        raise ValidationError(f"{name} must be a boolean, got {v!r}")
    return v
