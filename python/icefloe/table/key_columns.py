"""Key columns of upserts and deletes by key: the names given (or the table's identifier
fields), the types that can key rows, and a filter selecting at least every row whose key is
among given keys, which prunes planning and scopes conflict checks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.exceptions import ValidationError
from icefloe.expressions.base import AlwaysTrue, And, BooleanExpression
from icefloe.expressions.builder import col
from icefloe.schema import Schema
from icefloe.table.key_routing import typed_keys
from icefloe.types import (
    DoubleType,
    FloatType,
    GeographyType,
    GeometryType,
    PrimitiveType,
    UnknownType,
    VariantType,
)

__all__ = ["EXACT_KEY_VALUES", "check_key_types", "join_columns", "key_columns", "keys_filter"]

#: Join columns with at most this many distinct source values are filtered by the values
#: themselves (``in``), larger ones by their range: two far-apart keys spanned every file.
EXACT_KEY_VALUES = 256


def keys_filter(
    keys: pa.Table,
    join_cols: Sequence[str],
    schema: Schema | None = None,
    case_sensitive: bool = True,
) -> BooleanExpression:
    """A filter selecting at least every row whose key is in ``keys``: of each join column
    its values (a few) or their range (``is_null`` joins in when keys have nulls). Used to
    prune planning and to scope conflict checks.

    Integer, string, date, timestamp, decimal, binary, fixed and uuid keys take part (uuid
    ones by their values only: a range of random uuids prunes nothing); others (floats) do
    not. With ``schema``, keys are first typed as the equality delete writer types them (a
    column whose keys it refuses is left out). Timestamps are literals of their own unit
    (``numpy.datetime64``, UTC for zoned keys), so nanoseconds and time zones mean what the
    keys mean."""
    expr: BooleanExpression = AlwaysTrue()
    for name in join_cols:
        c = keys.column(name)
        fid = schema.find_field_id(name, case_sensitive) if schema is not None else None
        if schema is not None and fid is not None:
            try:
                c = typed_keys(c, schema.find_field(fid))
            except (ValidationError, pa.ArrowException):
                continue  # the writer raises it
        values_only = isinstance(c.type, pa.BaseExtensionType)  # uuid
        if values_only:
            c = pa.chunked_array([chunk.storage for chunk in c.chunks], c.type.storage_type)
        t = c.type
        unit: str | None = None  # of timestamp keys, filtered by their int64 counts
        if pa.types.is_timestamp(t):
            c, unit = c.cast(pa.int64()), t.unit
        elif not (
            pa.types.is_integer(t)
            or pa.types.is_string(t)
            or pa.types.is_large_string(t)
            or pa.types.is_date(t)
            or pa.types.is_decimal(t)
            or pa.types.is_binary(t)
            or pa.types.is_large_binary(t)
            or pa.types.is_fixed_size_binary(t)
        ):
            continue
        if c.null_count == len(c):
            part: BooleanExpression = col(name).is_null()
        else:
            distinct = pc.unique(c.drop_null()) if len(c) <= 8 * EXACT_KEY_VALUES else None
            if distinct is not None and len(distinct) <= EXACT_KEY_VALUES:
                found = distinct.to_pylist()
                if unit is not None:
                    found = list(np.array(found, dtype=f"datetime64[{unit}]"))
                part = col(name).isin(found)
            elif values_only:
                continue
            else:
                mm = pc.min_max(c)
                low, high = mm["min"].as_py(), mm["max"].as_py()
                if unit is not None:
                    low, high = np.array([low, high], dtype=f"datetime64[{unit}]")
                part = (col(name) >= low) & (col(name) <= high)
            if c.null_count:
                part = part | col(name).is_null()
        expr = part if expr is AlwaysTrue() else And(expr, part)
    return expr


def key_columns(join_cols: str | Sequence[str], case_sensitive: bool = True) -> list[str]:
    """Key column names: one name given as a string is one column (not its characters). A
    name given twice (or two names equal ignoring case, unless ``case_sensitive``) is refused
    with :class:`ValidationError`: the key would hold the column twice."""
    if isinstance(join_cols, str):
        return [join_cols]
    try:
        names = list(join_cols)
    except TypeError:
        raise ValidationError(
            f"join_cols must be a column name or a list of column names, got {join_cols!r}"
        ) from None
    seen: dict[str, str] = {}
    for name in names:
        if not isinstance(name, str):
            raise ValidationError(f"join columns must be column names (strings), got {name!r}")
        key = name if case_sensitive else name.lower()
        if key in seen:
            other = seen[key]
            also = "" if other == name else f" (as {other!r} and {name!r}: equal ignoring case)"
            raise ValidationError(f"join column {name!r} is given twice{also}")
        seen[key] = name
    return names


def join_columns(
    schema: Schema,
    join_cols: str | Sequence[str] | None,
    case_sensitive: bool = True,
    what: str = "upsert",
) -> list[str]:
    """:func:`key_columns` of ``join_cols``; ``None`` stands for the schema's identifier
    fields (by their full names), as in PyIceberg's ``upsert``. Without identifier fields,
    ``None`` is refused with :class:`ValidationError`."""
    if join_cols is not None:
        return key_columns(join_cols, case_sensitive)
    names = list(schema.identifier_field_names)
    if not names:
        raise ValidationError(
            f"{what} needs join columns: pass join_cols, or set the table's identifier fields "
            "(table.update_schema().set_identifier_fields(...))"
        )
    return names


def check_equality_key_types(
    schema: Schema, join_cols: Sequence[str], case_sensitive: bool
) -> None:
    """Equality delete columns cannot be float or double (the spec): a
    :class:`ValidationError` before anything is read, whether or not a file holds the keys
    (an empty table took such a key once, and refused it from the next run on)."""
    for name in join_cols:
        fid = schema.find_field_id(name, case_sensitive)
        if fid is None:
            continue
        t = schema.find_field(fid).field_type
        if isinstance(t, FloatType | DoubleType):
            raise ValidationError(
                f"column {name!r} of type {t} cannot be an equality delete column (the spec "
                "allows no float or double ones): delete such rows with delete(filter), upsert "
                "them with write.upsert.mode=merge-on-read or copy-on-write"
            )


def check_key_types(schema: Schema, join_cols: Sequence[str], case_sensitive: bool) -> None:
    """Key columns are compared by value: nested, variant, geospatial and ``unknown`` (always
    null) columns cannot be keys, nor fields inside a struct (keys are the data's top-level
    columns); each is a :class:`ValidationError` naming the column. A name not in the schema
    is left to the callers' own messages."""
    top = {f.field_id for f in schema.fields}
    for name in join_cols:
        fid = schema.find_field_id(name, case_sensitive)
        if fid is None:
            continue
        if fid not in top:
            raise ValidationError(
                f"column {name!r} is a field inside a struct: key columns must be top-level "
                "columns of the table (an identifier field in a struct cannot key an upsert "
                "or delete_by_keys; pass top-level join_cols)"
            )
        t = schema.find_field(fid).field_type
        if not isinstance(t, PrimitiveType) or isinstance(
            t, VariantType | GeometryType | GeographyType | UnknownType
        ):
            raise ValidationError(
                f"column {name!r} of type {t} cannot be a key column: keys are compared by "
                "value, so they must be primitive columns (not nested, variant, geospatial or "
                "unknown)"
            )
