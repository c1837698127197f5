"""Iceberg manifests and manifest lists (format versions 1-3) as Arrow record batches.

Decoding and encoding run in Rust (``icefloe._native``) with the GIL released; IO stays with the
caller: the readers take the file's bytes and the writers return bytes.

A manifest decodes to one flat :class:`pyarrow.RecordBatch` with one row per entry:

====================== ================================== =========
column                 type                               field id
====================== ================================== =========
status                 int32 (0 existing, 1 added, 2 del) 0
snapshot_id            int64 (inherited when null)        1
sequence_number        int64 (inherited, v1: 0)           3
file_sequence_number   int64 (inherited, v1: 0)           4
content                int32 (0 data, 1 pos, 2 eq; v1: 0) 134
file_path              string                             100
file_format            string                             101
partition              struct typed from the spec         102
record_count           int64                              103
file_size_in_bytes     int64                              104
column_sizes           map<int32, int64>                  108
value_counts           map<int32, int64>                  109
null_value_counts      map<int32, int64>                  110
nan_value_counts       map<int32, int64>                  137
lower_bounds           map<int32, binary>                 125
upper_bounds           map<int32, binary>                 128
key_metadata           binary                             131
split_offsets          list<int64>                        132
equality_ids           list<int32>                        135
sort_order_id          int32                              140
first_row_id           int64 (v3, inherited)              142
referenced_data_file   string (v2, v3)                    143
content_offset         int64 (v3)                         144
content_size_in_bytes  int64 (v3)                         145
====================== ================================== =========

The partition struct has one field per partition field of the manifest's own
``partition-spec`` metadata, named as in the spec and typed by the transform's result type
(identity/truncate/void: the source type; bucket/year/month/hour: int32; day: date32; unknown
transforms: the type written in the file). Every field carries its Iceberg field id in the Arrow
field metadata (``field_id``); the batch's schema metadata holds the file's key-value metadata.

A manifest list decodes to one row per ``manifest_file`` with the columns ``manifest_path``,
``manifest_length``, ``partition_spec_id``, ``content``, ``sequence_number``,
``min_sequence_number``, ``added_snapshot_id``, ``added_files_count``, ``existing_files_count``,
``deleted_files_count``, ``added_rows_count``, ``existing_rows_count``, ``deleted_rows_count``,
``partitions`` (list of ``contains_null``, ``contains_nan``, ``lower_bound``, ``upper_bound``),
``key_metadata`` and ``first_row_id``; v1 lists get content 0 and sequence numbers 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from icefloe import _native
from icefloe.exceptions import ValidationError

__all__ = [
    "ManifestEntryView",
    "ManifestFile",
    "entry_views",
    "manifest_files",
    "read_manifest",
    "read_manifest_list",
    "read_manifests",
    "write_manifest",
    "write_manifest_list",
]


def read_manifest_list(data: bytes, *, name: str = "<bytes>") -> pa.RecordBatch:
    """Decodes a manifest list; ``name`` (e.g. its path) is used in error messages."""
    return _native.read_manifest_list(_bytes(data, name), name=name)


def read_manifest(
    data: bytes,
    *,
    manifest: ManifestFile | None = None,
    snapshot_id: int | None = None,
    sequence_number: int | None = None,
    first_row_id: int | None = None,
    name: str | None = None,
    columns: Sequence[str] | None = None,
    stats_ids: Sequence[int] | None = None,
) -> pa.RecordBatch:
    """Decodes a manifest, applying inheritance from its ``manifest_file`` entry.

    Pass either ``manifest`` (the :class:`ManifestFile` it was listed as) or the inherited
    values: null snapshot ids inherit ``snapshot_id``; null sequence numbers of ADDED entries
    inherit ``sequence_number``; in v3, data files with a null ``first_row_id`` get
    ``first_row_id`` plus the record counts of the preceding such files.

    Projection (the schema of the result never changes): only the ``columns`` named are
    decoded, the others are skipped in the file and come back all null (the entry fields,
    ``content``, ``record_count`` and ``first_row_id`` are always decoded); ``stats_ids``
    keeps only the metric-map pairs (``column_sizes`` ... ``upper_bounds``) of those column
    field ids.
    """
    if manifest is not None:
        snapshot_id = manifest.added_snapshot_id if snapshot_id is None else snapshot_id
        if sequence_number is None:
            sequence_number = manifest.sequence_number
        first_row_id = manifest.first_row_id if first_row_id is None else first_row_id
        name = manifest.manifest_path if name is None else name
    return _native.read_manifest(
        _bytes(data, name or "<bytes>"),
        snapshot_id=snapshot_id,
        sequence_number=sequence_number,
        first_row_id=first_row_id,
        name=name or "<bytes>",
        columns=columns,
        stats_ids=stats_ids,
    )


def read_manifests(
    data: Sequence[bytes],
    manifests: Sequence[ManifestFile] | None = None,
    *,
    threads: int | None = None,
    columns: Sequence[str] | None = None,
    stats_ids: Sequence[int] | None = None,
    names: Sequence[str] | None = None,
) -> list[pa.RecordBatch]:
    """Decodes many manifests in parallel (GIL released), one batch each, in order.

    ``manifests`` gives the ``manifest_file`` entries to inherit from, one per manifest.
    ``threads`` bounds the worker threads (default: one per core). ``columns`` and
    ``stats_ids`` project as in :func:`read_manifest`. ``names`` (one per manifest, e.g. the
    paths; default: the ``manifest_path`` of ``manifests``, else ``<manifest N>``) name the
    files in error messages.
    """
    if isinstance(data, bytes | bytearray | memoryview | str):
        raise ValidationError("read_manifests takes a sequence of manifests' bytes")
    data = list(data)
    if not all(type(d) is bytes for d in data):  # named (and converted) only when needed
        data = [_bytes(d, f"<manifest {i}>") for i, d in enumerate(data)]
    if names is not None and len(names) != len(data):
        raise ValidationError(f"{len(names)} names for {len(data)} manifests")
    if manifests is None:
        return _native.read_manifests(
            data,
            names=None if names is None else list(names),
            threads=threads,
            columns=columns,
            stats_ids=stats_ids,
        )
    if len(manifests) != len(data):
        raise ValidationError(f"{len(manifests)} manifest_file entries for {len(data)} manifests")
    return _native.read_manifests(
        data,
        snapshot_ids=[m.added_snapshot_id for m in manifests],
        sequence_numbers=[m.sequence_number for m in manifests],
        first_row_ids=[m.first_row_id for m in manifests],
        names=[m.manifest_path for m in manifests] if names is None else list(names),
        threads=threads,
        columns=columns,
        stats_ids=stats_ids,
    )


def write_manifest(
    entries: pa.RecordBatch | pa.Table,
    *,
    format_version: int,
    schema_json: str,
    spec_json: str,
    spec_id: int,
    path: str,
    content: int = 0,
    snapshot_id: int | None = None,
    schema_id: int | None = None,
    codec: str = "deflate",
    level: int | None = None,
) -> tuple[bytes, pa.RecordBatch]:
    """Encodes entries (laid out as :func:`read_manifest` returns them) as a manifest.

    Returns the file's bytes and a one-row manifest-list batch describing it (file and row
    counts, partition summaries; ``manifest_path`` is ``path``). ``codec`` is an Avro codec or
    an Iceberg ``write.manifest.compression-codec`` value (gzip, zstd, snappy, uncompressed);
    ``level`` is the ``write.manifest.compression-level`` (deflate: libdeflate's 0-12, default
    1, which compresses manifests within a few percent of zlib's level 6 several times faster;
    zstd: default 1).
    """
    batch = _one_batch(entries)
    return _native.write_manifest(
        batch,
        format_version=format_version,
        schema_json=schema_json,
        spec_json=spec_json,
        spec_id=spec_id,
        path=path,
        content=content,
        snapshot_id=snapshot_id,
        schema_id=schema_id,
        codec=codec,
        level=level,
    )


def write_manifest_list(
    manifests: pa.RecordBatch | pa.Table,
    *,
    format_version: int,
    snapshot_id: int,
    sequence_number: int,
    parent_snapshot_id: int | None = None,
    first_row_id: int | None = None,
    codec: str = "deflate",
    level: int | None = None,
) -> tuple[bytes, int | None]:
    """Encodes manifest_file rows (as :func:`read_manifest_list` returns them).

    Null sequence numbers are assigned ``sequence_number`` (v2+); in v3, data manifests with a
    null ``first_row_id`` are assigned consecutive row ranges from ``first_row_id``. Returns the
    bytes and the next unassigned row id.
    """
    return _native.write_manifest_list(
        _one_batch(manifests),
        format_version=format_version,
        snapshot_id=snapshot_id,
        sequence_number=sequence_number,
        parent_snapshot_id=parent_snapshot_id,
        first_row_id=first_row_id,
        codec=codec,
        level=level,
    )


def _bytes(data: object, name: str) -> bytes:
    """``data`` as the bytes of an Avro file, or :class:`ValidationError` (a path, text or
    ``None`` is not a file's contents)."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    raise ValidationError(
        f"{name}: expected the file's bytes, got {type(data).__name__} (read the file first, "
        "e.g. with table.io.new_input(path).read())"
    )


def _one_batch(data: pa.RecordBatch | pa.Table) -> pa.RecordBatch:
    if isinstance(data, pa.Table):
        return data.combine_chunks().to_batches()[0] if data.num_rows else _empty(data.schema)
    return data


def _empty(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=schema)


class _Columns:
    """Python lists of a batch's columns, converted on first use and shared by all rows."""

    __slots__ = ("batch", "cache")

    def __init__(self, batch: pa.RecordBatch) -> None:
        self.batch = batch
        self.cache: dict[str, list[Any]] = {}

    def get(self, name: str, row: int) -> Any:
        col = self.cache.get(name)
        if col is None:
            idx = self.batch.schema.get_field_index(name)
            if idx < 0:
                return None
            arr = self.batch.column(idx)
            col = arr.to_pylist()
            if pa.types.is_map(arr.type):
                col = [None if v is None else dict(v) for v in col]
            self.cache[name] = col
        return col[row]


def _field(name: str, doc: str) -> Any:
    def get(self: _RowView) -> Any:
        return self._cols.get(name, self._row)

    # the getter carries the name and the docstring too (documentation tools read either)
    get.__name__ = name
    get.__doc__ = doc
    return property(get, doc=doc)


class _RowView:
    __slots__ = ("_cols", "_row")
    _names: tuple[str, ...] = ()

    def __init__(self, cols: _Columns, row: int) -> None:
        self._cols = cols
        self._row = row

    def to_dict(self) -> dict[str, Any]:
        """All fields of this row as a dict."""
        return {n: self._cols.get(n, self._row) for n in self._names}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_dict()!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, _RowView)
            and type(other) is type(self)
            and self.to_dict() == other.to_dict()
        )

    __hash__ = None  # type: ignore[assignment]


class ManifestFile(_RowView):
    """A ``manifest_file`` row of a decoded manifest list (a view; values converted lazily)."""

    __slots__ = ()
    _names = (
        "manifest_path",
        "manifest_length",
        "partition_spec_id",
        "content",
        "sequence_number",
        "min_sequence_number",
        "added_snapshot_id",
        "added_files_count",
        "existing_files_count",
        "deleted_files_count",
        "added_rows_count",
        "existing_rows_count",
        "deleted_rows_count",
        "partitions",
        "key_metadata",
        "first_row_id",
    )
    manifest_path = _field("manifest_path", "Location of the manifest file.")
    manifest_length = _field("manifest_length", "Length of the manifest file in bytes.")
    partition_spec_id = _field("partition_spec_id", "Id of the spec the manifest was written with.")
    content = _field("content", "0 data, 1 deletes.")
    sequence_number = _field("sequence_number", "Sequence number when the manifest was added.")
    min_sequence_number = _field("min_sequence_number", "Lowest data sequence number inside.")
    added_snapshot_id = _field("added_snapshot_id", "Snapshot that added the manifest.")
    added_files_count = _field("added_files_count", "Entries with status ADDED.")
    existing_files_count = _field("existing_files_count", "Entries with status EXISTING.")
    deleted_files_count = _field("deleted_files_count", "Entries with status DELETED.")
    added_rows_count = _field("added_rows_count", "Rows in ADDED files.")
    existing_rows_count = _field("existing_rows_count", "Rows in EXISTING files.")
    deleted_rows_count = _field("deleted_rows_count", "Rows in DELETED files.")
    partitions = _field("partitions", "Field summaries, one dict per partition field.")
    key_metadata = _field("key_metadata", "Encryption key metadata.")
    first_row_id = _field("first_row_id", "v3: first row id of the manifest's data files.")


class ManifestEntryView(_RowView):
    """One manifest entry with its ``data_file`` fields (a view; values converted lazily)."""

    __slots__ = ()
    _names = (
        "status",
        "snapshot_id",
        "sequence_number",
        "file_sequence_number",
        "content",
        "file_path",
        "file_format",
        "partition",
        "record_count",
        "file_size_in_bytes",
        "column_sizes",
        "value_counts",
        "null_value_counts",
        "nan_value_counts",
        "lower_bounds",
        "upper_bounds",
        "key_metadata",
        "split_offsets",
        "equality_ids",
        "sort_order_id",
        "first_row_id",
        "referenced_data_file",
        "content_offset",
        "content_size_in_bytes",
    )
    status = _field("status", "0 existing, 1 added, 2 deleted.")
    snapshot_id = _field("snapshot_id", "Snapshot that added or deleted the file.")
    sequence_number = _field("sequence_number", "Data sequence number.")
    file_sequence_number = _field("file_sequence_number", "File sequence number.")
    content = _field("content", "0 data, 1 position deletes, 2 equality deletes.")
    file_path = _field("file_path", "Location of the file.")
    file_format = _field("file_format", "File format name (PARQUET, AVRO, ORC, PUFFIN).")
    partition = _field("partition", "Partition tuple as a dict.")
    record_count = _field("record_count", "Number of records.")
    file_size_in_bytes = _field("file_size_in_bytes", "File size in bytes.")
    column_sizes = _field("column_sizes", "Field id to bytes on disk.")
    value_counts = _field("value_counts", "Field id to value count.")
    null_value_counts = _field("null_value_counts", "Field id to null count.")
    nan_value_counts = _field("nan_value_counts", "Field id to NaN count.")
    lower_bounds = _field("lower_bounds", "Field id to lower bound (binary single value).")
    upper_bounds = _field("upper_bounds", "Field id to upper bound (binary single value).")
    key_metadata = _field("key_metadata", "Encryption key metadata.")
    split_offsets = _field("split_offsets", "Split offsets.")
    equality_ids = _field("equality_ids", "Equality delete field ids.")
    sort_order_id = _field("sort_order_id", "Sort order id.")
    first_row_id = _field("first_row_id", "v3: first row id of the file.")
    referenced_data_file = _field("referenced_data_file", "v2, v3: data file a delete applies to.")
    content_offset = _field("content_offset", "v3: offset of a deletion vector blob.")
    content_size_in_bytes = _field("content_size_in_bytes", "v3: size of a deletion vector blob.")


def manifest_files(batch: pa.RecordBatch) -> list[ManifestFile]:
    """Views over the rows of a decoded manifest list."""
    cols = _Columns(batch)
    return [ManifestFile(cols, i) for i in range(batch.num_rows)]


def entry_views(batch: pa.RecordBatch) -> list[ManifestEntryView]:
    """Views over the entries of a decoded manifest."""
    cols = _Columns(batch)
    return [ManifestEntryView(cols, i) for i in range(batch.num_rows)]
