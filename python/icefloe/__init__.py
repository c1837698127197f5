"""icefloe: a Rust-accelerated Python implementation of the Apache Iceberg table format."""

from __future__ import annotations

from icefloe import exceptions
from icefloe._native import __version__

__all__ = ["__version__", "exceptions"]
