"""The deepest column nesting icefloe can read and write.

pyarrow bounds nesting twice, and icefloe goes through both:

* Every batch crosses between pyarrow and the Rust core through Arrow's C data interface, whose
  importer in pyarrow refuses a schema nested more than :data:`ARROW_C_MAX_LEVELS`
  ``ArrowSchema`` levels deep, counting the batch itself (``ArrowInvalid: Recursion level in
  ArrowSchema struct exceeded``). So a column may nest at most :data:`MAX_COLUMN_LEVELS` Arrow
  fields deep: the column is one level, each struct field and list element one more, a map key
  or value two (its entries struct between) and a variant one (its ``metadata``/``value``
  struct).
* pyarrow's Parquet reader, by default, refuses a file whose schema nests more than
  :data:`MAX_PARQUET_LEVELS` levels ("Parquet schema too deeply nested"): counted as above,
  except that a list takes two levels (its repeated group, then the element).

The deepest columns there are: 62 nested structs, 49 nested lists, 31 nested maps.
:func:`check_nesting` refuses deeper schemas with :class:`UnsupportedFeatureError` naming the
column path and the limit: when a table is created, its schema changes or rows are written,
and before a read of such columns (a table another engine wrote) starts.
"""

from __future__ import annotations

from icefloe.exceptions import UnsupportedFeatureError
from icefloe.schema import Schema, walk_fields
from icefloe.types import ListType, MapType, VariantType

__all__ = [
    "ARROW_C_MAX_LEVELS",
    "MAX_COLUMN_LEVELS",
    "MAX_PARQUET_LEVELS",
    "check_nesting",
    "deepest_column",
    "nesting_levels",
]

#: pyarrow's limit on nested ``ArrowSchema`` levels when it imports through the C data
#: interface (``kMaxImportRecursionLevel`` in Arrow C++), the record batch included.
ARROW_C_MAX_LEVELS = 64

#: The deepest column, in Arrow fields from the column to its deepest leaf.
MAX_COLUMN_LEVELS = ARROW_C_MAX_LEVELS - 1

#: The default schema depth limit of pyarrow's Parquet reader (``ReaderProperties``).
MAX_PARQUET_LEVELS = 100

_SHOWN_PATH = 160


def deepest_column(schema: Schema, parquet: bool = False) -> tuple[int, str]:
    """The nesting of ``schema``'s deepest column in Arrow fields (with ``parquet``, in Parquet
    schema levels; see the module doc) and the dotted path to its deepest leaf; ``(0, "")``
    for a schema without columns."""
    deepest, path = 0, ""
    for ancestors, f in walk_fields(schema.as_struct()):
        levels = len(ancestors) + 1
        levels += sum(isinstance(a.field_type, MapType) for a in ancestors)
        levels += isinstance(f.field_type, VariantType)
        if parquet:
            levels += sum(isinstance(a.field_type, ListType) for a in ancestors)
        if levels > deepest:
            deepest, path = levels, ".".join([a.name for a in ancestors] + [f.name])
    return deepest, path


def nesting_levels(schema: Schema) -> tuple[int, int]:
    """The deepest column's nesting in Arrow fields and in Parquet schema levels."""
    return deepest_column(schema)[0], deepest_column(schema, parquet=True)[0]


def _shown(path: str) -> str:
    """``path`` quoted, its middle names counted instead of listed when it is long."""
    names = path.split(".")
    if len(path) <= _SHOWN_PATH or len(names) < 8:
        return repr(path)
    head, tail = names[:4], names[-3:]
    return repr(".".join([*head, f"<{len(names) - 7} more>", *tail]))


def check_nesting(schema: Schema, action: str) -> None:
    """Raises :class:`UnsupportedFeatureError` if a column of ``schema`` nests deeper than
    pyarrow can exchange (:data:`MAX_COLUMN_LEVELS`) or read from Parquet
    (:data:`MAX_PARQUET_LEVELS`); ``action`` says what was refused ("cannot create the
    table")."""
    levels, path = deepest_column(schema)
    if levels > MAX_COLUMN_LEVELS:
        raise UnsupportedFeatureError(
            f"{action}: column {_shown(path)} nests {levels} fields deep, and icefloe moves "
            f"data through pyarrow, which takes at most {MAX_COLUMN_LEVELS} (a struct field or "
            "list element is one level, a map key or value two)"
        )
    levels, path = deepest_column(schema, parquet=True)
    if levels > MAX_PARQUET_LEVELS:
        raise UnsupportedFeatureError(
            f"{action}: column {_shown(path)} nests {levels} levels deep in a Parquet schema, "
            f"and pyarrow reads Parquet schemas at most {MAX_PARQUET_LEVELS} deep (a struct "
            "field is one level, a list element or map key or value two)"
        )
