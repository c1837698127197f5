"""Avro data and delete files, decoded in Rust.

Iceberg's Avro mapping keeps each field id in the writer schema (``field-id`` on record fields,
``element-id`` on arrays, ``key-id`` and ``value-id`` on maps) and marks dates, times,
timestamps, decimals and UUIDs with Avro logical types. :class:`AvroFile` turns the writer
schema into the file's Arrow schema with the ids under ``PARQUET:field_id``: the rest of the
reader (projection by field id, name mapping, deletes, metadata columns) then works on Avro
files as it does on Parquet ones. Maps with keys other than strings are arrays of key/value
records marked ``"logicalType": "map"`` and are read as maps.

Avro stores rows, not columns: the file's bytes are read whole and its records are decoded in
Rust (the GIL released), the fields not asked for skipped in the bytes, one batch at a time
(each ends at the first block boundary past the batch size), so a read holds the file's bytes
and one decoded batch. Files are not pruned below the file level (the manifest's bounds still skip
whole files); the residual filter is applied to the rows as for Parquet.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from icefloe import _native
from icefloe.arrow_schema import FIELD_ID_KEY
from icefloe.exceptions import CorruptFileError, UnsupportedFeatureError
from icefloe.io import FileIO
from icefloe.read.parquet_file import open_file

__all__ = ["AvroFile", "avro_to_arrow_schema", "open_avro"]

#: The field-metadata key the Rust decoder matches field ids by.
_NATIVE_ID_KEY = b"field_id"

_PRIMITIVES: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}


def _meta(field_id: Any) -> dict[bytes, bytes] | None:
    if field_id is None:
        return None
    fid = str(int(field_id)).encode()
    return {FIELD_ID_KEY: fid, _NATIVE_ID_KEY: fid}


class _Converter:
    """Avro schema JSON to Arrow types, resolving named types as they are defined."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.names: dict[str, Any] = {}

    def fail(self, msg: str) -> UnsupportedFeatureError:
        return UnsupportedFeatureError(f"cannot read Avro file {self.path}: {msg}")

    def field(self, name: str, schema: Any, field_id: Any) -> pa.Field | None:
        """The Arrow field of one Avro value; ``None`` for a value that is always null."""
        nullable = False
        if isinstance(schema, list):
            others = [b for b in schema if b != "null"]
            if len(others) == 0:
                return None
            if len(others) != 1:
                raise self.fail(f"field {name!r} is a union of {schema}, not [null, T]")
            nullable = len(others) != len(schema)
            schema = others[0]
        if schema == "null":
            return None
        return pa.field(name, self.type(name, schema), nullable, _meta(field_id))

    def type(self, name: str, schema: Any) -> pa.DataType:
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                return _PRIMITIVES[schema]
            found = self.names.get(schema)
            if found is None:
                found = next(
                    (v for k, v in self.names.items() if k.rsplit(".", 1)[-1] == schema), None
                )
            if found is None:
                raise CorruptFileError(f"Avro file {self.path}: unknown type {schema!r}")
            return self.type(name, found)
        if isinstance(schema, list):
            raise self.fail(f"field {name!r} nests a union directly in a union or collection")
        if not isinstance(schema, dict) or "type" not in schema:
            raise CorruptFileError(f"Avro file {self.path}: invalid schema for {name!r}")
        kind = schema["type"]
        if not isinstance(kind, str):
            return self.type(name, kind)
        if kind in ("record", "fixed", "enum") and "name" in schema:
            ns = schema.get("namespace")
            full = schema["name"] if not ns or "." in schema["name"] else f"{ns}.{schema['name']}"
            self.names[full] = schema
        logical = schema.get("logicalType")
        if kind == "record":
            fields = [self.field(f["name"], f["type"], f.get("field-id")) for f in schema["fields"]]
            return pa.struct([f for f in fields if f is not None])
        if kind == "array":
            items = schema["items"]
            if logical == "map":
                return self._pair_map(name, items)
            element = self.field("element", items, schema.get("element-id"))
            if element is None:
                raise self.fail(f"list {name!r} holds only nulls")
            return pa.list_(element)
        if kind == "map":
            key = pa.field("key", pa.string(), False, _meta(schema.get("key-id")))
            value = self.field("value", schema["values"], schema.get("value-id"))
            if value is None:
                raise self.fail(f"map {name!r} holds only nulls")
            return pa.map_(key, value)
        if logical == "decimal" and kind in ("fixed", "bytes"):
            return pa.decimal128(int(schema["precision"]), int(schema.get("scale", 0)))
        if kind == "fixed":
            return pa.binary(int(schema["size"]))
        if kind == "enum":
            raise self.fail(f"field {name!r} is an Avro enum, which Iceberg does not write")
        return self._logical(name, kind, logical, schema)

    def _logical(self, name: str, kind: str, logical: Any, schema: dict[str, Any]) -> pa.DataType:
        if logical is None or kind not in ("int", "long"):
            if kind in _PRIMITIVES:
                return _PRIMITIVES[kind]
            raise CorruptFileError(f"Avro file {self.path}: unknown type {kind!r} of {name!r}")
        if logical == "date" and kind == "int":
            return pa.date32()
        if logical == "time-micros" and kind == "long":
            return pa.time64("us")
        utc = schema.get("adjust-to-utc")
        units = {"timestamp-micros": "us", "timestamp-nanos": "ns"}
        local = {"local-timestamp-micros": "us", "local-timestamp-nanos": "ns"}
        if kind == "long" and logical in units:
            # Iceberg marks `timestamp` (no zone) with adjust-to-utc false.
            zone = None if utc is False or str(utc).lower() == "false" else "UTC"
            return pa.timestamp(units[logical], tz=zone)
        if kind == "long" and logical in local:
            return pa.timestamp(local[logical])
        if logical in ("time-millis", "timestamp-millis", "local-timestamp-millis"):
            raise self.fail(
                f"field {name!r} has Avro logical type {logical}, which Iceberg does not write"
            )
        return _PRIMITIVES[kind]

    def _pair_map(self, name: str, items: Any) -> pa.DataType:
        """A map stored as an array of key/value records (keys other than strings)."""
        if isinstance(items, str):
            items = self.names.get(items, items)
        if not isinstance(items, dict) or len(items.get("fields", [])) != 2:
            raise self.fail(f"map {name!r} is an array of {items!r}, not key/value records")
        self.type(name, items)  # registers the record's name
        k, v = items["fields"]
        key = self.field("key", k["type"], k.get("field-id"))
        value = self.field("value", v["type"], v.get("field-id"))
        if key is None or value is None or key.nullable:
            raise self.fail(f"map {name!r} has a null or optional key")
        return pa.map_(key, value)


def avro_to_arrow_schema(schema_json: str, path: str = "<avro>") -> pa.Schema:
    """The Arrow schema of an Avro data file's writer schema (field ids as
    ``PARQUET:field_id``; fields whose values are always null are left out)."""
    try:
        schema = json.loads(schema_json)
    except ValueError as e:
        raise CorruptFileError(f"Avro file {path}: avro.schema is not JSON: {e}") from e
    conv = _Converter(path)
    try:
        root = conv.type("root", schema)
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptFileError(f"Avro file {path}: invalid avro.schema: {e!r}") from e
    if not pa.types.is_struct(root):
        raise UnsupportedFeatureError(f"cannot read Avro file {path}: its records are not records")
    return pa.schema([root.field(i) for i in range(root.num_fields)])


class AvroFile:
    """One Avro data or delete file opened for reading, its schema labelled with field ids."""

    def __init__(self, path: str, source: pa.NativeFile) -> None:
        self.path = path
        self._data: bytes = source.read()
        schema_json, self.num_rows = _native.avro_file_header(self._data, name=path)
        self.schema = avro_to_arrow_schema(schema_json, path)

    def batches(self, columns: list[str], batch_size: int) -> Iterator[tuple[pa.RecordBatch, int]]:
        """Batches of the top-level ``columns`` (every row, file order) with the file position
        of their first row; the file's row count is checked at the end."""
        schema = pa.schema([self.schema.field(name) for name in columns])
        base = 0
        offset: int | None = 0
        while offset is not None:
            # One batch decoded at a time (the blocks from `offset` up to batch_size rows).
            batch, offset = _native.read_avro_batch(
                self._data, schema, offset=offset, batch_rows=batch_size, name=self.path
            )
            for start in range(0, batch.num_rows, batch_size):
                yield batch.slice(start, batch_size), base + start
            base += batch.num_rows
        if base != self.num_rows:
            raise CorruptFileError(
                f"cannot read data file {self.path}: its blocks gave {base} rows, "
                f"the header's blocks say {self.num_rows}"
            )

    def read(self, columns: list[str]) -> pa.Table:
        """The whole of ``columns`` (delete files)."""
        batches = [b for b, _ in self.batches(columns, 1 << 20)]
        schema = pa.schema([self.schema.field(name) for name in columns])
        return pa.Table.from_batches(batches, schema=schema)


def open_avro(
    io: FileIO, path: str, size: int | None = None, handle: pa.NativeFile | None = None
) -> AvroFile:
    """Opens the Avro file at ``path`` (``handle``: already open; ``size`` from the manifest
    saves object stores a request)."""
    return AvroFile(path, handle if handle is not None else open_file(io, path, size))
