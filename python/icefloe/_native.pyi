# Hand-written stub of the Rust extension; kept honest by `python -m mypy.stubtest icefloe._native`.

from typing import Any

# pyarrow ships no type information: arrays are typed as Any (pyarrow.Array at run time).
_Array = Any
_Physical = bool | int | float | str | bytes
_JsonScalar = bool | int | float | str

__all__ = [
    "__version__",
    "_debug_error",
    "_debug_panic",
    "decode_values",
    "encode_values",
    "point_from_bytes",
    "point_to_bytes",
    "transform_apply",
    "value_from_bytes",
    "value_from_json",
    "value_to_bytes",
    "value_to_json",
]

__version__: str

def _debug_panic(message: str) -> None: ...
def _debug_error(kind: str, message: str) -> None: ...

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
def decode_values(type_: str, array: _Array) -> _Array: ...
def encode_values(type_: str, array: _Array) -> _Array: ...
def point_to_bytes(x: float, y: float, z: float | None = None, m: float | None = None) -> bytes: ...
def point_from_bytes(data: bytes) -> tuple[float, float, float | None, float | None]: ...

# Partition transforms: `transform` is the spec's JSON name (`bucket[16]`, `day`, ...).
def transform_apply(transform: str, array: _Array) -> _Array: ...
