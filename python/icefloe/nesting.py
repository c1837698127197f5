"""The deepest column nesting icefloe can read and write.

Every batch icefloe reads or writes crosses between pyarrow and the Rust core through Arrow's C
data interface, and pyarrow's importer refuses a schema nested more than
:data:`ARROW_C_MAX_LEVELS` ``ArrowSchema`` levels deep, counting the batch itself
(``ArrowInvalid: Recursion level in ArrowSchema struct exceeded``). So a column may nest at most
:data:`MAX_COLUMN_LEVELS` Arrow fields deep: the column is one level, each struct field and list
element one more, a map key or value two (its entries struct between) and a variant one (its
``metadata``/``value`` struct). A column of 62 nested structs or lists, or of 31 nested maps,
is the deepest there is.

:func:`check_nesting` refuses deeper schemas with :class:`UnsupportedFeatureError` naming the
column path and the limit: when a table is created, its schema changes or rows are written,
and before a read of such columns (a table another engine wrote) starts.
"""

from __future__ import annotations

from icefloe.exceptions import UnsupportedFeatureError
from icefloe.schema import Schema, walk_fields
from icefloe.types import MapType, VariantType

__all__ = ["ARROW_C_MAX_LEVELS", "MAX_COLUMN_LEVELS", "check_nesting", "deepest_column"]

#: pyarrow's limit on nested ``ArrowSchema`` levels when it imports through the C data
#: interface (``kMaxImportRecursionLevel`` in Arrow C++), the record batch included.
ARROW_C_MAX_LEVELS = 64

#: The deepest column, in Arrow fields from the column to its deepest leaf.
MAX_COLUMN_LEVELS = ARROW_C_MAX_LEVELS - 1

_SHOWN_PATH = 160


def deepest_column(schema: Schema) -> tuple[int, str]:
    """The nesting of ``schema``'s deepest column in Arrow fields (see the module doc) and the
    dotted path to its deepest leaf; ``(0, "")`` for a schema without columns."""
    deepest, path = 0, ""
    for ancestors, f in walk_fields(schema.as_struct()):
        levels = len(ancestors) + 1
        levels += sum(isinstance(a.field_type, MapType) for a in ancestors)
        levels += isinstance(f.field_type, VariantType)
        if levels > deepest:
            deepest, path = levels, ".".join([a.name for a in ancestors] + [f.name])
    return deepest, path


def check_nesting(schema: Schema, action: str) -> None:
    """Raises :class:`UnsupportedFeatureError` if a column of ``schema`` nests deeper than
    pyarrow can exchange (:data:`MAX_COLUMN_LEVELS`); ``action`` says what was refused
    ("cannot create the table")."""
    levels, path = deepest_column(schema)
    if levels <= MAX_COLUMN_LEVELS:
        return
    if len(path) > _SHOWN_PATH:
        half = _SHOWN_PATH // 2
        path = f"{path[:half]}...{path[-half:]}"
    raise UnsupportedFeatureError(
        f"{action}: column {path!r} nests {levels} fields deep, and icefloe moves data "
        f"through pyarrow, which takes at most {MAX_COLUMN_LEVELS} (a struct field or list "
        "element is one level, a map key or value two)"
    )
