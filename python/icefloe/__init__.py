"""icefloe: a Rust-accelerated Python implementation of the Apache Iceberg table format."""

from __future__ import annotations

from typing import TYPE_CHECKING

from icefloe import exceptions
from icefloe._native import __version__
from icefloe.table.static import StaticTable

if TYPE_CHECKING:
    from icefloe.catalog import Catalog

__all__ = ["StaticTable", "__version__", "exceptions", "load_catalog", "release_memory"]


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
