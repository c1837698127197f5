"""Access to the peer implementations used as oracles in tests (never runtime dependencies).

DuckDB's iceberg extension is loaded offline from its PyPI package by path, avro first, with
automatic install and load switched off, so tests never reach the network.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import duckdb

DUCKDB_EXTENSIONS = ("avro", "iceberg")  # order matters: iceberg needs avro loaded first


def duckdb_extension_path(name: str) -> str:
    """The ``.duckdb_extension`` file shipped by the ``duckdb-extension-<name>`` package."""
    module = importlib.import_module(f"duckdb_extension_{name}")
    root = os.path.join(os.path.dirname(module.__file__ or ""), "extensions")
    path = os.path.join(root, f"v{duckdb.__version__}", f"{name}.duckdb_extension")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} (duckdb {duckdb.__version__} vs. extension package)")
    return path


def duckdb_connect() -> Any:
    """An in-memory DuckDB connection with the avro and iceberg extensions loaded offline."""
    con = duckdb.connect(
        config={
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            "allow_unsigned_extensions": True,
        }
    )
    for name in DUCKDB_EXTENSIONS:
        con.execute(f"LOAD '{duckdb_extension_path(name)}'")
    return con


def duckdb_load(con: Any, name: str) -> None:
    """Load another extension shipped as ``duckdb-extension-<name>`` (offline) into ``con``."""
    con.execute(f"LOAD '{duckdb_extension_path(name)}'")
