"""Iceberg partition transforms as vectorised Spark functions (Arrow UDFs on the Rust core).

DataFrame API::

    from icefloe.spark import functions as if
    df.select(if.bucket(16, "id"), if.truncate(4, "name"), if.days("ts"))

Spark SQL, after :func:`register_functions` (names take a prefix, ``icefloe_`` by default)::

    SELECT icefloe_bucket(16, id), icefloe_truncate(4, name), icefloe_days(ts) FROM t

Each batch of a column crosses to Python as Arrow and is transformed by
:mod:`icefloe.transforms` in Rust: no per-row Python. Results follow the Iceberg spec (and
Iceberg Java's ``system.*`` functions): ``bucket``, ``years``, ``months`` and ``hours`` give
``int``, ``days`` gives ``date``, ``truncate`` keeps its input's type. Spark UDFs declare their
result type up front, so ``truncate`` takes the source column's Spark type (``"string"`` by
default); SQL registers one ``truncate`` per type: ``icefloe_truncate`` (string),
``icefloe_truncate_int``, ``icefloe_truncate_long`` and ``icefloe_truncate_binary``.

Source types are the spec's (as Java's ``system.*`` functions check them): ``bucket`` takes
date, tinyint, smallint, int, bigint, decimal, timestamp(_ntz), string and binary columns;
``truncate`` tinyint, smallint, int, bigint, decimal, string and binary; ``years``, ``months``
and ``days`` dates and timestamps, ``hours`` timestamps. Another type raises
:class:`~icefloe.exceptions.ValidationError` naming it: at the call for ``truncate``'s declared
``source_type``, otherwise when the UDF runs (Spark tells a Python UDF its input type only
then), so the error comes through Spark's exception; run the action inside
:func:`icefloe.spark.icefloe_errors` to get it (and any other transform error) as the icefloe
error.
"""

from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa

from icefloe.exceptions import ValidationError
from icefloe.spark import _missing_pyspark, _require_pyspark
from icefloe.spark.errors import executor_errors
from icefloe.spark.worker import ensure_worker_python, prepare_worker
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    YearTransform,
)
from icefloe.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
)

__all__ = [
    "bucket",
    "days",
    "hours",
    "months",
    "register_functions",
    "truncate",
    "years",
]


def _arrow_udf(fn: Any, return_type: Any) -> Any:
    try:
        from pyspark.sql.pandas.functions import arrow_udf  # new in PySpark 4.1
    except ImportError as exc:
        raise _missing_pyspark("icefloe.spark.functions", exc) from exc

    return arrow_udf(fn, returnType=return_type)


def _col(c: Any) -> Any:
    _require_pyspark("icefloe.spark.functions")
    from pyspark.sql import functions as F

    return F.col(c) if isinstance(c, str) else c


#: Spark's types (their ``simpleString``) as the Iceberg types the spec's transforms accept;
#: tinyint and smallint are ints, as Java's ``system.*`` functions take them.
_SPARK_TYPES: dict[str, IcebergType] = {
    "tinyint": IntegerType(),
    "smallint": IntegerType(),
    "int": IntegerType(),
    "bigint": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "boolean": BooleanType(),
    "string": StringType(),
    "binary": BinaryType(),
    "date": DateType(),
    "timestamp": TimestamptzType(),
    "timestamp_ntz": TimestampType(),
}


def _spark_type_iceberg(name: str) -> IcebergType | None:
    """The Iceberg type of a Spark type named by its ``simpleString``, None if none fits."""
    if name.startswith("decimal(") and name.endswith(")"):
        precision, _, scale = name[len("decimal(") : -1].partition(",")
        try:
            return DecimalType(int(precision), int(scale or 0))
        except (ValueError, ValidationError):
            return None
    if name.startswith(("varchar(", "char(")):
        return StringType()
    return _SPARK_TYPES.get(name)


def _arrow_spark_name(t: pa.DataType) -> str:
    """The Spark name of the type of an Arrow column Spark gave a UDF."""
    types = pa.types
    simple = {
        pa.int8(): "tinyint",
        pa.int16(): "smallint",
        pa.int32(): "int",
        pa.int64(): "bigint",
        pa.float32(): "float",
        pa.float64(): "double",
        pa.bool_(): "boolean",
        pa.date32(): "date",
    }
    if t in simple:
        return simple[t]
    if types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if types.is_string(t) or types.is_large_string(t) or types.is_string_view(t):
        return "string"
    if types.is_binary(t) or types.is_large_binary(t) or types.is_binary_view(t):
        return "binary"
    return str(t)


def _check_source(t: Transform, spark_name: str) -> None:
    """Refuses a source column type the spec's transform ``t`` does not accept."""
    source = _spark_type_iceberg(spark_name)
    if source is None or not t.can_transform(source):
        raise ValidationError(
            f"transform {t} cannot be applied to a column of type {spark_name}: expected "
            + _EXPECTED[type(t)]
        )


_EXPECTED: dict[type, str] = {
    BucketTransform: (
        "date, tinyint, smallint, int, bigint, decimal, timestamp, timestamp_ntz, string or binary"
    ),
    TruncateTransform: "tinyint, smallint, int, bigint, decimal, string or binary",
    YearTransform: "date, timestamp or timestamp_ntz",
    MonthTransform: "date, timestamp or timestamp_ntz",
    DayTransform: "date, timestamp or timestamp_ntz",
    HourTransform: "timestamp or timestamp_ntz",
}


def _apply_checked(t: Transform, values: pa.Array) -> pa.Array:
    """``t`` applied to a column Spark gave a UDF, its type checked first; tinyint and smallint
    values are transformed as ints (and a truncate's result given back in their type)."""
    _check_source(t, _arrow_spark_name(values.type))
    narrow = values.type if values.type in (pa.int8(), pa.int16()) else None
    result = t.apply(values.cast(pa.int32()) if narrow is not None else values)
    if narrow is not None and isinstance(t, TruncateTransform):
        result = result.cast(narrow, safe=False)  # wraps at the type's ends, as Java's casts do
    return result


def _transform_fn(t: Transform, out: pa.DataType | None, declared: str | None = None) -> Any:
    """The UDF body: ``t`` of each batch (as ``out`` when given); ``declared`` is the Spark
    type a truncate was told its column has (its result's type)."""

    def apply(values: pa.Array) -> pa.Array:
        prepare_worker()
        with executor_errors():  # the error reaches the driver typed (icefloe_errors)
            if declared is not None and _arrow_spark_name(values.type) != declared:
                raise ValidationError(
                    f"transform {t}: the column is of type {_arrow_spark_name(values.type)}, "
                    f"not source_type {declared}: pass its type as source_type"
                )
            result = _apply_checked(t, values)
            return result.cast(out) if out is not None and result.type != out else result

    return apply


def _int_type() -> Any:
    from pyspark.sql.types import IntegerType

    return IntegerType()


@functools.lru_cache(maxsize=256)
def _bucket_udf(n: int) -> Any:
    _require_pyspark("icefloe.spark.functions")
    return _arrow_udf(_transform_fn(BucketTransform(n), None), _int_type())


@functools.lru_cache(maxsize=256)
def _truncate_udf(width: int, type_ddl: str) -> Any:
    _require_pyspark("icefloe.spark.functions")
    from pyspark.sql.types import _parse_datatype_string

    spark_type = _parse_datatype_string(type_ddl)
    declared = spark_type.simpleString()
    if declared.startswith(("varchar(", "char(")):
        declared = "string"  # Spark gives a UDF such columns as strings
    return _arrow_udf(_transform_fn(TruncateTransform(width), None, declared), spark_type)


@functools.lru_cache(maxsize=8)
def _time_udf(name: str) -> Any:
    _require_pyspark("icefloe.spark.functions")
    from pyspark.sql.types import DateType

    if name == "days":
        return _arrow_udf(_transform_fn(DayTransform(), pa.date32()), DateType())
    t: Transform = {"years": YearTransform(), "months": MonthTransform(), "hours": HourTransform()}[
        name
    ]
    return _arrow_udf(_transform_fn(t, None), _int_type())


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValidationError(f"{name} must be a positive int, got {value!r}")
    return value


def bucket(num_buckets: int, col: Any) -> Any:
    """``bucket[num_buckets]`` of ``col`` (a Column or column name): an int column."""
    return _bucket_udf(_positive_int("num_buckets", num_buckets))(_col(col))


def truncate(width: int, col: Any, source_type: Any = "string") -> Any:
    """``truncate[width]`` of ``col``; ``source_type`` is its Spark type (DDL or DataType)."""
    ddl = source_type if isinstance(source_type, str) else source_type.simpleString()
    n = _positive_int("width", width)
    _require_pyspark("icefloe.spark.functions")
    from pyspark.sql.types import _parse_datatype_string

    try:
        spark_name = _parse_datatype_string(ddl).simpleString()
    except Exception as exc:
        raise ValidationError(f"source_type {ddl!r} is not a Spark type: {exc}") from exc
    _check_source(TruncateTransform(n), spark_name)  # refused here, before any job runs
    return _truncate_udf(n, ddl)(_col(col))


def years(col: Any) -> Any:
    """Years from 1970 of a date or timestamp column (int)."""
    return _time_udf("years")(_col(col))


def months(col: Any) -> Any:
    """Months from 1970-01 of a date or timestamp column (int)."""
    return _time_udf("months")(_col(col))


def days(col: Any) -> Any:
    """The day of a date or timestamp column (date)."""
    return _time_udf("days")(_col(col))


def hours(col: Any) -> Any:
    """Hours from 1970-01-01 00:00 of a timestamp column (int)."""
    return _time_udf("hours")(_col(col))


# ------------------------------------------------------------------------------------ SQL


def _constant(arr: pa.Array, what: str) -> int:
    """The literal argument of a SQL call, sent by Spark as a column of equal values."""
    if len(arr) == 0:
        return 1  # an empty batch: any valid parameter gives the empty result
    first = arr[0].as_py()
    if first is None or not isinstance(first, int) or first <= 0:
        raise ValidationError(f"{what} must be a positive int literal, got {first!r}")
    return int(first)


def _sql_bucket(n: pa.Array, values: pa.Array) -> pa.Array:
    with executor_errors():
        return _apply_checked(BucketTransform(_constant(n, "bucket count")), values)


def _sql_truncate(w: pa.Array, values: pa.Array) -> pa.Array:
    with executor_errors():
        return _apply_checked(TruncateTransform(_constant(w, "truncate width")), values)


def register_functions(spark: Any, prefix: str = "icefloe_") -> list[str]:
    """Registers the transforms as Spark SQL functions; returns the names registered."""
    _require_pyspark("icefloe.spark.functions.register_functions")
    from pyspark.sql import types as T

    ensure_worker_python(spark)

    def reg(name: str, fn: Any, return_type: Any) -> str:
        spark.udf.register(prefix + name, _arrow_udf(fn, return_type))
        return prefix + name

    names = [
        reg("bucket", _sql_bucket, T.IntegerType()),
        reg("truncate", _sql_truncate, T.StringType()),
        reg("truncate_int", _sql_truncate, T.IntegerType()),
        reg("truncate_long", _sql_truncate, T.LongType()),
        reg("truncate_binary", _sql_truncate, T.BinaryType()),
    ]
    for name in ("years", "months", "days", "hours"):
        spark.udf.register(prefix + name, _time_udf(name))
        names.append(prefix + name)
    return names
