"""icefloe: a Rust-accelerated Python implementation of the Apache Iceberg table format.

Importing the package loads only the native extension and the exceptions; ``StaticTable`` and
``load_catalog`` import the table and catalog layers on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from icefloe import exceptions
from icefloe._native import __version__

if TYPE_CHECKING:
    from icefloe.catalog import Catalog
    from icefloe.table.static import StaticTable

__all__ = ["StaticTable", "__version__", "exceptions", "load_catalog", "release_memory"]


def __getattr__(name: str) -> Any:
    if name == "StaticTable":
        from icefloe.table.static import StaticTable

        return StaticTable
    raise AttributeError(f"module 'icefloe' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names, with those imported on first use (``StaticTable``)."""
    return sorted(set(globals()) | set(__all__))


def load_catalog(name: str | None = None, **properties: str) -> Catalog:
    """Open a catalog (see :func:`icefloe.catalog.load_catalog`); imported lazily."""
    from icefloe.catalog import load_catalog as _load_catalog

    return _load_catalog(name, **properties)


def release_memory() -> None:
    """Return the large freed buffers icefloe keeps for reuse (at most 64 MiB: columns filtered
    by deletes are allocated from them, which spares the page faults of fresh memory) to the
    system."""
    from icefloe._native import release_memory as _release

    _release()
