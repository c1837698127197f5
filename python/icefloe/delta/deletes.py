"""Delete-file manifest entries for Delta deletion vectors: Puffin ``deletion-vector-v1`` blobs
that re-wrap Delta's bitmaps (``dv_mode="puffin"``) or references into Delta's own DV files
(``dv_mode="reference"``, as Delta UniForm writes them)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.delta.dv import DeltaDV, dv_file_path, read_dv_blobs
from icefloe.delta.files import absolute_paths
from icefloe.exceptions import DeltaLogError, UnsupportedFeatureError
from icefloe.io import FileIO
from icefloe.metadata import TableMetadata
from icefloe.puffin import DELETION_VECTOR_V1, ROW_POSITION_FIELD_ID, PuffinWriter
from icefloe.table_paths import metadata_location as metadata_dir_of
from icefloe.write.files import manifest_arrow_schema

DV_MODES = ("puffin", "reference")


def dv_descriptors(root: str, files: pa.Table) -> list[DeltaDV]:
    """The deletion vectors of ``files`` (one per file that has one)."""
    with_dv = files.filter(pc.is_valid(files.column("dv")))
    if with_dv.num_rows == 0:
        return []
    paths = absolute_paths(root, with_dv.column("path").combine_chunks()).to_pylist()
    out = []
    for path, dv in zip(paths, with_dv.column("dv").to_pylist(), strict=True):  # one per DV
        _check_descriptor(path, dv)
        out.append(
            DeltaDV(
                path,
                dv["storageType"],
                dv["pathOrInlineDv"],
                dv.get("offset"),
                int(dv["sizeInBytes"]),
                int(dv["cardinality"]),
            )
        )
    return out


def _check_descriptor(data_file: str, dv: dict[str, object]) -> None:
    """Refuse (:class:`DeltaLogError`) a DV descriptor the protocol does not allow: JSON
    commits are checked as they are read, checkpoints (Parquet) only here."""
    problem = None
    for key in ("storageType", "pathOrInlineDv"):
        if not isinstance(dv.get(key), str):
            problem = f"{key} is {dv.get(key)!r}"
    for key in ("offset", "sizeInBytes", "cardinality"):
        v = dv.get(key)
        if (v is None and key != "offset") or (isinstance(v, int) and v < 0):
            problem = f"{key} is {v!r}"
    if problem is not None:
        raise DeltaLogError(f"malformed Delta deletion vector descriptor of {data_file}: {problem}")


def dv_entries(
    io: FileIO,
    root: str,
    metadata: TableMetadata,
    files: pa.Table,
    partition: pa.Array,
    dv_mode: str,
    tag: str,
) -> tuple[pa.RecordBatch | None, list[str]]:
    """Delete-file entries for the DVs of ``files`` (whose data-file partition tuples are
    ``partition``) and the files written for them."""
    dvs = dv_descriptors(root, files)
    if not dvs:
        return None, []
    has_dv = pc.is_valid(files.column("dv")).combine_chunks()
    part = partition.filter(has_dv)
    target = manifest_arrow_schema(3, metadata.current_schema(), metadata.spec())
    n = len(dvs)
    written: list[str] = []
    if dv_mode == "reference":
        inline = [d.data_file for d in dvs if d.inline]
        if inline:
            raise UnsupportedFeatureError(
                f"{inline[0]} has an inline deletion vector, which dv_mode='reference' cannot "
                "point to; use dv_mode='puffin'"
            )
        file_sizes: dict[str, int] = {}
        read_dv_blobs(io, root, dvs, file_sizes)  # checks every DV
        paths = [dv_file_path(root, d.storage_type, d.path_or_inline) for d in dvs]
        offsets = [d.offset or 0 for d in dvs]
        lengths = [d.size_in_bytes + 8 for d in dvs]
        sizes = [file_sizes[p] for p in paths]  # the whole file's, however many DVs it holds
    else:
        blobs = read_dv_blobs(io, root, dvs)
        w = PuffinWriter()
        metas = [
            w.add_blob(
                blob,
                DELETION_VECTOR_V1,
                [ROW_POSITION_FIELD_ID],
                properties={"referenced-data-file": d.data_file, "cardinality": str(d.cardinality)},
            )
            for blob, d in zip(blobs, dvs, strict=True)
        ]
        puffin = w.finish({"created-by": "icefloe delta converter"})
        loc = metadata_dir_of(metadata.location, metadata.properties)
        path = f"{loc}/dv-{tag}-{uuid.uuid4()}.puffin"
        io.new_output(path).write(puffin.data)
        written.append(path)
        paths = [path] * n
        offsets = [m.offset for m in metas]
        lengths = [m.length for m in metas]
        sizes = [len(puffin.data)] * n
    cols: dict[str, pa.Array] = {f.name: pa.nulls(n, f.type) for f in target}
    cols.update(
        status=pa.repeat(pa.scalar(1, pa.int32()), n),
        content=pa.repeat(pa.scalar(1, pa.int32()), n),
        file_path=pa.array(paths, pa.string()),
        file_format=pa.repeat(pa.scalar("PUFFIN"), n),
        partition=part,
        record_count=pa.array([d.cardinality for d in dvs], pa.int64()),
        file_size_in_bytes=pa.array(sizes, pa.int64()),
        referenced_data_file=pa.array([d.data_file for d in dvs], pa.string()),
        content_offset=pa.array(offsets, pa.int64()),
        content_size_in_bytes=pa.array(lengths, pa.int64()),
    )
    arrays = [
        cols[f.name] if cols[f.name].type == f.type else cols[f.name].cast(f.type) for f in target
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=target), written


def delete_entries_of(wanted: pa.Array) -> Callable[[pa.RecordBatch], pa.Array]:
    """A manifest-entry predicate: delete files that reference a data file in ``wanted``."""

    def predicate(batch: pa.RecordBatch) -> pa.Array:
        is_delete = pc.equal(batch.column("content"), 1)
        refs = pc.is_in(batch.column("referenced_data_file"), value_set=wanted)
        return pc.and_(is_delete, pc.fill_null(refs, False))

    return predicate
