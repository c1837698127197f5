"""Hand-built tables with row-level deletes for the read interop tests and the read benchmark.

Data files are written by pyarrow with field ids; delete files are written as the spec lays
them out (position delete Parquet files with ``file_path``/``pos``, deletion vectors in a Puffin
file written by icefloe's Puffin writer, equality delete Parquet files); manifests, manifest
lists and the metadata file come from :class:`_plan_tables.HandTable` (icefloe's manifest
writer). Each table is readable through its metadata file by icefloe, PyIceberg and DuckDB.

:func:`expected_rows` computes the surviving rows independently of any reader: plain Python
over the generated data and the generated deletes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq

from icefloe.arrow_schema import schema_to_arrow
from icefloe.deletes import DeletionVector
from icefloe.partitioning import PartitionSpec
from icefloe.puffin import PuffinWriter
from icefloe.schema import Schema
from icefloe.types import IntegerType, LongType, NestedField, StringType
from support.avro_files import write_avro
from support.plan_tables import HandTable, entry

SCHEMA = Schema(
    NestedField(1, "id", LongType(), True),
    NestedField(2, "k", IntegerType()),
    NestedField(3, "s", StringType()),
)

_POS_SCHEMA = pa.schema(
    [
        pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": b"2147483546"}),
        pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": b"2147483545"}),
    ]
)


def _orc_field(f: pa.Field) -> pa.Field:
    """``f`` with its field ids where Iceberg's ORC mapping keeps them (``iceberg.id``)."""
    meta = dict(f.metadata or {})
    if b"PARQUET:field_id" in meta:
        meta[b"iceberg.id"] = meta.pop(b"PARQUET:field_id")
    return pa.field(f.name, f.type, f.nullable, meta)


def write_file(t: pa.Table, path: Path, file_format: str, **parquet_args: Any) -> None:
    """``t`` (flat columns with ``PARQUET:field_id``) written as Parquet, ORC or Avro."""
    if file_format == "avro":
        write_avro(t, path, block_rows=parquet_args.get("row_group_size") or 1000)
    elif file_format == "orc":
        orc.write_table(t.cast(pa.schema([_orc_field(f) for f in t.schema])), str(path))
    else:
        pq.write_table(t, str(path), **parquet_args)


@dataclass
class DeleteTable:
    """A built table: its metadata file, the data per file and what was deleted."""

    table: HandTable
    data: list[pa.Table]
    paths: list[str]
    deleted_positions: list[set[int]] = field(default_factory=list)
    deleted_keys: set[tuple[Any, ...]] = field(default_factory=set)
    equality_columns: tuple[str, ...] = ()

    @property
    def metadata_path(self) -> str:
        return self.table.metadata_path

    def expected_rows(self) -> pa.Table:
        """The rows that survive every delete, computed without a reader."""
        parts = []
        for t, deleted in zip(self.data, self.deleted_positions, strict=True):
            keep = np.ones(t.num_rows, dtype=bool)
            if deleted:
                keep[np.fromiter(deleted, dtype=np.int64)] = False
            if self.deleted_keys:
                cols = [t.column(c).to_pylist() for c in self.equality_columns]
                hit = [tuple(v) in self.deleted_keys for v in zip(*cols, strict=True)]
                keep &= ~np.array(hit, dtype=bool)
            parts.append(t.filter(pa.array(keep)))
        return pa.concat_tables(parts)


def checksum(t: pa.Table | pa.RecordBatchReader) -> tuple[int, int]:
    """Row count and an order-independent checksum of the rows (sum of row hashes mod 2^64)."""
    if isinstance(t, pa.RecordBatchReader):
        t = t.read_all()
    total = 0
    names = sorted(t.column_names)
    for row in t.select(names).to_pylist():
        digest = hashlib.sha256(repr(list(row.values())).encode()).digest()
        total = (total + int.from_bytes(digest[:8], "little")) % 2**64
    return t.num_rows, total


def make_data(rng: np.random.Generator, start: int, n: int, keys: int = 50) -> pa.Table:
    """``n`` rows: ``id`` from ``start``, ``k`` a small key with some nulls, ``s`` a string."""
    k = rng.integers(0, keys, n).astype(np.int32)
    k_null = rng.random(n) < 0.05
    words = np.array([f"w{i}" for i in range(20)], dtype=object)
    s = words[rng.integers(0, 20, n)]
    s_null = rng.random(n) < 0.05
    return pa.table(
        [
            pa.array(np.arange(start, start + n, dtype=np.int64)),
            pa.array(k, mask=k_null),
            pa.array(s, pa.string(), mask=s_null),
        ],
        schema=schema_to_arrow(SCHEMA),
    )


def build(
    tmp_path: Path,
    *,
    version: int,
    files: int,
    rows: int,
    dv: float = 0.0,
    pos: float = 0.0,
    eq_keys: list[tuple[Any, ...]] | None = None,
    eq_columns: tuple[str, ...] = ("k",),
    seed: int = 0,
    pos_one_file: bool = False,
    row_group_size: int | None = None,
    file_format: str = "parquet",
) -> DeleteTable:
    """A table of ``files`` data files of ``rows`` rows; a fraction ``dv`` of each file's rows
    deleted by deletion vectors (v3), ``pos`` by position delete files (one per data file, or
    one for all with ``pos_one_file``), and rows whose ``eq_columns`` equal one of ``eq_keys``
    by an equality delete file. Delete files are committed in a later snapshot. Data, position
    and equality delete files are ``file_format`` files (``parquet``, ``orc`` or ``avro``)."""
    ext, fmt = file_format, file_format.upper()
    rng = np.random.default_rng(seed)
    table = HandTable(tmp_path, SCHEMA, [PartitionSpec()], version)
    data, paths, data_entries = [], [], []
    for f in range(files):
        t = make_data(rng, f * rows, rows)
        path = tmp_path / f"data-{f}.{ext}"
        kw: dict[str, Any] = {}
        if row_group_size:
            kw["row_group_size"] = row_group_size
        write_file(t, path, file_format, **kw)
        data.append(t)
        paths.append(str(path))
        data_entries.append(
            entry(
                str(path),
                record_count=rows,
                file_size_in_bytes=path.stat().st_size,
                file_format=fmt,
            )
        )
    table.commit([(0, 0, data_entries)])
    deleted: list[set[int]] = [set() for _ in range(files)]
    delete_entries: list[dict[str, Any]] = []
    if dv:
        if version < 3:
            raise ValueError("deletion vectors need format version 3")
        writer = PuffinWriter()
        blobs = []
        for f in range(files):
            chosen = rng.choice(rows, int(rows * dv), replace=False)
            if not len(chosen):
                continue
            deleted[f].update(int(p) for p in chosen)
            vector = DeletionVector.from_positions(np.sort(chosen).astype(np.int64))
            blobs.append((f, writer.add_deletion_vector(vector, paths[f]), len(chosen)))
        puffin = writer.finish()
        puffin_path = tmp_path / "deletes.puffin"
        puffin_path.write_bytes(puffin.data)
        for f, blob, card in blobs:
            delete_entries.append(
                entry(
                    str(puffin_path),
                    content=1,
                    file_format="PUFFIN",
                    record_count=card,
                    file_size_in_bytes=len(puffin.data),
                    referenced_data_file=paths[f],
                    content_offset=blob.offset,
                    content_size_in_bytes=blob.length,
                )
            )
    if pos:
        groups: list[list[tuple[str, int]]] = []
        for f in range(files):
            chosen = rng.choice(rows, int(rows * pos), replace=False)
            fresh = [int(p) for p in chosen if int(p) not in deleted[f]]
            deleted[f].update(fresh)
            pairs = [(paths[f], p) for p in sorted(fresh)]
            if pos_one_file and groups:
                groups[0].extend(pairs)
            else:
                groups.append(pairs)
        for g, pairs in enumerate(groups):
            if not pairs:
                continue
            pairs.sort()
            path = tmp_path / f"pos-{g}.{ext}"
            write_file(
                pa.table(
                    [
                        pa.array([p[0] for p in pairs], pa.string()),
                        pa.array([p[1] for p in pairs], pa.int64()),
                    ],
                    schema=_POS_SCHEMA,
                ),
                path,
                file_format,
            )
            referenced = {p[0] for p in pairs}
            extra = {"referenced_data_file": pairs[0][0]} if len(referenced) == 1 else {}
            delete_entries.append(
                entry(
                    str(path),
                    content=1,
                    record_count=len(pairs),
                    file_size_in_bytes=path.stat().st_size,
                    file_format=fmt,
                    **extra,
                )
            )
    keys: set[tuple[Any, ...]] = set()
    if eq_keys:
        by_name = {f.name: f for f in SCHEMA.fields}
        sub = Schema(*[by_name[c] for c in eq_columns])
        keys = {tuple(k) for k in eq_keys}
        rows_eq = [dict(zip(eq_columns, k, strict=True)) for k in sorted(keys, key=repr)]
        path = tmp_path / f"eq.{ext}"
        write_file(pa.Table.from_pylist(rows_eq, schema=schema_to_arrow(sub)), path, file_format)
        delete_entries.append(
            entry(
                str(path),
                file_format=fmt,
                content=2,
                record_count=len(rows_eq),
                file_size_in_bytes=path.stat().st_size,
                equality_ids=[by_name[c].field_id for c in eq_columns],
            )
        )
    if delete_entries:
        table.commit([(0, 1, delete_entries)])
    return DeleteTable(table, data, paths, deleted, keys, tuple(eq_columns) if keys else ())
