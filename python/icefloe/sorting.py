"""Sort orders (spec "Sorting", Appendix C "Sort Orders").

A :class:`SortOrder` is an ``order_id`` and a tuple of :class:`SortField`; order id 0 is reserved
for the unsorted order, which has no fields (:data:`UNSORTED_SORT_ORDER`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from icefloe.exceptions import ValidationError
from icefloe.schema import Schema, transform_source
from icefloe.transforms import IdentityTransform, Transform, parse_transform

__all__ = [
    "UNSORTED_SORT_ORDER",
    "UNSORTED_SORT_ORDER_ID",
    "NullOrder",
    "SortDirection",
    "SortField",
    "SortOrder",
]

UNSORTED_SORT_ORDER_ID = 0


def _check_int32(v: int, what: str) -> None:
    """Java reads sort order ids with ``getInt``: they fit 32 bits."""
    if not -(2**31) <= v < 2**31:
        raise ValidationError(f"{what} is out of range for a 32-bit int: {v}")


class SortDirection(Enum):
    """Ascending or descending."""

    ASC = "asc"
    DESC = "desc"

    def __str__(self) -> str:
        return self.value

    @staticmethod
    def from_json(v: Any) -> SortDirection:
        if isinstance(v, str):
            for d in SortDirection:
                if d.value == v.lower():
                    return d
        raise ValidationError(f"invalid sort direction {v!r}: must be 'asc' or 'desc'")


class NullOrder(Enum):
    """Where nulls sort: first or last."""

    NULLS_FIRST = "nulls-first"
    NULLS_LAST = "nulls-last"

    def __str__(self) -> str:
        return self.value

    @staticmethod
    def from_json(v: Any) -> NullOrder:
        if isinstance(v, str):
            for n in NullOrder:
                if n.value == v.lower():
                    return n
        raise ValidationError(f"invalid null order {v!r}: must be 'nulls-first' or 'nulls-last'")


@dataclass(frozen=True)
class SortField:
    """One sort key: a transform of a source column, a direction and a null order.

    ``null_order`` defaults to nulls-first for ascending and nulls-last for descending order.
    ``source_ids`` is set only for multi-argument transforms (v3), as for partition fields.
    """

    source_id: int
    transform: Transform = field(default_factory=IdentityTransform)
    direction: SortDirection = SortDirection.ASC
    null_order: NullOrder | None = None
    source_ids: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.source_id, bool) or not isinstance(self.source_id, int):
            raise ValidationError(f"sort field source-id must be an int, got {self.source_id!r}")
        _check_int32(self.source_id, "sort field source-id")
        if not isinstance(self.transform, Transform):
            raise ValidationError(f"sort field transform must be a Transform: {self!r}")
        if not isinstance(self.direction, SortDirection):
            raise ValidationError(f"sort direction must be a SortDirection: {self!r}")
        if self.null_order is None:
            default = (
                NullOrder.NULLS_FIRST
                if self.direction is SortDirection.ASC
                else NullOrder.NULLS_LAST
            )
            object.__setattr__(self, "null_order", default)
        elif not isinstance(self.null_order, NullOrder):
            raise ValidationError(
                f"sort null order must be a NullOrder (NullOrder.NULLS_FIRST or "
                f"NullOrder.NULLS_LAST from icefloe.sorting), got {self.null_order!r}"
            )
        if self.source_ids is not None:
            ids = tuple(self.source_ids)
            if not ids or ids[0] != self.source_id:
                raise ValidationError(
                    f"sort field source-id {self.source_id} must be the first of source-ids "
                    f"{list(ids)}"
                )
            for i in ids:
                if isinstance(i, bool) or not isinstance(i, int):
                    raise ValidationError(f"sort field source-ids must be ints, got {i!r}")
                _check_int32(i, "sort field source-id")
            object.__setattr__(self, "source_ids", ids if len(ids) > 1 else None)

    @property
    def all_source_ids(self) -> tuple[int, ...]:
        return self.source_ids if self.source_ids is not None else (self.source_id,)

    def to_json(self) -> dict[str, Any]:
        """Appendix C form in the reference's key order."""
        out: dict[str, Any] = {"transform": str(self.transform)}
        if self.source_ids is not None:
            out["source-ids"] = list(self.source_ids)
        else:
            out["source-id"] = self.source_id
        out["direction"] = self.direction.value
        assert self.null_order is not None
        out["null-order"] = self.null_order.value
        return out

    @staticmethod
    def from_json(obj: Any) -> SortField:
        if not isinstance(obj, dict):
            raise ValidationError(f"a sort field must be a JSON object, got {obj!r}")
        for key in ("transform", "direction", "null-order"):
            if key not in obj:
                raise ValidationError(f"sort field is missing {key!r}: {obj!r}")
        source_ids: tuple[int, ...] | None = None
        if obj.get("source-ids") is not None:
            raw = obj["source-ids"]
            if not isinstance(raw, list) or not raw:
                raise ValidationError(f"sort field source-ids must be a non-empty list: {obj!r}")
            source_ids = tuple(raw)
            source_id = source_ids[0]
        elif "source-id" in obj:
            source_id = obj["source-id"]
        else:
            raise ValidationError(f"sort field is missing 'source-id': {obj!r}")
        if not isinstance(obj["transform"], str):
            raise ValidationError(f"sort field transform must be a string: {obj!r}")
        return SortField(
            source_id,
            parse_transform(obj["transform"]),
            SortDirection.from_json(obj["direction"]),
            NullOrder.from_json(obj["null-order"]),
            source_ids,
        )

    def __str__(self) -> str:
        src = ",".join(str(i) for i in self.all_source_ids)
        return f"{self.transform}({src}) {self.direction} {self.null_order}"


class SortOrder:
    """A sort order: ``order_id`` and the sort fields in order of precedence.

    ``order_id`` defaults to 1 when there are fields and to 0 (unsorted) when there are none;
    the unsorted id 0 with fields, or a non-zero id without fields, is rejected as the reference
    does.
    """

    __slots__ = ("_fields", "_order_id")

    def __init__(self, *fields: SortField, order_id: int | None = None) -> None:
        for f in fields:
            if not isinstance(f, SortField):
                raise ValidationError(f"sort order fields must be SortField, got {f!r}")
        if order_id is None:
            order_id = 1 if fields else UNSORTED_SORT_ORDER_ID
        if isinstance(order_id, bool) or not isinstance(order_id, int):
            raise ValidationError(f"sort order-id must be an int, got {order_id!r}")
        _check_int32(order_id, "sort order-id")
        if fields and order_id == UNSORTED_SORT_ORDER_ID:
            raise ValidationError("sort order id 0 is reserved for the unsorted order")
        if not fields and order_id != UNSORTED_SORT_ORDER_ID:
            raise ValidationError(f"the unsorted order must have id 0, got {order_id}")
        self._fields: tuple[SortField, ...] = tuple(fields)
        self._order_id = order_id

    @property
    def fields(self) -> tuple[SortField, ...]:
        return self._fields

    @property
    def order_id(self) -> int:
        return self._order_id

    @property
    def is_unsorted(self) -> bool:
        return not self._fields

    @property
    def is_sorted(self) -> bool:
        return bool(self._fields)

    def satisfies(self, other: SortOrder) -> bool:
        """Whether data sorted by this order is also sorted by ``other``."""
        if other.is_unsorted:
            return True
        if len(other._fields) > len(self._fields):
            return False
        return all(
            a.all_source_ids == b.all_source_ids
            and a.direction == b.direction
            and a.null_order == b.null_order
            and a.transform.satisfies_order_of(b.transform)
            for a, b in zip(self._fields, other._fields, strict=False)
        )

    def same_order(self, other: SortOrder) -> bool:
        """Same fields, ignoring the order id."""
        return self._fields == other._fields

    def validate(self, schema: Schema) -> None:
        """Checks every source column exists, is primitive, is not inside a list or map (rows
        have no single value to order by) and suits its transform."""
        for f in self._fields:
            for sid in f.all_source_ids:
                source = transform_source(schema, sid, "sort", f"sort field {f}")
                if (
                    f.source_ids is None
                    and not f.transform.is_unknown
                    and not f.transform.can_transform(source.field_type)
                ):
                    raise ValidationError(
                        f"invalid source type {source.field_type} for transform {f.transform} "
                        f"in sort field {f}"
                    )

    def to_json(self) -> dict[str, Any]:
        return {"order-id": self._order_id, "fields": [f.to_json() for f in self._fields]}

    @staticmethod
    def from_json(obj: Any) -> SortOrder:
        if not isinstance(obj, dict):
            raise ValidationError(f"a sort order must be a JSON object, got {obj!r}")
        for key in ("order-id", "fields"):
            if key not in obj:
                raise ValidationError(f"sort order is missing {key!r}: {obj!r}")
        if not isinstance(obj["fields"], list):
            raise ValidationError(f"sort order fields must be a list: {obj!r}")
        return SortOrder(*(SortField.from_json(f) for f in obj["fields"]), order_id=obj["order-id"])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SortOrder):
            return NotImplemented
        return self._order_id == other._order_id and self._fields == other._fields

    def __hash__(self) -> int:
        return hash((self._order_id, self._fields))

    def __len__(self) -> int:
        return len(self._fields)

    def __iter__(self) -> Iterator[SortField]:
        return iter(self._fields)

    def __str__(self) -> str:
        if not self._fields:
            return "[unsorted]"
        return "[\n" + "\n".join(f"  {f}" for f in self._fields) + "\n]"

    def __repr__(self) -> str:
        fields = ", ".join(repr(f) for f in self._fields)
        sep = ", " if fields else ""
        return f"SortOrder({fields}{sep}order_id={self._order_id})"


#: The unsorted order (id 0, no fields).
UNSORTED_SORT_ORDER = SortOrder(order_id=UNSORTED_SORT_ORDER_ID)
