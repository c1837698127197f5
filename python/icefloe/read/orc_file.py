"""ORC data and delete files, read with pyarrow's ORC reader.

Iceberg's ORC mapping keeps each field id in the ``iceberg.id`` attribute of the ORC type
(``iceberg.required``, ``iceberg.long-type`` and others beside it), which pyarrow gives as Arrow
field metadata. :class:`OrcFile` gives the file's Arrow schema, and its batches, with the ids
also under ``PARQUET:field_id``: the rest of the reader (projection by field id, name mapping,
deletes, metadata columns) then works on ORC files as it does on Parquet ones. The columns are
relabelled, not copied (a zero-copy view of each).

An ORC file is read stripe by stripe: a stripe's top-level columns are decoded at once and
handed on in batches of at most ``batch_size`` rows, so a read holds one stripe. Stripes are
not skipped by statistics (the manifest's file-level bounds still prune whole files), and the
residual filter is applied to the rows as for Parquet.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.orc as orc

from icefloe.arrow_schema import FIELD_ID_KEY
from icefloe.exceptions import CorruptFileError, IcebergError, UnsupportedFeatureError
from icefloe.io import FileIO
from icefloe.read.parquet_file import DECODE_ERRORS, open_file

__all__ = ["ORC_FIELD_ID_KEY", "OrcFile", "open_orc", "orc_error", "with_field_ids"]

#: The ORC type attribute that holds an Iceberg field id.
ORC_FIELD_ID_KEY = b"iceberg.id"


def _field(f: pa.Field) -> pa.Field:
    meta = dict(f.metadata or {})
    if ORC_FIELD_ID_KEY in meta:
        meta[FIELD_ID_KEY] = meta[ORC_FIELD_ID_KEY]
    return pa.field(f.name, with_field_ids(f.type), f.nullable, meta or None)


def with_field_ids(t: pa.DataType) -> pa.DataType:
    """``t`` with every nested field's ``iceberg.id`` also set as ``PARQUET:field_id``."""
    if pa.types.is_struct(t):
        return pa.struct([_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(_field(t.key_field), _field(t.item_field), t.keys_sorted)
    if pa.types.is_large_list(t):
        return pa.large_list(_field(t.value_field))
    if pa.types.is_list(t):
        return pa.list_(_field(t.value_field))
    return t


def orc_error(path: str, e: BaseException) -> IcebergError:
    """``e`` raised while decoding the ORC file ``path`` as the typed error naming it."""
    if "out of range for nanosecond resolution" in str(e):
        return UnsupportedFeatureError(
            f"cannot read ORC file {path}: it holds a timestamp outside 1677-2262, which "
            f"pyarrow's ORC reader cannot give (it reads ORC timestamps as nanoseconds): {e}"
        )
    return CorruptFileError(f"cannot read ORC file {path}: {type(e).__name__}: {e}")


class OrcFile:
    """One ORC file opened for reading, its schema labelled with field ids."""

    def __init__(self, path: str, source: pa.NativeFile) -> None:
        self.path = path
        try:
            self._file = orc.ORCFile(source)
            self.num_rows: int = self._file.nrows
            self.num_stripes: int = self._file.nstripes
            raw = self._file.schema
            # names and attributes are decoded here (a damaged one is not UTF-8)
            self.schema = pa.schema([_field(f) for f in raw], metadata=raw.metadata)
        except DECODE_ERRORS as e:
            raise orc_error(path, e) from e

    def batches(self, columns: list[str], batch_size: int) -> Iterator[tuple[pa.RecordBatch, int]]:
        """Batches of the top-level ``columns`` (every row, file order) with the file position
        of their first row; the file's row count is checked at the end."""
        wanted = columns or self.schema.names[:1]  # a count still needs a column's length
        schema = pa.schema([self.schema.field(name) for name in wanted])
        base = 0
        for i in range(self.num_stripes):
            try:
                stripe = self._file.read_stripe(i, columns=wanted)
            except DECODE_ERRORS as e:
                raise orc_error(self.path, e) from e
            # the stripe's columns come in the file's order, whatever order was asked for
            arrays = [
                stripe.column(name).view(schema.field(j).type) for j, name in enumerate(wanted)
            ]
            stripe = pa.RecordBatch.from_arrays(arrays, schema=schema)
            if not columns:
                stripe = stripe.select([])
            for start in range(0, stripe.num_rows, batch_size):
                yield stripe.slice(start, batch_size), base + start
            base += stripe.num_rows
        if base != self.num_rows:
            raise CorruptFileError(
                f"cannot read data file {self.path}: its stripes gave {base} rows, "
                f"the file says {self.num_rows}"
            )

    def read(self, columns: list[str]) -> pa.Table:
        """The whole of ``columns`` (delete files)."""
        batches = [b for b, _ in self.batches(columns, 1 << 20)]
        schema = pa.schema([self.schema.field(name) for name in columns])
        return pa.Table.from_batches(batches, schema=schema)


def open_orc(
    io: FileIO, path: str, size: int | None = None, handle: pa.NativeFile | None = None
) -> OrcFile:
    """Opens the ORC file at ``path`` (``handle``: already open; ``size`` from the manifest
    saves object stores a request)."""
    return OrcFile(path, handle if handle is not None else open_file(io, path, size))
