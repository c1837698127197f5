"""The statements ``icefloe sql`` refuses before running a query: those that would change a
table (``DROP``, ``INSERT``, ``UPDATE``, ``DELETE``, ``ALTER``, ``MERGE INTO``). The command
hands DuckDB read-only scans of the catalog's tables, so such a statement could never do what
it says; DuckDB's own error for it would speak of a schema or table missing from its empty
database, which reads as if the catalog had no such table."""

from __future__ import annotations

from icefloe.exceptions import UnsupportedFeatureError

__all__ = ["refuse_changes"]

#: DuckDB statement types that change a table, and how icefloe does what they ask.
_API = "change rows with icefloe's Python API (append, overwrite, delete, upsert)"
_CHANGES = {
    "DROP": "drop a table with icefloe drop table NAME (a view: icefloe drop view NAME)",
    "INSERT": _API,
    "UPDATE": _API,
    "DELETE": _API,
    "MERGE_INTO": _API,
    "ALTER": "change a table's schema with icefloe's Python API, its properties with "
    "icefloe properties set",
}


def refuse_changes(query: str) -> None:
    """Refuse ``query`` (bad input, exit code 2) when one of its statements would change a
    table; a query DuckDB cannot parse is left to the run, which reports its syntax error."""
    import duckdb

    con = duckdb.connect()
    try:
        statements = con.extract_statements(query)
    except duckdb.Error:
        return
    finally:
        con.close()
    for statement in statements:
        kind = getattr(statement.type, "name", "")
        if kind in _CHANGES:
            raise UnsupportedFeatureError(
                f"sql: {kind.replace('_', ' ')} statements are not run: icefloe sql reads the "
                f"catalog's tables through DuckDB and changes none; {_CHANGES[kind]}"
            )
