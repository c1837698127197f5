"""Writing numbers into decimal columns exactly: decimals and integers to any decimal type
when every value is representable in it (a widening always; otherwise each value is checked
and one that would overflow or lose digits is refused with its column and why, never rounded),
and decimals whose values have more digits than their own Arrow type says refused."""

from __future__ import annotations

import decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe import _native
from icefloe.exceptions import ValidationError

__all__ = ["to_decimal", "within_precision"]


#: Iceberg's widest decimal (``decimal128``); wider intermediates are ``decimal256``.
_MAX_DECIMAL128 = 38


def _integer_digits(t: pa.DataType) -> int:
    """Decimal digits of the largest magnitude an integer type holds (int64: 19)."""
    bits: int = t.bit_width
    top = 2**bits - 1 if pa.types.is_unsigned_integer(t) else 2 ** (bits - 1)
    return len(str(top))


def _decimal_type(precision: int, scale: int) -> pa.DataType:
    if precision <= _MAX_DECIMAL128:
        return pa.decimal128(precision, scale)
    return pa.decimal256(precision, scale)


def _digits(n: int) -> str:
    return "1 digit" if n == 1 else f"{n} digits"


def to_decimal(arr: pa.Array, want: pa.DataType, path: str) -> pa.Array:
    """A decimal or integer column as decimal ``want``: a widening (no fewer integer digits,
    no smaller scale) always; otherwise only when every value is exactly representable
    (Arrow's safe cast refuses a value that would overflow or lose digits: never rounded)."""
    source = arr
    have = arr.type
    if pa.types.is_integer(have):  # first exactly as a decimal of the target's scale
        have = _decimal_type(_integer_digits(have) + want.scale, want.scale)
        arr = pc.cast(arr, have)
    else:
        within_precision(arr, path, source=True)  # a value its own type cannot hold
        if have.scale < 0:  # exactly as whole numbers first (1E+5 at scale -5 is 100000)
            have = _decimal_type(have.precision - have.scale, 0)
            arr = pc.cast(arr, have)
    if have.scale <= want.scale and have.precision - have.scale <= want.precision - want.scale:
        return pc.cast(arr, want)
    if have.scale < want.scale:
        # Arrow's rescale wraps around when the raised value overflows its 128 (or 256) bits,
        # and the precision check then passes the wrong value: too many integer digits are
        # refused at the input's scale first (a range check), then the scale is raised in
        # 256 bits, where the value cannot overflow
        whole = max(1, want.precision - want.scale)
        if have.precision - have.scale > whole:
            have = _decimal_type(whole + have.scale, have.scale)
            arr = _checked_cast(arr, have, source, want, path)
        have = pa.decimal256(have.precision - have.scale + want.scale, want.scale)
        arr = pc.cast(arr, have)
    return _checked_cast(arr, want, source, want, path)


def _checked_cast(
    arr: pa.Array, to: pa.DataType, source: pa.Array, want: pa.DataType, path: str
) -> pa.Array:
    """``arr`` cast to decimal ``to`` by Arrow's safe cast; a value it refuses raises a
    :class:`ValidationError` naming it (as in ``source``, the column given for ``want``)."""
    try:
        return pc.cast(arr, to, safe=True)
    except pa.ArrowInvalid:
        pass
    # bisect for the first value the cast refuses: casts of halves, O(n) in all
    lo, hi = 0, len(arr)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            pc.cast(arr.slice(lo, mid - lo), to, safe=True)
            lo = mid
        except pa.ArrowInvalid:
            hi = mid
    raise _not_decimal(source[lo].as_py(), want, path)


def _not_decimal(value: Any, want: pa.DataType, path: str) -> ValidationError:
    """The error for ``value`` of column ``path``, which decimal ``want`` cannot hold."""
    with decimal.localcontext() as ctx:
        ctx.prec = 200  # exact for any decimal256
        fraction = decimal.Decimal(value).scaleb(want.scale) % 1 != 0
    whole = want.precision - want.scale
    if fraction and want.scale == 0:
        why = "it is not a whole number (values are not rounded)"
    elif fraction:
        why = f"it has more than {_digits(want.scale)} after the point (values are not rounded)"
    elif whole == 0:
        why = "it has digits before the point"
    else:
        why = f"it has more than {_digits(whole)} before the point"
    return ValidationError(
        f"column {path!r}: value {value} cannot be written as decimal({want.precision}, "
        f"{want.scale}): {why}"
    )


def within_precision(arr: pa.Array, path: str, source: bool = False) -> pa.Array:
    """A decimal column already of the table's type, refused if a value has more digits than
    the type says (Arrow does not check them: ``cast(safe=False)`` or another engine's export,
    as DuckDB's ``HUGEINT``, can give such arrays, and writers would truncate the value).
    ``source``: ``arr`` is the input, of another decimal type than the column's."""
    at = _native.decimal_out_of_precision(arr) if len(arr) != arr.null_count else None
    if at is None:
        return arr
    value = arr[at].as_py()
    if source:
        raise ValidationError(
            f"column {path!r}: value {value} has more digits than its Arrow type "
            f"{arr.type} holds (an unchecked cast or another engine's export made it)"
        )
    raise _not_decimal(value, arr.type, path)
