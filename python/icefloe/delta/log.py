"""The Delta log of a table: listing, commits, snapshots at a version or a point in time.

::

    from icefloe.delta import DeltaLog

    log = DeltaLog("/data/events")          # any icefloe FileIO location (file://, s3://, ...)
    snap = log.snapshot()                   # latest; or version=7, or timestamp_ms=...
    snap.files                              # live add actions as Arrow (see actions.py)
    snap.protocol, snap.metadata            # DeltaProtocol, DeltaMetadata
    snap.row_id_high_water_mark             # row tracking, or None
    for c in log.commits(5, 9): ...         # DeltaCommit per JSON commit

The newest complete checkpoint at or below the wanted version is read (``_last_checkpoint`` is
only a hint, as the protocol says), then the JSON commits after it, which must all exist: a gap
is a :class:`~icefloe.exceptions.DeltaLogError` naming the missing file. Reader features outside
:data:`~icefloe.delta.protocol.SUPPORTED_READER_FEATURES` are refused.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from icefloe.delta.actions import FILE_ACTIONS, file_actions_from_dicts
from icefloe.delta.checkpoint import CheckpointRef, read_checkpoint
from icefloe.delta.protocol import DeltaMetadata, DeltaProtocol, check_readable
from icefloe.delta.replay import live_files
from icefloe.exceptions import (
    DeltaLogError,
    IcebergError,
    NoSuchSnapshotError,
    NoSuchTableError,
    NotFoundError,
)
from icefloe.io import FileIO

__all__ = ["DeltaCommit", "DeltaLog", "DeltaSnapshot"]

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CLASSIC = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTI = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_V2 = re.compile(r"^(\d{20})\.checkpoint\.[0-9a-fA-F-]{36}\.(json|parquet)$")
ROW_TRACKING_DOMAIN = "delta.rowTracking"


def _name(version: int) -> str:
    return f"{version:020d}.json"


#: What a malformed action can make the commit parsing raise beyond its own checks.
_UNEXPECTED = (
    ArithmeticError,
    AttributeError,
    LookupError,
    RecursionError,
    TypeError,
    ValueError,
    pa.ArrowException,
)


def _loads_line(line: str, path: str) -> Any:
    """One action line of the commit file ``path``; a line that is not JSON, or JSON the
    parser cannot take (nested too deeply, an integer literal too long to convert), is a
    :class:`DeltaLogError` naming the file."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as e:
        raise DeltaLogError(f"corrupt Delta commit file {path}: {e}", path) from e
    except RecursionError as e:
        raise DeltaLogError(
            f"corrupt Delta commit file {path}: an action is nested too deeply", path
        ) from e
    except ValueError as e:  # e.g. an integer literal beyond the interpreter's digit limit
        raise DeltaLogError(f"corrupt Delta commit file {path}: {e}", path) from e


@dataclass
class DeltaCommit:
    """One JSON commit: its file actions (:data:`FILE_ACTIONS`) and table-level actions."""

    version: int
    timestamp_ms: int
    files: pa.Table
    protocol: DeltaProtocol | None = None
    metadata: DeltaMetadata | None = None
    commit_info: dict[str, Any] = field(default_factory=dict)
    domains: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def operation(self) -> str | None:
        op = self.commit_info.get("operation")
        return str(op) if op is not None else None


@dataclass
class DeltaSnapshot:
    """The table at one version: live files, protocol, metadata, domains, timestamp."""

    table: str
    version: int
    timestamp_ms: int
    protocol: DeltaProtocol
    metadata: DeltaMetadata
    files: pa.Table
    domains: dict[str, dict[str, Any]]
    checkpoint: CheckpointRef | None

    @property
    def row_id_high_water_mark(self) -> int | None:
        """The highest row id Delta assigned (``delta.rowTracking`` domain), or None."""
        d = self.domains.get(ROW_TRACKING_DOMAIN)
        if d is None or d.get("removed"):
            return None
        try:
            return int(json.loads(d["configuration"])["rowIdHighWaterMark"])
        except (KeyError, TypeError, ValueError) as e:
            raise DeltaLogError(
                f"Delta table {self.table}: malformed {ROW_TRACKING_DOMAIN} domain {d!r}"
            ) from e


@dataclass
class _Listing:
    commits: dict[int, str]
    checkpoints: dict[int, list[CheckpointRef]]
    mtimes: dict[int, int]


def _file_action(action: dict[str, Any], kind: str, path: str) -> dict[str, Any]:
    """The ``add`` or ``remove`` payload of ``action``, refused (:class:`DeltaLogError`) when
    it is not an object with a non-empty ``path``."""
    body = action[kind]
    if not isinstance(body, dict) or not isinstance(body.get("path"), str) or not body["path"]:
        raise DeltaLogError(
            f"corrupt Delta commit file {path}: an {kind} action without a file path", path
        )
    return body


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def absolute_location(location: str) -> str:
    """``location`` without a trailing slash, a relative local path made absolute (against the
    working directory): every location stored from it (the Iceberg table's, its data and
    metadata files) must hold wherever it is read from. URIs (``file://``, ``s3://``, Hadoop's
    ``file:/``) are kept as they are."""
    if location and not _SCHEME.match(location) and not location.startswith("/"):
        location = os.path.abspath(location)
    return location.rstrip("/") or location


class DeltaLog:
    """The ``_delta_log`` of the Delta table at ``location``."""

    def __init__(
        self,
        location: str,
        io: FileIO | None = None,
        properties: dict[str, str] | None = None,
    ) -> None:
        self.location = absolute_location(location)
        self.log_dir = f"{self.location}/_delta_log"
        self.io = io if io is not None else FileIO(dict(properties or {}))
        self._listing: _Listing | None = None

    def __repr__(self) -> str:
        return f"DeltaLog({self.location!r})"

    # -- listing --------------------------------------------------------------------------------
    def refresh(self) -> DeltaLog:
        """Forget the cached listing (the next call lists ``_delta_log`` again)."""
        self._listing = None
        return self

    def _list(self) -> _Listing:
        if self._listing is not None:
            return self._listing
        commits: dict[int, str] = {}
        mtimes: dict[int, int] = {}
        multi: dict[tuple[int, int], dict[int, str]] = {}
        checkpoints: dict[int, list[CheckpointRef]] = {}
        found = False
        for info in self.io.list_prefix(self.log_dir):
            found = True
            rel = info.location[len(self.log_dir) + 1 :]
            if "/" in rel:
                continue  # _sidecars/, _staged_commits/
            if m := _COMMIT.match(rel):
                v = int(m.group(1))
                commits[v] = info.location
                mtimes[v] = info.modified_ms or 0
            elif m := _CLASSIC.match(rel):
                v = int(m.group(1))
                checkpoints.setdefault(v, []).append(CheckpointRef(v, "classic", (info.location,)))
            elif m := _MULTI.match(rel):
                v, part, parts = int(m.group(1)), int(m.group(2)), int(m.group(3))
                multi.setdefault((v, parts), {})[part] = info.location
            elif m := _V2.match(rel):
                v = int(m.group(1))
                checkpoints.setdefault(v, []).append(CheckpointRef(v, "v2", (info.location,)))
        for (v, parts), got in multi.items():
            if sorted(got) == list(range(1, parts + 1)):  # incomplete ones are unusable
                ref = CheckpointRef(v, "multi-part", tuple(got[i] for i in sorted(got)))
                checkpoints.setdefault(v, []).append(ref)
        if not found:
            raise NoSuchTableError(f"{self.location} is not a Delta table (no _delta_log)")
        self._listing = _Listing(commits, checkpoints, mtimes)
        return self._listing

    def latest_version(self) -> int:
        """The newest version in the log."""
        listing = self._list()
        versions = list(listing.commits) + list(listing.checkpoints)
        if not versions:
            raise NoSuchTableError(f"{self.location} is not a Delta table (empty _delta_log)")
        return max(versions)

    def earliest_version(self) -> int:
        """The oldest version that can be reconstructed (a checkpoint or commit 0)."""
        listing = self._list()
        candidates = [v for v in listing.checkpoints]
        if 0 in listing.commits:
            candidates.append(0)
        if not candidates:
            raise DeltaLogError(
                f"Delta table {self.location}: neither commit 0 nor any checkpoint exists",
                f"{self.log_dir}/{_name(0)}",
            )
        return min(candidates)

    def has_commits(self, start: int, end: int) -> bool:
        """Whether every JSON commit in ``[start, end]`` still exists."""
        listing = self._list()
        return all(v in listing.commits for v in range(start, end + 1))

    def last_checkpoint_hint(self) -> dict[str, Any] | None:
        """The parsed ``_last_checkpoint`` file, or None when it is absent or unreadable."""
        try:
            raw = self.io.new_input(f"{self.log_dir}/_last_checkpoint").read()
            parsed = json.loads(raw)
        except (NotFoundError, ValueError, RecursionError):
            return None
        return parsed if isinstance(parsed, dict) else None

    # -- commits --------------------------------------------------------------------------------
    def _read_commit(self, version: int, order_start: int) -> DeltaCommit:
        listing = self._list()
        path = listing.commits.get(version)
        if path is None:
            missing = f"{self.log_dir}/{_name(version)}"
            raise DeltaLogError(
                f"Delta table {self.location}: commit file {missing} is missing", missing
            )
        try:
            text = self.io.new_input(path).read().decode("utf-8")
            actions = [_loads_line(line, path) for line in text.splitlines() if line.strip()]
        except NotFoundError as e:
            raise DeltaLogError(f"commit file {path} disappeared", path) from e
        except UnicodeDecodeError as e:
            raise DeltaLogError(f"corrupt Delta commit file {path}: {e}", path) from e
        try:
            return self._commit_from_actions(version, order_start, path, actions)
        except IcebergError:
            raise
        except _UNEXPECTED as e:
            # A last guard: the checks above name what they refuse; anything they missed in
            # this file's actions is still a corrupt commit, not a crash of the reader.
            raise DeltaLogError(
                f"corrupt Delta commit file {path}: {type(e).__name__}: {e}", path
            ) from e

    def _commit_from_actions(
        self, version: int, order_start: int, path: str, actions: list[Any]
    ) -> DeltaCommit:
        listing = self._list()
        files: list[tuple[bool, dict[str, Any]]] = []
        commit = DeltaCommit(version, listing.mtimes.get(version, 0), FILE_ACTIONS.empty_table())
        for a in actions:
            if not isinstance(a, dict):
                raise DeltaLogError(f"corrupt Delta commit file {path}: {a!r}", path)
            if "add" in a:
                files.append((True, _file_action(a, "add", path)))
            elif "remove" in a:
                files.append((False, _file_action(a, "remove", path)))
            elif "metaData" in a:
                commit.metadata = DeltaMetadata.from_action(a["metaData"], path)
            elif "protocol" in a:
                commit.protocol = DeltaProtocol.from_action(a["protocol"], path)
            elif "commitInfo" in a:
                info = a["commitInfo"]
                if info is not None and not isinstance(info, dict):
                    raise DeltaLogError(
                        f"corrupt Delta commit file {path}: commitInfo is not an object", path
                    )
                commit.commit_info = info or {}
            elif "domainMetadata" in a:
                d = a["domainMetadata"]
                if not isinstance(d, dict) or not isinstance(d.get("domain"), str):
                    raise DeltaLogError(
                        f"corrupt Delta commit file {path}: a domainMetadata action without "
                        "its domain",
                        path,
                    )
                commit.domains[d["domain"]] = d
        ict = commit.commit_info.get("inCommitTimestamp")
        if isinstance(ict, int):
            commit.timestamp_ms = ict
        try:
            commit.files = file_actions_from_dicts(files, version, order_start)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
            raise DeltaLogError(f"corrupt Delta commit file {path}: {e}", path) from e
        return commit

    def _commit_timestamp(self, version: int) -> int:
        """Commit ``version``'s timestamp without replaying its actions: the in-commit
        timestamp of its ``commitInfo`` when it has one, else the commit file's modification
        time (0 when the file is gone)."""
        listing = self._list()
        mtime = listing.mtimes.get(version, 0)
        path = listing.commits.get(version)
        if path is None:
            return mtime
        try:
            text = self.io.new_input(path).read().decode("utf-8")
        except NotFoundError:
            return mtime
        except UnicodeDecodeError as e:
            raise DeltaLogError(f"corrupt Delta commit file {path}: {e}", path) from e
        for line in text.splitlines():
            if '"commitInfo"' not in line:
                continue  # only the commitInfo line is parsed
            action = _loads_line(line, path)
            info = action.get("commitInfo") if isinstance(action, dict) else None
            if isinstance(info, dict):
                ict = info.get("inCommitTimestamp")
                if isinstance(ict, int) and not isinstance(ict, bool):
                    return ict
                break
        return mtime

    def commit(self, version: int) -> DeltaCommit:
        """The JSON commit ``version`` (:class:`DeltaLogError` when its file is gone)."""
        return self._read_commit(version, 0)

    def commits(self, start: int, end: int | None = None) -> Iterator[DeltaCommit]:
        """The JSON commits ``start..end`` (inclusive; default: up to the latest)."""
        end = self.latest_version() if end is None else end
        for v in range(start, end + 1):
            yield self._read_commit(v, 0)

    def metadata_before(self, version: int, after: int = -1) -> Iterator[tuple[int, DeltaMetadata]]:
        """The ``metaData`` actions of the JSON commits before ``version`` (and after
        ``after``) that still exist, newest first (only those lines are parsed)."""
        listing = self._list()
        for v in sorted((c for c in listing.commits if after < c < version), reverse=True):
            path = listing.commits[v]
            try:
                text = self.io.new_input(path).read().decode("utf-8")
            except NotFoundError:
                continue  # cleaned up meanwhile: older schemas are best effort
            except UnicodeDecodeError as e:
                raise DeltaLogError(f"corrupt Delta commit file {path}: {e}", path) from e
            for line in text.splitlines():
                if '"metaData"' not in line:
                    continue
                action = _loads_line(line, path)
                if isinstance(action, dict) and isinstance(action.get("metaData"), dict):
                    yield v, DeltaMetadata.from_action(action["metaData"], path)

    def metadata_at(self, version: int) -> DeltaMetadata:
        """The ``metaData`` in effect at ``version`` (its ``id`` names the table): the newest
        one among the JSON commits after the checkpoint a snapshot would start from, else the
        checkpoint's. Reads at most those commits' files and the checkpoint."""
        ref = self._checkpoint_for(version)
        floor = ref.version if ref is not None else -1
        for _, meta in self.metadata_before(version + 1, after=floor):
            return meta
        if ref is None:
            raise DeltaLogError(
                f"Delta table {self.location}: no metaData action up to version {version}",
                self.log_dir,
            )
        content = read_checkpoint(self.io, self.log_dir, ref, json_stats=False)
        return DeltaMetadata.from_action(content.metadata or {}, ref.files[0])

    def commit_timestamp(self, version: int) -> int:
        """Commit ``version``'s timestamp as snapshots and commits report it (its in-commit
        timestamp, else its file's modification time; 0 when the file is gone)."""
        return self._commit_timestamp(version)

    # -- snapshots ------------------------------------------------------------------------------
    def _checkpoint_for(self, version: int) -> CheckpointRef | None:
        listing = self._list()
        usable = [v for v in listing.checkpoints if v <= version]
        if not usable:
            return None
        refs = listing.checkpoints[max(usable)]
        # Prefer a v2 checkpoint, then classic, then multi-part (all describe the same state).
        rank = {"v2": 0, "classic": 1, "multi-part": 2}
        return sorted(refs, key=lambda r: rank[r.kind])[0]

    def snapshot(
        self,
        version: int | None = None,
        *,
        timestamp_ms: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        json_stats: bool = True,
    ) -> DeltaSnapshot:
        """The table at ``version`` (default: latest) or as of ``timestamp_ms`` (the newest
        commit at or before it). ``progress(done, total)`` is called as commits are read.
        ``json_stats=False`` leaves the ``stats`` text of checkpoint files null where the
        checkpoint has every file's typed ``stats_parsed`` (much less to read)."""
        if version is not None and timestamp_ms is not None:
            raise ValueError("give version or timestamp_ms, not both")
        if timestamp_ms is not None:
            version = self.version_at(timestamp_ms)
        latest = self.latest_version()
        if version is None:
            version = latest
        if version < 0 or version > latest:
            raise NoSuchSnapshotError(
                f"Delta table {self.location} has no version {version} (latest is {latest})"
            )
        ref = self._checkpoint_for(version)
        protocol: DeltaProtocol | None = None
        metadata: DeltaMetadata | None = None
        domains: dict[str, dict[str, Any]] = {}
        parts: list[pa.Table] = []
        base = FILE_ACTIONS.empty_table()
        start = 0
        order = 0
        if ref is not None:
            content = read_checkpoint(self.io, self.log_dir, ref, json_stats=json_stats)
            protocol = DeltaProtocol.from_action(content.protocol or {}, ref.files[0])
            metadata = DeltaMetadata.from_action(content.metadata or {}, ref.files[0])
            domains.update(content.domains)
            base = content.files
            order = content.files.num_rows
            start = ref.version + 1
        # at the checkpoint's version no commit is replayed: its timestamp is still the commit's
        timestamp = self._commit_timestamp(version) if start > version else 0
        total = version - start + 1
        for i, v in enumerate(range(start, version + 1)):
            c = self._read_commit(v, order)
            order += c.files.num_rows
            parts.append(c.files)
            protocol = c.protocol or protocol
            metadata = c.metadata or metadata
            domains.update(c.domains)
            timestamp = c.timestamp_ms
            if progress is not None:
                progress(i + 1, total)
        if protocol is None or metadata is None:
            raise DeltaLogError(
                f"Delta table {self.location}: no protocol or metaData action up to version "
                f"{version}",
                self.log_dir,
            )
        check_readable(protocol, self.location)
        actions = pa.concat_tables(parts) if parts else FILE_ACTIONS.empty_table()
        live = {k: d for k, d in domains.items() if not d.get("removed")}
        return DeltaSnapshot(
            self.location,
            version,
            timestamp,
            protocol,
            metadata,
            live_files(base, actions),
            live,
            ref,
        )

    def version_at(self, timestamp_ms: int) -> int:
        """The newest version committed at or before ``timestamp_ms`` (in-commit timestamps
        when the commits carry them, else the commit files' modification times)."""
        listing = self._list()
        best: int | None = None
        for v in sorted(listing.commits):
            ts = self._read_commit(v, 0).timestamp_ms
            if ts <= timestamp_ms:
                best = v
            else:
                break
        if best is None:
            raise NoSuchSnapshotError(
                f"Delta table {self.location} has no commit at or before {timestamp_ms} ms"
            )
        return best
