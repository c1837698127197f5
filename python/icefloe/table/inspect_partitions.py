"""Partition tuples of the metadata tables across partition specs: a manifest's ``partition``
struct cast to the unified type that has a field per partition field id of any spec
(:func:`_unify_partition`, also used by :mod:`icefloe.table.partition_statistics`), and the rows
of :meth:`InspectTable.partitions <icefloe.table.inspect.InspectTable.partitions>`, from a
partition statistics file or grouped from the manifests, merged into one row per unified tuple
as Java's ``PartitionsTable`` keys them (:func:`_merge_specs`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_fill import from_group_key, group_keys
from icefloe.exceptions import ValidationError

#: Timestamps as the metadata tables show them.
_TS = pa.timestamp("ms", tz="UTC")


def _stats_to_partitions(r: pa.Table) -> pa.Table:
    """Partition statistics rows (one per spec and partition, emptied ones included) as
    :meth:`InspectTable.partitions` rows."""
    return pa.table(
        {
            "partition": r["partition"],
            "spec_id": r["spec_id"],
            "record_count": r["data_record_count"],
            "file_count": r["data_file_count"],
            "total_data_file_size_in_bytes": r["total_data_file_size_in_bytes"],
            "position_delete_record_count": r["position_delete_record_count"],
            "position_delete_file_count": pc.add(
                r["position_delete_file_count"], r["dv_count"]
            ).cast(pa.int32()),
            "equality_delete_record_count": r["equality_delete_record_count"],
            "equality_delete_file_count": r["equality_delete_file_count"],
            "last_updated_at": r["last_updated_at"].cast(_TS),
            "last_updated_snapshot_id": r["last_updated_snapshot_id"],
        }
    )


def _file_total(rows: pa.Table) -> pa.ChunkedArray:
    """The data and delete files of each :meth:`InspectTable.partitions` row."""
    return pc.add(
        pc.add(rows["file_count"], rows["position_delete_file_count"]),
        rows["equality_delete_file_count"],
    )


def _partitions_of_groups(g: pa.Table, keys: list[str], ptype: pa.StructType) -> pa.Array:
    """The ``partition`` struct column of grouped rows whose key columns ``keys`` hold each
    field of ``ptype`` as its group key."""
    if not keys:
        return pa.array([{}] * g.num_rows, pa.struct([]))
    return pa.StructArray.from_arrays(
        [
            from_group_key(g.column(k), f.type).combine_chunks()
            for k, f in zip(keys, ptype, strict=True)
        ],
        fields=list(ptype),
    )


def _merge_specs(rows: pa.Table, projected: dict[int, int]) -> pa.Table:
    """:meth:`InspectTable.partitions` rows of one spec each as one row per partition: the same
    unified tuple from specs having as many of its fields (``projected``, by spec id). Counts
    add up; ``spec_id`` and the last update are the newest row's (the latest
    ``last_updated_at``, then one with files, then the highest spec id)."""
    ptype = rows.schema.field("partition").type
    keys = [f"__p{i}" for i in range(ptype.num_fields)]
    counts = [c for c in rows.column_names if c.endswith("_count") or c.startswith("total_")]
    found = pc.index_in(rows["spec_id"], value_set=pa.array(list(projected), pa.int32()))
    newest = rows["last_updated_at"].cast(pa.int64())
    work = pa.table(
        {
            # extension-typed values (uuid, geometry) group by their storage (see group_key)
            **group_keys(rows["partition"], keys),
            "__fields": pc.fill_null(pc.take(pa.array(list(projected.values())), found), 0),
            "__at": pc.fill_null(newest, np.iinfo(np.int64).min),
            "__live": pc.greater(_file_total(rows), 0),
            **{c: rows[c] for c in ["spec_id", *counts, "last_updated_snapshot_id"]},
            "last_updated_at": newest,
        }
    )
    work = work.sort_by([(c, "ascending") for c in ("__at", "__live", "spec_id")])
    g = work.group_by([*keys, "__fields"], use_threads=False).aggregate(
        [
            *((c, "sum") for c in counts),
            # "last" skips the nulls of rows without a (kept) last update
            *((c, "last") for c in ("spec_id", "last_updated_at", "last_updated_snapshot_id")),
        ]
    )
    partition = _partitions_of_groups(g, keys, ptype)
    return pa.table(
        {
            "partition": partition,
            "spec_id": g.column("spec_id_last"),
            **{c: g.column(f"{c}_sum").cast(rows.schema.field(c).type) for c in counts},
            "last_updated_at": g.column("last_updated_at_last").cast(_TS),
            "last_updated_snapshot_id": g.column("last_updated_snapshot_id_last"),
        }
    )


def _unify_partition(batch: pa.RecordBatch, unified: pa.StructType) -> pa.Table:
    """``batch`` as a table whose ``partition`` column has the ``unified`` struct type."""
    t = pa.Table.from_batches([batch])
    if "partition" not in t.column_names:
        return t
    part = t.column("partition").combine_chunks()
    by_id: dict[int, int] = {}
    for i, f in enumerate(part.type):
        meta = f.metadata or {}
        raw = meta.get(b"PARQUET:field_id") or meta.get(b"field_id")
        if raw is not None:
            by_id[int(raw)] = i
    children = []
    for f in unified:
        fid = int((f.metadata or {})[b"PARQUET:field_id"])
        idx = by_id.get(fid)
        if idx is None:
            children.append(pa.nulls(len(part), f.type))
        else:
            children.append(_as_type(part.field(idx), f))
    new = (
        pa.StructArray.from_arrays(children, fields=list(unified))
        if len(unified)
        else (pa.array([{}] * len(part), pa.struct([])))
    )
    idx = t.column_names.index("partition")
    return t.set_column(idx, pa.field("partition", new.type), new)


def _as_type(child: pa.Array, field: pa.Field) -> pa.Array:
    """A manifest's partition values as the unified ``field``'s type; all nulls (a ``void``
    field) whatever their type."""
    if child.type == field.type:
        return child
    if child.null_count == len(child):
        return pa.nulls(len(child), field.type)
    try:
        return pc.cast(child, field.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise ValidationError(
            f"cannot show partition field {field.name!r}: a manifest holds {child.type} "
            f"values where the table's specs give {field.type} ({e})"
        ) from None
