"""Delta checkpoints: classic (``N.checkpoint.parquet``), multi-part
(``N.checkpoint.i.k.parquet``) and v2 (``N.checkpoint.<uuid>.json|parquet`` with sidecars in
``_delta_log/_sidecars/``), read into :data:`~icefloe.delta.actions.FILE_ACTIONS` plus the
table-level actions (protocol, metaData, domainMetadata).

Parquet checkpoints are read column-wise with pyarrow, projecting only the actions replay
needs; a file that cannot be read is a :class:`~icefloe.exceptions.DeltaLogError` naming it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from icefloe.delta.actions import FILE_ACTIONS, file_actions_from_dicts, normalize
from icefloe.exceptions import DeltaLogError, FileIOError, NotFoundError
from icefloe.io import FileIO

__all__ = ["CheckpointContent", "CheckpointRef", "read_checkpoint"]

# An absolute sidecar path: from the root, or a URI (s3://..., Hadoop's file:/...).
_ABSOLUTE = re.compile(r"/|[A-Za-z][A-Za-z0-9+.\-]*:/")
_COLUMNS = ("add", "metaData", "protocol", "domainMetadata", "sidecar")


@dataclass(frozen=True)
class CheckpointRef:
    """One checkpoint of the log: its version, kind and files (all parts for multi-part)."""

    version: int
    kind: str  # "classic", "multi-part" or "v2"
    files: tuple[str, ...]


@dataclass
class CheckpointContent:
    """What a checkpoint holds: file actions and the last table-level actions."""

    files: pa.Table
    protocol: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    domains: dict[str, dict[str, Any]] = field(default_factory=dict)


def _columns_without_json_stats(schema: pa.Schema, names: list[str]) -> list[str] | None:
    """The columns to read when ``add`` carries ``stats_parsed``: every ``add`` field but the
    statistics as JSON text, by far the largest column (None when there is no such choice)."""
    if "add" not in names:
        return None
    add = schema.field("add").type
    if not pa.types.is_struct(add) or add.get_field_index("stats_parsed") < 0:
        return None
    if add.get_field_index("stats") < 0:
        return None
    kept = [f"add.{f.name}" for f in add if f.name != "stats"]
    return kept + [c for c in names if c != "add"]


def _read_parquet(io: FileIO, path: str, json_stats: bool = True) -> pa.Table:
    try:
        with io.new_input(path).open() as f:
            pf = pq.ParquetFile(f)
            names = [c for c in _COLUMNS if c in pf.schema_arrow.names]
            lean = None if json_stats else _columns_without_json_stats(pf.schema_arrow, names)
            if lean is not None:
                t = pf.read(columns=lean)
                add = t.column("add")
                parsed = pc.struct_field(add, "stats_parsed")
                if parsed.null_count == add.null_count:  # every add has typed statistics
                    return t
            return pf.read(columns=names)
    except NotFoundError as e:
        raise DeltaLogError(f"checkpoint file {path} does not exist", path) from e
    except FileIOError:
        raise
    except (OSError, pa.ArrowException, ValueError) as e:
        raise DeltaLogError(f"corrupt Delta checkpoint {path}: {e}", path) from e


def _struct_rows(table: pa.Table, column: str) -> list[dict[str, Any]]:
    """The non-null values of a (small) action column as dicts."""
    if column not in table.column_names:
        return []
    col = table.column(column)
    return [r for r in col.filter(col.is_valid()).to_pylist() if r is not None]


def _map_dict(value: Any) -> dict[str, str]:
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    return dict(value or [])  # pyarrow returns maps as lists of pairs


def _table_actions(table: pa.Table, out: CheckpointContent) -> None:
    for p in _struct_rows(table, "protocol"):
        out.protocol = p
    for m in _struct_rows(table, "metaData"):
        m = dict(m)
        m["configuration"] = _map_dict(m.get("configuration"))
        out.metadata = m
    for d in _struct_rows(table, "domainMetadata"):
        out.domains[d["domain"]] = d


def _read_json(io: FileIO, path: str) -> list[dict[str, Any]]:
    try:
        text = io.new_input(path).read().decode("utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except NotFoundError as e:
        raise DeltaLogError(f"checkpoint file {path} does not exist", path) from e
    except (UnicodeDecodeError, ValueError, RecursionError) as e:  # JSONDecodeError included
        raise DeltaLogError(f"corrupt Delta checkpoint {path}: {e}", path) from e


def _from_parquet_tables(
    tables: list[tuple[str, pa.Table]], version: int, out: CheckpointContent
) -> list[pa.Table]:
    parts: list[pa.Table] = []
    order = 0
    for path, t in tables:
        try:
            _table_actions(t, out)
            # Removes in a checkpoint are tombstones for VACUUM: replay needs only the adds.
            if "add" in t.column_names:
                part = normalize(t.column("add"), is_add=True, version=version, order_start=order)
                order += part.num_rows
                parts.append(part)
        except (pa.ArrowException, KeyError, TypeError) as e:
            raise DeltaLogError(f"corrupt Delta checkpoint {path}: {e}", path) from e
    return parts


def _body(action: dict[str, Any], kind: str, path: str) -> dict[str, Any]:
    body = action[kind]
    if not isinstance(body, dict):
        raise DeltaLogError(
            f"corrupt Delta checkpoint {path}: a {kind} action that is not an object", path
        )
    return body


def _sidecar_path(body: dict[str, Any], path: str) -> str:
    rel = body.get("path")
    if not isinstance(rel, str) or not rel:
        raise DeltaLogError(f"corrupt Delta checkpoint {path}: a sidecar without a path", path)
    return rel


def _json_action(
    action: Any,
    path: str,
    out: CheckpointContent,
    json_actions: list[tuple[bool, dict[str, Any]]],
    sidecars: list[str],
) -> None:
    """One action line of a v2 JSON checkpoint, its shape checked (a malformed one is a
    :class:`DeltaLogError` naming the file)."""
    if not isinstance(action, dict):
        raise DeltaLogError(
            f"corrupt Delta checkpoint {path}: an action line that is not an object", path
        )
    if "add" in action:
        json_actions.append((True, _body(action, "add", path)))
    elif "protocol" in action:
        out.protocol = _body(action, "protocol", path)
    elif "metaData" in action:
        out.metadata = _body(action, "metaData", path)
    elif "domainMetadata" in action:
        body = _body(action, "domainMetadata", path)
        domain = body.get("domain")
        if not isinstance(domain, str):
            raise DeltaLogError(
                f"corrupt Delta checkpoint {path}: a domainMetadata action without a domain",
                path,
            )
        out.domains[domain] = body
    elif "sidecar" in action:
        sidecars.append(_sidecar_path(_body(action, "sidecar", path), path))


def read_checkpoint(
    io: FileIO, log_dir: str, ref: CheckpointRef, json_stats: bool = True
) -> CheckpointContent:
    """Every action of the checkpoint ``ref`` (sidecars included); ``json_stats=False`` skips
    the files' ``stats`` text where every file has the typed ``stats_parsed``."""
    out = CheckpointContent(FILE_ACTIONS.empty_table())
    sidecars: list[str] = []
    tables: list[tuple[str, pa.Table]] = []
    json_actions: list[tuple[bool, dict[str, Any]]] = []
    for path in ref.files:
        if path.endswith(".json"):
            for action in _read_json(io, path):
                _json_action(action, path, out, json_actions, sidecars)
        else:
            t = _read_parquet(io, path, json_stats)
            tables.append((path, t))
            sidecars += [_sidecar_path(s, path) for s in _struct_rows(t, "sidecar")]
    for rel in sidecars:
        sc = rel if _ABSOLUTE.match(rel) else f"{log_dir}/_sidecars/{rel}"
        tables.append((sc, _read_parquet(io, sc, json_stats)))
    parts = _from_parquet_tables(tables, ref.version, out)
    if json_actions:
        start = sum(p.num_rows for p in parts)
        try:
            parts.append(file_actions_from_dicts(json_actions, ref.version, start))
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
            where = ref.files[0]
            raise DeltaLogError(f"corrupt Delta checkpoint {where}: {e}", where) from e
    if parts:
        out.files = pa.concat_tables(parts, promote_options="permissive")
    if out.protocol is None or out.metadata is None:
        missing = "protocol" if out.protocol is None else "metaData"
        raise DeltaLogError(
            f"corrupt Delta checkpoint {ref.files[0]}: it has no {missing} action", ref.files[0]
        )
    return out
