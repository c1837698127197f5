# Hand-written stub of the Rust extension; kept honest by `python -m mypy.stubtest icefloe._native`.

__all__ = ["__version__", "_debug_error", "_debug_panic"]

__version__: str

def _debug_panic(message: str) -> None: ...
def _debug_error(kind: str, message: str) -> None: ...
