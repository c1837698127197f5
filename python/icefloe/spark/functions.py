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
"""

from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa

from icefloe.exceptions import ValidationError
from icefloe.spark import _missing_pyspark, _require_pyspark
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


def _transform_fn(t: Transform, out: pa.DataType | None) -> Any:
    def apply(values: pa.Array) -> pa.Array:
        prepare_worker()
        result = t.apply(values)
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

    return _arrow_udf(
        _transform_fn(TruncateTransform(width), None), _parse_datatype_string(type_ddl)
    )


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
    return _truncate_udf(_positive_int("width", width), ddl)(_col(col))


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
    return BucketTransform(_constant(n, "bucket count")).apply(values)


def _sql_truncate(w: pa.Array, values: pa.Array) -> pa.Array:
    return TruncateTransform(_constant(w, "truncate width")).apply(values)


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
