# Hand-written stub of the Rust extension; kept honest by `python -m mypy.stubtest icefloe._native`.

from collections.abc import Sequence

import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

__all__ = [
    "__version__",
    "_debug_error",
    "_debug_panic",
    "read_manifest",
    "read_manifest_list",
    "read_manifests",
    "write_manifest",
    "write_manifest_list",
]

__version__: str

def _debug_panic(message: str) -> None: ...
def _debug_error(kind: str, message: str) -> None: ...
def read_manifest(
    data: bytes,
    *,
    snapshot_id: int | None = None,
    sequence_number: int | None = None,
    first_row_id: int | None = None,
    name: str = "<bytes>",
) -> pa.RecordBatch: ...
def read_manifests(
    data: Sequence[bytes],
    *,
    snapshot_ids: Sequence[int | None] | None = None,
    sequence_numbers: Sequence[int | None] | None = None,
    first_row_ids: Sequence[int | None] | None = None,
    names: Sequence[str] | None = None,
    threads: int | None = None,
) -> list[pa.RecordBatch]: ...
def read_manifest_list(data: bytes, *, name: str = "<bytes>") -> pa.RecordBatch: ...
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
