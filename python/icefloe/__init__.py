"""icefloe: a Rust-accelerated Python implementation of the Apache Iceberg table format."""

from __future__ import annotations

from typing import TYPE_CHECKING

from icefloe import exceptions
from icefloe._native import __version__
from icefloe.table.static import StaticTable

if TYPE_CHECKING:
    from icefloe.catalog import Catalog

__all__ = ["StaticTable", "__version__", "exceptions", "load_catalog"]


def load_catalog(name: str | None = None, **properties: str) -> Catalog:
    """Open a catalog (see :func:`icefloe.catalog.load_catalog`); imported lazily."""
    from icefloe.catalog import load_catalog as _load_catalog

    return _load_catalog(name, **properties)
