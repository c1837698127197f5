"""Partition spec evolution and sort order replacement.

:class:`UpdateSpec` follows the Java reference's ``BaseUpdatePartitionSpec``:

* ``add_field(source, transform, name=None)``: the default name is the reference's
  (``id``, ``id_bucket_16``, ``name_trunc_4``, ``ts_day``, ...). From v2 a field equal to one of
  any earlier spec (same source and transform, and same name when one is given) gets that field's
  id back, so old and new files share partition values; otherwise ids continue after the table's
  ``last-partition-id``. A second time-based field on one source (``day`` next to ``month``) and
  duplicate names are refused.
* ``remove_field(name)``: v2+ drops the field; v1 keeps it with the ``void`` transform (v1 field
  ids are positional), and a later field that reuses its name renames the void one to
  ``<name>_<field id>``.
* ``rename_field(name, new_name)``. A field may not take a column's name, unless it is an
  identity field of that column (or a v1 void one).

:class:`ReplaceSortOrder` builds a whole new sort order (``asc``/``desc`` with a transform and
null order). Both commit ``add-*`` + ``set-default-*`` updates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from icefloe.exceptions import ValidationError
from icefloe.metadata import AddPartitionSpec, AddSortOrder, SetDefaultSortOrder, SetDefaultSpec
from icefloe.partitioning import PartitionField, PartitionSpec
from icefloe.sorting import NullOrder, SortDirection, SortField, SortOrder
from icefloe.table.pending import PendingUpdate
from icefloe.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
    parse_transform,
)

if TYPE_CHECKING:
    from icefloe.table.table import Transaction

__all__ = ["ReplaceSortOrder", "UpdateSpec", "default_partition_name"]

_TIME = (YearTransform, MonthTransform, DayTransform, HourTransform)


def _transform(t: Transform | str) -> Transform:
    if isinstance(t, Transform):
        return t
    tr = parse_transform(t)
    if tr.is_unknown:
        raise ValidationError(f"unknown transform {t!r}")
    return tr


def default_partition_name(source_name: str, transform: Transform) -> str:
    """The reference's default partition field name for ``transform`` of ``source_name``."""
    if isinstance(transform, IdentityTransform):
        return source_name
    if isinstance(transform, BucketTransform):
        return f"{source_name}_bucket_{transform.num_buckets}"
    if isinstance(transform, TruncateTransform):
        return f"{source_name}_trunc_{transform.width}"
    if isinstance(transform, VoidTransform):
        return f"{source_name}_null"
    for cls, suffix in (
        (YearTransform, "year"),
        (MonthTransform, "month"),
        (DayTransform, "day"),
        (HourTransform, "hour"),
    ):
        if isinstance(transform, cls):
            return f"{source_name}_{suffix}"
    return f"{source_name}_{str(transform).replace('[', '_').replace(']', '')}"


def _dedup_key(source_id: int, transform: Transform) -> tuple[int, str]:
    """Fields with equal keys may not both be in a spec (time transforms share one key)."""
    return source_id, "time" if isinstance(transform, _TIME) else str(transform)


class UpdateSpec(PendingUpdate):
    """Pending changes to the default partition spec (see the module docstring)."""

    def __init__(
        self, transaction: Transaction, *, case_sensitive: bool = True, autocommit: bool = False
    ) -> None:
        self._tx = transaction
        self._autocommit = autocommit
        self._case_sensitive = case_sensitive
        meta = transaction.metadata
        self._meta = meta
        self._format_version = meta.format_version
        self._schema = meta.current_schema()
        self._spec = meta.spec()
        self._last_id = max(meta.last_partition_id, 999)
        self._by_name = {f.name: f for f in self._spec.fields}
        self._by_key = {_dedup_key(f.source_id, f.transform): f for f in self._spec.fields}
        self._adds: list[PartitionField] = []
        self._added_keys: dict[tuple[int, str], PartitionField] = {}
        self._deletes: set[int] = set()
        self._renames: dict[str, str] = {}
        self._committed = False

    def _source_id(self, source: str) -> int:
        fid = self._schema.find_field_id(source, self._case_sensitive)
        if fid is None:
            raise ValidationError(f"cannot find partition source column {source!r}")
        return fid

    def add_field(
        self, source: str, transform: Transform | str = "identity", name: str | None = None
    ) -> UpdateSpec:
        """Partition by ``transform(source)``; ``name`` defaults to the reference's name."""
        tr = _transform(transform)
        sid = self._source_id(source)
        src = self._schema.find_field(sid)
        if not tr.can_transform(src.field_type):
            raise ValidationError(
                f"cannot partition by {tr}({source}): not applicable to type {src.field_type}"
            )
        key = _dedup_key(sid, tr)
        existing = self._by_key.get(key)
        if existing is not None and existing.field_id in self._deletes and existing.transform == tr:
            # delete + add of the same field: keep it (renamed if asked)
            if name is not None and name != existing.name:
                self._check_column_name(name, existing)
                self._renames[existing.name] = name
            self._deletes.discard(existing.field_id)
            return self
        if existing is not None and existing.field_id not in self._deletes:
            raise ValidationError(
                f"cannot add partition field {tr}({source}): conflicts with existing field "
                f"{existing.name!r} ({existing.transform})"
            )
        if key in self._added_keys:
            raise ValidationError(
                f"cannot add partition field {tr}({source}): redundant with "
                f"{self._added_keys[key].name!r} added in the same update"
            )
        field = self._recycle_or_create(sid, tr, name)
        new_name = field.name
        clash = self._by_name.get(new_name)
        if clash is not None:
            if clash.field_id in self._deletes or clash.transform.is_void:
                self._renames[clash.name] = f"{clash.name}_{clash.field_id}"
            else:
                raise ValidationError(f"cannot add duplicate partition field name {new_name!r}")
        if any(a.name == new_name for a in self._adds) or new_name in self._renames.values():
            raise ValidationError(f"cannot add duplicate partition field name {new_name!r}")
        self._check_column_name(new_name, field)
        self._adds.append(field)
        self._added_keys[key] = field
        return self

    def _check_column_name(self, name: str, field: PartitionField) -> None:
        """A partition field may not take another column's name; its own source column's name
        it may take, whatever its transform (``truncate[2](cat) AS cat``), as Iceberg Java's
        spec updates allow (``PartitionSpec.Builder.add`` checks the name against the source
        id, and not at all once the source column is dropped)."""
        fid = self._schema.find_field_id(name)
        if fid is None or fid == field.source_id:
            return
        if self._schema.find_column_name(field.source_id) is not None:
            raise ValidationError(
                f"cannot name partition field {name!r}: it is the name of another column"
            )

    def _recycle_or_create(self, sid: int, tr: Transform, name: str | None) -> PartitionField:
        if self._format_version >= 2:
            for spec in self._meta.partition_specs:
                for f in spec.fields:
                    taken = any(a.field_id == f.field_id for a in self._adds)
                    same = f.source_id == sid and f.transform == tr
                    if same and not taken and (name is None or f.name == name):
                        return f
        self._last_id += 1
        src_name = self._schema.find_column_name(sid) or str(sid)
        return PartitionField(
            sid,
            self._last_id,
            tr,
            name if name is not None else default_partition_name(src_name, tr),
        )

    def _existing(self, name: str) -> PartitionField:
        f = self._by_name.get(name)
        if f is None:
            raise ValidationError(
                f"cannot find partition field {name!r} in spec {self._spec.spec_id}"
            )
        return f

    def remove_field(self, name: str) -> UpdateSpec:
        """Stop partitioning by the field called ``name``."""
        if not isinstance(name, str):
            raise ValidationError(f"a partition field is named by a string, got {name!r}")
        if any(a.name == name for a in self._adds):
            raise ValidationError(f"cannot delete newly added partition field {name!r}")
        f = self._existing(name)
        if name in self._renames:
            raise ValidationError(f"cannot rename and delete partition field {name!r}")
        self._deletes.add(f.field_id)
        return self

    def rename_field(self, name: str, new_name: str) -> UpdateSpec:
        """Rename a partition field."""
        f = self._existing(name)
        if f.field_id in self._deletes:
            raise ValidationError(f"cannot delete and rename partition field {name!r}")
        other = self._by_name.get(new_name)
        if (
            other is not None
            and other.field_id != f.field_id
            and other.field_id not in self._deletes
        ):
            raise ValidationError(f"cannot rename {name!r} to existing name {new_name!r}")
        self._check_column_name(new_name, f)
        self._renames[name] = new_name
        return self

    def apply(self) -> PartitionSpec:
        """The new spec (not committed)."""
        out: list[PartitionField] = []
        for f in self._spec.fields:
            new_name = self._renames.get(f.name, f.name)
            if f.field_id not in self._deletes:
                out.append(
                    PartitionField(f.source_id, f.field_id, f.transform, new_name, f.source_ids)
                )
            elif self._format_version < 2:
                out.append(PartitionField(f.source_id, f.field_id, VoidTransform(), new_name))
        out.extend(self._adds)
        spec = PartitionSpec(*out, spec_id=self._spec.spec_id)
        spec.validate(self._schema)
        return spec

    def commit(self) -> None:
        """Apply the change to the transaction (and commit it, unless part of a larger one)."""
        if self._committed:
            raise ValidationError("this spec update was already committed")
        self._committed = True
        spec = self.apply()
        if tuple(spec.fields) != tuple(self._spec.fields):
            self._tx.apply([AddPartitionSpec(spec), SetDefaultSpec(-1)])
        if self._autocommit:
            self._tx.commit_transaction()


class ReplaceSortOrder(PendingUpdate):
    """A new default sort order, built field by field: ``asc("id").desc("ts", "day")``."""

    def __init__(
        self, transaction: Transaction, *, case_sensitive: bool = True, autocommit: bool = False
    ) -> None:
        self._tx = transaction
        self._autocommit = autocommit
        self._case_sensitive = case_sensitive
        self._schema = transaction.metadata.current_schema()
        self._fields: list[SortField] = []
        self._committed = False

    def _add(
        self,
        source: str,
        transform: Transform | str,
        direction: SortDirection,
        null_order: NullOrder | str | None,
    ) -> ReplaceSortOrder:
        if isinstance(null_order, str):  # "nulls-first" / "nulls-last", as the spec spells them
            null_order = NullOrder.from_json(null_order)
        fid = self._schema.find_field_id(source, self._case_sensitive)
        if fid is None:
            raise ValidationError(f"cannot sort by unknown column {source!r}")
        tr = _transform(transform)
        ftype = self._schema.find_type(fid)
        if not tr.can_transform(ftype):
            raise ValidationError(f"cannot sort by {tr}({source}): not applicable to {ftype}")
        field = SortField(fid, tr, direction, null_order)
        SortOrder(field).validate(self._schema)  # refused at once (e.g. inside a list or map)
        self._fields.append(field)
        return self

    def asc(
        self,
        source: str,
        transform: Transform | str = "identity",
        null_order: NullOrder | str | None = None,
    ) -> ReplaceSortOrder:
        """Sort ascending (nulls first unless told otherwise: ``null_order`` a
        :class:`~icefloe.sorting.NullOrder` or ``"nulls-first"``/``"nulls-last"``)."""
        return self._add(source, transform, SortDirection.ASC, null_order)

    def desc(
        self,
        source: str,
        transform: Transform | str = "identity",
        null_order: NullOrder | str | None = None,
    ) -> ReplaceSortOrder:
        """Sort descending (nulls last unless told otherwise; ``null_order`` as for
        :meth:`asc`)."""
        return self._add(source, transform, SortDirection.DESC, null_order)

    def apply(self) -> SortOrder:
        """The new order (an empty builder gives the unsorted order)."""
        order = SortOrder(*self._fields, order_id=1 if self._fields else 0)
        order.validate(self._schema)
        return order

    def commit(self) -> None:
        """Apply the change to the transaction (and commit it, unless part of a larger one)."""
        if self._committed:
            raise ValidationError("this sort order replacement was already committed")
        self._committed = True
        self._tx.apply([AddSortOrder(self.apply()), SetDefaultSortOrder(-1)])
        if self._autocommit:
            self._tx.commit_transaction()
