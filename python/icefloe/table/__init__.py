"""Tables: a catalog entry's current metadata, its file IO and the way to commit changes."""

from __future__ import annotations

from icefloe.table.table import Table, Transaction, UpdateProperties

__all__ = ["Table", "Transaction", "UpdateProperties"]
