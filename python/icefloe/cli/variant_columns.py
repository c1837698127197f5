"""Variant columns in ``icefloe scan`` and ``icefloe sql``.

A scan gives a variant (top-level, or inside a struct, list or map) as its encoded
``struct<metadata: binary, value: binary>``, tagged ``arrow.parquet.variant`` by field metadata.
For people and for DuckDB it becomes its JSON text (:func:`as_json_text`); Parquet output keeps
the encoding and gets the Parquet ``VARIANT`` annotation (:func:`annotated_ids`).

DuckDB (1.5) neither imports Arrow's variant nor exports its own ``VARIANT`` to Arrow: a table
reaches it with its variants as JSON text cast to ``VARIANT`` in the view that names the table
(:func:`duckdb_type`), and a query's ``VARIANT`` results leave it as JSON text
(:func:`json_results`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from icefloe.arrow_schema import EXTENSION_NAME_KEY, VARIANT_EXTENSION
from icefloe.cli.names import quote_part

__all__ = [
    "JSON_TAG",
    "annotated_ids",
    "as_json_text",
    "duckdb_type",
    "is_variant",
    "json_results",
    "json_text_converter",
    "variant_view_columns",
]

#: Field metadata that makes DuckDB read a string column as its ``JSON`` type.
JSON_TAG: Mapping[bytes, bytes] = {
    EXTENSION_NAME_KEY: b"arrow.json",
    b"ARROW:extension:metadata": b"",
}
_FIELD_ID = b"PARQUET:field_id"


def is_variant(f: pa.Field) -> bool:
    """Whether ``f`` is an encoded variant (tagged by a scan)."""
    return bool(f.metadata) and f.metadata.get(EXTENSION_NAME_KEY) == VARIANT_EXTENSION


def _children(t: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(t):
        return list(t)
    if pa.types.is_map(t):
        return [t.key_field, t.item_field]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [t.value_field]
    return []


def _has_variant(f: pa.Field) -> bool:
    return is_variant(f) or any(_has_variant(c) for c in _children(f.type))


def annotated_ids(schema: pa.Schema) -> list[int]:
    """The field ids of the variant fields of ``schema`` (nested ones too), for the Parquet
    ``VARIANT`` annotation; none when a variant field has no id or an id is not unique (the
    annotation finds its groups by id)."""
    ids: list[int] = []
    wanted: list[int] = []

    def walk(f: pa.Field) -> bool:
        raw = (f.metadata or {}).get(_FIELD_ID)
        fid = int(raw) if raw is not None and raw.strip().isdigit() else None
        if fid is not None:
            ids.append(fid)
        if is_variant(f):
            if fid is None:
                return False
            wanted.append(fid)
            return True
        return all(walk(c) for c in _children(f.type))

    if not all(walk(f) for f in schema) or len(set(ids)) != len(ids):
        return []
    return wanted


def _json_field(f: pa.Field, tag: Mapping[bytes, bytes] | None) -> pa.Field:
    """``f`` with its variants (nested ones too) as strings; their metadata loses the variant
    tag and takes ``tag``."""
    if is_variant(f):
        meta = {k: v for k, v in (f.metadata or {}).items() if k != EXTENSION_NAME_KEY}
        return pa.field(f.name, pa.string(), f.nullable, {**meta, **(tag or {})} or None)
    t = f.type
    if pa.types.is_struct(t):
        t = pa.struct([_json_field(c, tag) for c in t])
    elif pa.types.is_map(t):
        t = pa.map_(_json_field(t.key_field, tag), _json_field(t.item_field, tag))
    elif pa.types.is_large_list(t):
        t = pa.large_list(_json_field(t.value_field, tag))
    elif pa.types.is_list(t):
        t = pa.list_(_json_field(t.value_field, tag))
    return f.with_type(t)


def _json_array(values: pa.Array, f: pa.Field, out: pa.Field) -> pa.Array:
    """``values`` (of field ``f``) as field ``out`` of :func:`_json_field`."""
    from icefloe import variant

    if not _has_variant(f):
        return values
    if is_variant(f):
        text: pa.Array = variant.to_json(values)
        return text
    t = values.type
    mask = values.is_null() if values.null_count else None
    if pa.types.is_struct(t):
        children = [
            _json_array(values.field(i), f.type.field(i), out.type.field(i))
            for i in range(t.num_fields)
        ]
        return pa.StructArray.from_arrays(children, fields=list(out.type), mask=mask)
    offsets = values.offsets
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    offsets = pc.subtract(offsets, offsets[0])
    inner = values.values.slice(start, end - start)
    if pa.types.is_map(t):
        keys = _json_array(inner.field(0), f.type.key_field, out.type.key_field)
        items = _json_array(inner.field(1), f.type.item_field, out.type.item_field)
        return pa.MapArray.from_arrays(offsets, keys, items, type=out.type, mask=mask)
    items = _json_array(inner, f.type.value_field, out.type.value_field)
    kind = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
    return kind.from_arrays(offsets, items, type=out.type, mask=mask)


def as_json_text(
    schema: pa.Schema,
    batches: Iterator[pa.RecordBatch],
    tag: Mapping[bytes, bytes] | None = None,
) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """``schema`` and ``batches`` with every variant (nested ones too) as its JSON text
    (null rows stay null), each such field's metadata with ``tag`` (see :data:`JSON_TAG`)."""
    convert = json_text_converter(schema, tag)
    if convert is None:
        return schema, batches
    out, fn = convert
    return out, (fn(b) for b in batches)


def json_text_converter(
    schema: pa.Schema, tag: Mapping[bytes, bytes] | None = None
) -> tuple[pa.Schema, Callable[[pa.RecordBatch], pa.RecordBatch]] | None:
    """The schema :func:`as_json_text` gives for ``schema`` and its batch conversion; None
    when ``schema`` has no variant."""
    if not any(_has_variant(f) for f in schema):
        return None
    fields = [_json_field(f, tag) for f in schema]
    out = pa.schema(fields, metadata=schema.metadata)

    def convert(b: pa.RecordBatch) -> pa.RecordBatch:
        cols = [_json_array(c, schema.field(i), fields[i]) for i, c in enumerate(b.columns)]
        return pa.RecordBatch.from_arrays(cols, schema=out)

    return out, convert


# -- DuckDB ----------------------------------------------------------------------------------


def _mentions(t: Any, name: str) -> bool:
    """Whether DuckDB type ``t`` is, or holds, the type called ``name``."""
    if str(t) == name:
        return True
    if t.id in ("struct", "list", "array", "map", "union"):
        return any(_mentions(c, name) for _, c in t.children if not isinstance(c, int))
    return False


def duckdb_type(t: Any, swap: Mapping[str, str]) -> str:
    """DuckDB type ``t`` (a ``DuckDBPyType``) as SQL, every type named in ``swap`` (``JSON``,
    ``VARIANT``) as the one it maps to."""
    name = str(t)
    if name in swap:
        return swap[name]
    kind = t.id
    if kind == "struct":
        fields = ", ".join(f"{quote_part(n)} {duckdb_type(c, swap)}" for n, c in t.children)
        return f"STRUCT({fields})"
    if kind == "union":  # its first child is the tag
        members = ", ".join(f"{quote_part(n)} {duckdb_type(c, swap)}" for n, c in t.children[1:])
        return f"UNION({members})"
    if kind == "list":
        return duckdb_type(t.children[0][1], swap) + "[]"
    if kind == "array":
        return f"{duckdb_type(t.children[0][1], swap)}[{t.children[1][1]}]"
    if kind == "map":
        key, value = (duckdb_type(c, swap) for _, c in t.children)
        return f"MAP({key}, {value})"
    return name


def variant_view_columns(con: Any, schema: pa.Schema) -> str:
    """The select list of the view that shows DuckDB a scan of ``schema`` (already through
    :func:`json_text_converter` with :data:`JSON_TAG`): ``*`` with each column holding JSON
    text cast to its type with ``VARIANT`` in place of the JSON."""
    casts: list[str] = []
    for f in schema:
        if not _has_json_tag(f):
            continue
        t = con.from_arrow(pa.schema([f]).empty_table()).types[0]
        target = duckdb_type(t, {"JSON": "VARIANT"})
        casts.append(f"CAST({quote_part(f.name)} AS {target}) AS {quote_part(f.name)}")
    return f"* REPLACE ({', '.join(casts)})" if casts else "*"


def _has_json_tag(f: pa.Field) -> bool:
    tagged = bool(f.metadata) and f.metadata.get(EXTENSION_NAME_KEY) == JSON_TAG[EXTENSION_NAME_KEY]
    return tagged or any(_has_json_tag(c) for c in _children(f.type))


def json_results(relation: Any) -> Any:
    """``relation`` (a query's DuckDB relation) with its ``VARIANT`` columns, and those holding
    variants, as JSON text: DuckDB cannot hand ``VARIANT`` to Arrow. A top-level variant that
    is null (DuckDB keeps no SQL NULL apart from JSON ``null``) is NULL."""
    types = relation.types
    if not any(_mentions(t, "VARIANT") for t in types):
        return relation
    columns = []
    for i, (name, t) in enumerate(zip(relation.columns, types, strict=True), start=1):
        ref = f"#{i}"
        if str(t) == "VARIANT":
            ref = f"CASE WHEN #{i} IS NULL THEN NULL ELSE CAST(#{i} AS JSON) END"
        elif _mentions(t, "VARIANT"):
            ref = f"CAST(#{i} AS {duckdb_type(t, {'VARIANT': 'JSON'})})"
        columns.append(f"{ref} AS {quote_part(name)}")
    return relation.project(", ".join(columns))
