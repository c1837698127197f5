# Hand-written stub of the Rust extension; kept honest by `python -m mypy.stubtest icefloe._native`.

from collections.abc import Iterable, Sequence
from typing import Any, final

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

from icefloe.expressions.base import BooleanExpression
from icefloe.scan.tasks import DeleteFileRef

# pyarrow ships no type information: arrays are typed as Any (pyarrow.Array at run time).
_Array = Any
_Physical = bool | int | float | str | bytes
_JsonScalar = bool | int | float | str

__all__ = [
    "DataFileRef",
    "DecodedManifest",
    "EqualityDeleteSet",
    "FileScanTask",
    "ParquetFileStream",
    "PositionBitmap",
    "PositionDeleteIndex",
    "PuffinWriter",
    "RowSelection",
    "ThetaSketch",
    "__version__",
    "_block_cache_stats",
    "_debug_error",
    "_debug_panic",
    "avro_file_header",
    "decimal_out_of_precision",
    "decode_dictionaries",
    "decode_values",
    "delta_parse_stats",
    "encode_values",
    "expr_manifest_mask",
    "expr_metrics_mask",
    "expr_partition_mask",
    "expr_strict_metrics_mask",
    "filter_batch",
    "geo_bounds",
    "geo_intersects_mask",
    "index_in",
    "keep_mask_from_positions",
    "key_selection",
    "parquet_check_footer",
    "parquet_check_page_counts",
    "parquet_encode_files",
    "parquet_open_stream",
    "parquet_read_files",
    "parquet_read_position_deletes",
    "plan_build_tasks",
    "plan_check_unique_paths",
    "plan_entry_masks",
    "plan_keep_decoded",
    "plan_keep_entries",
    "plan_match_deletes",
    "plan_partition_keys",
    "plan_read_keep_manifests",
    "plan_read_manifests",
    "point_from_bytes",
    "point_to_bytes",
    "puffin_read_blob",
    "puffin_read_footer",
    "read_avro_batch",
    "read_manifest",
    "read_manifest_list",
    "read_manifests",
    "regroup_by_key",
    "release_memory",
    "row_selection",
    "sync_paths_local",
    "take_arrays",
    "theta_sketch_estimate",
    "transform_apply",
    "value_from_bytes",
    "value_from_json",
    "value_to_bytes",
    "value_to_json",
    "variant_annotate_tail",
    "variant_from_arrow",
    "variant_from_json",
    "variant_from_python",
    "variant_normalize",
    "variant_to_json",
    "variant_to_python",
    "write_avro_file",
    "write_manifest",
    "write_manifest_list",
    "write_new_files_local",
]

__version__: str

def _debug_panic(message: str) -> None: ...
def _debug_error(kind: str, message: str) -> None: ...
def _block_cache_stats() -> tuple[int, int]: ...
def release_memory() -> None: ...

# Single-value serialisation (spec Appendix D). `type_` is the spec's type string; values are
# physical: bool, int (also days, micros, nanos, decimal unscaled), float, str, bytes (uuid 16 BE).
def value_to_bytes(type_: str, value: _Physical) -> bytes: ...
def value_from_bytes(type_: str, data: bytes) -> _Physical: ...
def value_to_json(
    type_: str, value: bool | int | float | str | bytes
) -> bool | int | float | str: ...
def value_from_json(
    type_: str, json_value: bool | int | float | str
) -> bool | int | float | str | bytes: ...

# Delta converter: stats JSON of many files -> (num_records, tight_bounds, null counts, mins,
# maxs), one array per column for the last three.
def delta_parse_stats(
    stats: _Array, paths: Sequence[Sequence[str]], kinds: Sequence[str]
) -> tuple[pa.Array, pa.Array, list[pa.Array], list[pa.Array], list[pa.Array]]: ...
def decode_values(type_: str, array: _Array) -> _Array: ...
def encode_values(type_: str, array: _Array) -> _Array: ...
def point_to_bytes(x: float, y: float, z: float | None = None, m: float | None = None) -> bytes: ...
def point_from_bytes(data: bytes) -> tuple[float, float, float | None, float | None]: ...

# Partition transforms: `transform` is the spec's JSON name (`bucket[16]`, `day`, ...).
def decimal_out_of_precision(array: _Array) -> int | None: ...
def transform_apply(transform: str, array: _Array) -> _Array: ...

# Scan planning: filters are the compact JSON of `icefloe.expressions.serde.to_dict` (bound).
def expr_manifest_mask(summaries: _Array, filter_json: str, field_ids: Sequence[int]) -> _Array: ...
def expr_partition_mask(partition: _Array, filter_json: str) -> _Array: ...
def expr_metrics_mask(entries: _Array, filter_json: str) -> _Array: ...
def expr_strict_metrics_mask(entries: _Array, filter_json: str) -> _Array: ...
def geo_bounds(array: _Array) -> tuple[bytes, bytes] | None: ...
def geo_intersects_mask(array: _Array, query: list[float]) -> _Array: ...
def plan_partition_keys(partition: _Array) -> _Array: ...
def plan_entry_masks(
    batches: Sequence[pa.RecordBatch],
    spec_index: Sequence[int],
    partition_filters: Sequence[str | None],
    metrics_filter: str | None = None,
    threads: int | None = None,
) -> list[_Array]: ...
def plan_build_tasks(
    spec_id: int,
    entries: pa.RecordBatch,
    residual_index: _Array,
    residuals: Sequence[Any],
    deletes: _Array | None = None,
    refs: Sequence[Any] = ...,
    partitions: tuple[_Array, Sequence[tuple[Any, ...]]] | None = None,
) -> list[FileScanTask] | None: ...

@final
class DecodedManifest:
    @property
    def nbytes(self) -> int: ...
    @property
    def num_rows(self) -> int: ...
    def to_arrow(self) -> pa.RecordBatch: ...

def plan_keep_decoded(
    bases: Sequence[DecodedManifest],
    extras: Sequence[DecodedManifest | None],
    spec_index: Sequence[int],
    partition_filters: Sequence[str | None],
    metrics_filter: str | None,
    keep_columns: Sequence[str],
    threads: int | None = None,
) -> list[pa.RecordBatch]: ...
def plan_keep_entries(
    batches: Sequence[pa.RecordBatch],
    spec_index: Sequence[int],
    partition_filters: Sequence[str | None],
    metrics_filter: str | None,
    columns: Sequence[str],
    threads: int | None = None,
) -> list[pa.RecordBatch]: ...
def plan_check_unique_paths(paths: Sequence[_Array]) -> None: ...
def plan_match_deletes(data_files: _Array, delete_files: _Array) -> _Array: ...
def plan_read_keep_manifests(
    data: Sequence[bytes],
    snapshot_ids: Sequence[int | None],
    sequence_numbers: Sequence[int | None],
    first_row_ids: Sequence[int | None],
    names: Sequence[str],
    metric_ids: Sequence[int] | None,
    spec_index: Sequence[int],
    partition_filters: Sequence[str | None],
    metrics_filter: str | None,
    keep_columns: Sequence[str],
    full: bool,
    threads: int | None = None,
) -> list[tuple[pa.RecordBatch, DecodedManifest | None, DecodedManifest | None]]: ...
def plan_read_manifests(
    data: Sequence[bytes],
    snapshot_ids: Sequence[int | None] | None = None,
    sequence_numbers: Sequence[int | None] | None = None,
    first_row_ids: Sequence[int | None] | None = None,
    names: Sequence[str] | None = None,
    columns: Sequence[str] = ...,
    metric_ids: Sequence[int] | None = None,
    threads: int | None = None,
) -> list[pa.RecordBatch]: ...

# scan tasks (re-exported by icefloe.scan.tasks)
@final
class DataFileRef:
    """The fields of a data file's manifest entry the reader needs."""

    __match_args__ = (
        "file_path",
        "file_format",
        "record_count",
        "file_size_in_bytes",
        "spec_id",
        "partition",
        "first_row_id",
        "data_sequence_number",
        "file_sequence_number",
    )
    def __new__(
        cls,
        file_path: str,
        file_format: str | None = None,
        record_count: int | None = None,
        file_size_in_bytes: int | None = None,
        spec_id: int | None = None,
        partition: tuple[Any, ...] | None = None,
        first_row_id: int | None = None,
        data_sequence_number: int | None = None,
        file_sequence_number: int | None = None,
    ) -> DataFileRef: ...
    @property
    def file_path(self) -> str: ...
    @property
    def file_format(self) -> str: ...
    @property
    def record_count(self) -> int: ...
    @property
    def file_size_in_bytes(self) -> int: ...
    @property
    def spec_id(self) -> int: ...
    @property
    def partition(self) -> tuple[Any, ...]: ...
    @property
    def first_row_id(self) -> int | None: ...
    @property
    def data_sequence_number(self) -> int | None: ...
    @property
    def file_sequence_number(self) -> int | None: ...
    def _values(self) -> tuple[Any, ...]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> tuple[type[DataFileRef], tuple[Any, ...]]: ...
    def __replace__(self, **changes: Any) -> DataFileRef: ...

@final
class FileScanTask:
    """One data file (or the split ``[start, start + length)`` of it) to read."""

    __match_args__ = ("data_file", "delete_files", "start", "length", "residual", "spec_id")
    def __new__(
        cls,
        data_file: DataFileRef,
        delete_files: Iterable[DeleteFileRef] | None = None,
        start: int | None = None,
        length: int | None = None,
        residual: BooleanExpression | None = None,
        spec_id: int | None = None,
    ) -> FileScanTask: ...
    @property
    def data_file(self) -> DataFileRef: ...
    @property
    def delete_files(self) -> tuple[DeleteFileRef, ...]: ...
    @property
    def start(self) -> int: ...
    @property
    def length(self) -> int | None: ...
    @property
    def residual(self) -> BooleanExpression: ...
    @property
    def spec_id(self) -> int: ...
    def _values(self) -> tuple[Any, ...]: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...
    def __reduce__(self) -> tuple[type[FileScanTask], tuple[Any, ...]]: ...
    def __replace__(self, **changes: Any) -> FileScanTask: ...

# deletes
_BlobTuple = tuple[str, list[int], int, int, int, int, str | None, list[tuple[str, str]]]

@final
class PositionBitmap:
    @staticmethod
    def from_positions(positions: pa.Array) -> PositionBitmap: ...
    @staticmethod
    def from_blob(blob: bytes, expected_cardinality: int | None = None) -> PositionBitmap: ...
    @staticmethod
    def deserialize(data: bytes) -> PositionBitmap: ...
    def to_blob(self) -> bytes: ...
    def serialize(self) -> bytes: ...
    def positions(self) -> pa.Array: ...
    def cardinality(self) -> int: ...
    def max(self) -> int | None: ...
    def __len__(self) -> int: ...
    def __contains__(self, pos: int, /) -> bool: ...
    def __eq__(self, other: object, /) -> bool: ...
    def union(self, other: PositionBitmap) -> PositionBitmap: ...
    def keep_mask(self, start: int, length: int) -> pa.BooleanArray: ...
    def filter_rows(
        self, batch: pa.RecordBatch, start: int, decode: list[str] = ...
    ) -> pa.RecordBatch: ...

@final
class PositionDeleteIndex:
    def __new__(cls) -> PositionDeleteIndex: ...
    def add_batch(self, batch: pa.RecordBatch) -> None: ...
    def merge(self, path: str, bitmap: PositionBitmap) -> None: ...
    def paths(self) -> list[str]: ...
    def get(self, path: str) -> PositionBitmap | None: ...
    def cardinality(self) -> int: ...
    def keep_mask(self, path: str, start: int, length: int) -> pa.BooleanArray: ...

@final
class EqualityDeleteSet:
    def __new__(cls) -> EqualityDeleteSet: ...
    def add_batch(self, batch: pa.RecordBatch) -> None: ...
    def keep_mask(self, batch: pa.RecordBatch) -> pa.BooleanArray: ...
    def column_sets(self) -> list[list[str]]: ...
    def __len__(self) -> int: ...

def keep_mask_from_positions(positions: pa.Array, start: int, length: int) -> pa.BooleanArray: ...
def filter_batch(
    batch: pa.RecordBatch, keep: pa.Array, decode: list[str] = ...
) -> pa.RecordBatch: ...
def decode_dictionaries(batch: pa.RecordBatch, names: list[str]) -> pa.RecordBatch: ...
def index_in(values: pa.Array, value_set: pa.Array) -> pa.Int32Array | None: ...

# puffin
@final
class PuffinWriter:
    def __new__(cls) -> PuffinWriter: ...
    def add_blob(
        self,
        data: bytes,
        blob_type: str,
        fields: list[int],
        snapshot_id: int,
        sequence_number: int,
        compression_codec: str | None = None,
        properties: list[tuple[str, str]] = ...,
    ) -> _BlobTuple: ...
    def add_deletion_vector(
        self, bitmap: PositionBitmap, referenced_data_file: str
    ) -> _BlobTuple: ...
    def finish(
        self, properties: list[tuple[str, str]] = ..., compress_footer: bool = False
    ) -> bytes: ...

def parquet_check_footer(footer: bytes) -> list[tuple[int, list[int], list[int]]]: ...
def parquet_check_page_counts(
    footer: bytes, data: bytes | None = None, path: str | None = None
) -> None: ...
def write_new_files_local(
    paths: list[str], data: list[bytes], threads: int
) -> list[tuple[bool, OSError] | None]: ...
def sync_paths_local(paths: list[str], threads: int) -> None: ...
def regroup_by_key(
    columns: list[pa.Array],
    keys: pa.Array,
    threads: int | None = None,
    permutation: bool = False,
) -> tuple[list[pa.Array], list[tuple[int, int]], pa.Array | None]: ...
def take_arrays(
    columns: list[pa.Array], indices: pa.Array, pieces: int, threads: int | None = None
) -> list[list[pa.Array]]: ...
def parquet_encode_files(
    batches: list[pa.RecordBatch],
    slices: list[tuple[int, int]],
    columns: list[tuple[int, str, str, int]],
    compression: str,
    compression_level: int | None,
    dictionary: list[str],
    page_size: int,
    dictionary_page_size: int,
    row_group_rows: int,
    key_value: list[tuple[str, str]],
    threads: int | None = None,
) -> list[dict[str, Any]]: ...
def parquet_read_files(
    paths: list[str],
    rows: list[int],
    deleted: list[PositionBitmap | None],
    field_ids: list[int],
    schema: pa.Schema,
    batch_size: int,
    threads: int | None = None,
    optional: list[bool] | None = None,
    positions: bool = False,
    equality: list[EqualityDeleteSet | None] | None = None,
    selection: RowSelection | None = None,
) -> list[list[pa.RecordBatch] | None]: ...

@final
class RowSelection: ...

def row_selection(
    filter_json: str, field_ids: list[int], schema: pa.Schema
) -> RowSelection | None: ...
def key_selection(keys: EqualityDeleteSet, names: list[str], schema: pa.Schema) -> RowSelection: ...

@final
class ParquetFileStream:
    def __iter__(self) -> ParquetFileStream: ...
    def __next__(self) -> pa.RecordBatch: ...
    @property
    def failed(self) -> bool: ...

def parquet_open_stream(
    path: str,
    rows: int,
    deleted: PositionBitmap | None,
    field_ids: list[int],
    schema: pa.Schema,
    batch_size: int,
    threads: int | None = None,
    optional: list[bool] | None = None,
    positions: bool = False,
    equality: EqualityDeleteSet | None = None,
    start: int = 0,
    length: int | None = None,
    selection: RowSelection | None = None,
) -> ParquetFileStream | None: ...
def parquet_read_position_deletes(
    paths: list[str],
    referenced: list[str],
    threads: int | None = None,
    record_counts: Sequence[int | None] | None = None,
) -> list[PositionBitmap | None]: ...
def puffin_read_footer(
    data: bytes,
) -> tuple[list[_BlobTuple], list[tuple[str, str]], int]: ...
def puffin_read_blob(
    data: bytes, offset: int, length: int, compression_codec: str | None = None
) -> bytes: ...

# manifests and manifest lists (icefloe.manifest)
def read_manifest(
    data: bytes,
    *,
    snapshot_id: int | None = None,
    sequence_number: int | None = None,
    first_row_id: int | None = None,
    name: str = "<bytes>",
    columns: Sequence[str] | None = None,
    stats_ids: Sequence[int] | None = None,
) -> pa.RecordBatch:
    """Decodes a manifest into one RecordBatch (layout of ``icefloe.manifest.read_manifest``).

    Projection (optional, the output schema never changes): ``columns`` names the output
    columns to decode; the others are skipped in the Avro data and returned all null, except
    ``status``, ``snapshot_id``, ``sequence_number``, ``file_sequence_number``, ``content``,
    ``record_count`` and ``first_row_id``, which are always decoded. ``stats_ids`` keeps, in the
    metric maps (``column_sizes`` ... ``upper_bounds``), only the pairs of those column field
    ids; the others are read past without being stored. Unknown column names raise
    ``ValidationError``.
    """

def read_manifests(
    data: Sequence[bytes],
    *,
    snapshot_ids: Sequence[int | None] | None = None,
    sequence_numbers: Sequence[int | None] | None = None,
    first_row_ids: Sequence[int | None] | None = None,
    names: Sequence[str] | None = None,
    threads: int | None = None,
    columns: Sequence[str] | None = None,
    stats_ids: Sequence[int] | None = None,
) -> list[pa.RecordBatch]:
    """Decodes many manifests in parallel (GIL released), one batch each, in order;
    ``columns`` and ``stats_ids`` project as in :func:`read_manifest`."""

def read_manifest_list(data: bytes, *, name: str = "<bytes>") -> pa.RecordBatch: ...
def avro_file_header(data: bytes, *, name: str = "<bytes>") -> tuple[str, int]: ...
def read_avro_batch(
    data: bytes,
    schema: pa.Schema,
    *,
    offset: int = 0,
    batch_rows: int = 131072,
    name: str = "<bytes>",
) -> tuple[pa.RecordBatch, int | None]: ...
def write_avro_file(
    batches: list[pa.RecordBatch],
    schema_json: str,
    *,
    metadata: list[tuple[str, bytes]] = ...,
    codec: str = "deflate",
    level: int | None = None,
) -> bytes: ...
def write_manifest(
    batch: pa.RecordBatch,
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
) -> tuple[bytes, pa.RecordBatch]: ...
def write_manifest_list(
    batch: pa.RecordBatch,
    *,
    format_version: int,
    snapshot_id: int,
    sequence_number: int,
    parent_snapshot_id: int | None = None,
    first_row_id: int | None = None,
    codec: str = "deflate",
    level: int | None = None,
) -> tuple[bytes, int | None]: ...

# sketch
@final
class ThetaSketch:
    def __new__(cls) -> ThetaSketch: ...
    @staticmethod
    def from_bytes(data: bytes) -> ThetaSketch: ...
    def update(self, array: pa.Array) -> None: ...
    def merge(self, other: ThetaSketch) -> None: ...
    def estimate(self) -> float: ...
    def is_exact(self) -> bool: ...
    def to_bytes(self) -> bytes: ...

def theta_sketch_estimate(data: bytes) -> float: ...

# variant
def variant_normalize(array: pa.Array) -> pa.StructArray: ...
def variant_from_json(array: pa.Array, first_row: int = 0) -> pa.StructArray: ...
def variant_from_arrow(array: pa.Array) -> pa.StructArray: ...
def variant_from_python(values: Sequence[Any], null_rows: bool = True) -> pa.StructArray: ...
def variant_to_json(array: pa.Array) -> pa.StringArray: ...
def variant_to_python(array: pa.Array) -> list[Any]: ...
def variant_annotate_tail(tail: bytes, field_ids: list[int]) -> bytes: ...
