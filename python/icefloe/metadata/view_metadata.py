"""View metadata (the Iceberg view spec, format version 1): versions of a SQL query with the
schema it returns, a version log, properties, and the REST catalog's view updates.

:class:`ViewMetadataBuilder` applies changes with the reference's rules: a version equal to an
existing one (same query representations, schema, default catalog and namespace, summary) reuses
that version's id, else it gets the highest id + 1; a schema equal to an existing one reuses its
id; a version names each SQL dialect at most once (case-insensitively); replacing the current
version may not drop a dialect unless ``replace.drop-dialect.allowed=true``; at most
``version.history.num-entries`` versions (10 by default) are kept, always the current one and
the ones added in the same change, and the version log is cut before any version no longer kept.
Each change is recorded as the update a REST client sends for it.
"""

from __future__ import annotations

import gzip
import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from icefloe.exceptions import CommitFailedError, UnsupportedFeatureError, ValidationError
from icefloe.metadata._json import (
    compact,
    get_int,
    get_int32,
    get_list,
    get_object,
    get_str,
    get_str_map,
    opt_str,
    opt_str_map,
    parse_document,
    require_object,
)
from icefloe.metadata.updates import (
    AddSchema,
    AssignUUID,
    RemoveProperties,
    SetLocation,
    SetProperties,
    TableUpdate,
    UpgradeFormatVersion,
)
from icefloe.schema import Schema

__all__ = [
    "REPLACE_DROP_DIALECT_ALLOWED",
    "SUPPORTED_VIEW_FORMAT_VERSION",
    "VERSION_HISTORY_SIZE",
    "AddViewVersion",
    "AssertViewUUID",
    "SQLRepresentation",
    "SetCurrentViewVersion",
    "UnknownRepresentation",
    "ViewHistoryEntry",
    "ViewMetadata",
    "ViewMetadataBuilder",
    "ViewVersion",
    "apply_view_updates",
    "view_requirement_from_json",
    "view_update_from_json",
]

SUPPORTED_VIEW_FORMAT_VERSION = 1
#: How many versions a view keeps (the current one and the newest others).
VERSION_HISTORY_SIZE = "version.history.num-entries"
VERSION_HISTORY_SIZE_DEFAULT = 10
#: Whether a new version may leave out a SQL dialect the current version has.
REPLACE_DROP_DIALECT_ALLOWED = "replace.drop-dialect.allowed"
LAST_ADDED = -1


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# -- representations and versions --------------------------------------------------------------
@dataclass(frozen=True)
class SQLRepresentation:
    """A view's query in one SQL dialect (``spark``, ``trino``, ``duckdb``, ...)."""

    sql: str
    dialect: str
    type: ClassVar[str] = "sql"

    def to_json(self) -> dict[str, Any]:
        return {"type": "sql", "sql": self.sql, "dialect": self.dialect}


@dataclass(frozen=True)
class UnknownRepresentation:
    """A representation of a type this library does not know, kept as it was written (two
    are equal when all they hold is: a version with another plan is another version)."""

    type: str
    raw: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def to_json(self) -> dict[str, Any]:
        return dict(self.raw) or {"type": self.type}


Representation = SQLRepresentation | UnknownRepresentation


def _representation_from_json(obj: Any) -> Representation:
    m = require_object(obj, "view representation")
    kind = get_str(m, "type", "view representation").lower()
    if kind == "sql":
        return SQLRepresentation(
            get_str(m, "sql", "sql representation"), get_str(m, "dialect", "sql representation")
        )
    return UnknownRepresentation(kind, dict(m))


def _strings(values: Mapping[str, str], what: str) -> dict[str, str]:
    """``values`` as a dict, after checking every key and value is a string (metadata files
    hold string maps: anything else would make a file no reader accepts)."""
    out = dict(values)
    for k, v in out.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ValidationError(f"{what} must map strings to strings, got {k!r}: {v!r}")
    return out


def _dialects(representations: Iterable[Representation]) -> list[str]:
    return [r.dialect.lower() for r in representations if isinstance(r, SQLRepresentation)]


@dataclass(frozen=True)
class ViewVersion:
    """One version of a view: its query (in one or more dialects) and the schema it returns.

    ``default_namespace`` and ``default_catalog`` resolve unqualified names in the query.
    """

    version_id: int
    timestamp_ms: int
    schema_id: int
    summary: Mapping[str, str]
    representations: tuple[Representation, ...]
    default_namespace: tuple[str, ...]
    default_catalog: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "summary", _strings(self.summary, "view version summary"))
        object.__setattr__(self, "representations", tuple(self.representations))
        namespace = tuple(self.default_namespace)
        if not all(isinstance(p, str) and p for p in namespace):
            raise ValidationError(
                f"a view's default namespace must be non-empty strings, got {list(namespace)!r}"
            )
        object.__setattr__(self, "default_namespace", namespace)
        if self.default_catalog is not None and not isinstance(self.default_catalog, str):
            raise ValidationError(
                f"a view's default catalog must be a string, got {self.default_catalog!r}"
            )

    def sql(self, dialect: str) -> str | None:
        """The query in ``dialect`` (case-insensitive), or None if this version has none."""
        if not isinstance(dialect, str):
            raise ValidationError(f"a dialect is a name, got {dialect!r}")
        for r in self.representations:
            if isinstance(r, SQLRepresentation) and r.dialect.lower() == dialect.lower():
                return r.sql
        return None

    @property
    def dialects(self) -> list[str]:
        """The SQL dialects this version has a query in, as written."""
        return [r.dialect for r in self.representations if isinstance(r, SQLRepresentation)]

    def same_as(self, other: ViewVersion) -> bool:
        """Equal but for the id and timestamp (the reference's test for reusing a version)."""
        return (
            self.summary == other.summary
            and self.representations == other.representations
            and self.default_catalog == other.default_catalog
            and self.default_namespace == other.default_namespace
            and self.schema_id == other.schema_id
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version-id": self.version_id,
            "timestamp-ms": self.timestamp_ms,
            "schema-id": self.schema_id,
            "summary": dict(self.summary),
        }
        if self.default_catalog is not None:
            out["default-catalog"] = self.default_catalog
        out["default-namespace"] = list(self.default_namespace)
        out["representations"] = [r.to_json() for r in self.representations]
        return out

    @staticmethod
    def from_json(obj: Any) -> ViewVersion:
        w = "view version"
        m = require_object(obj, w)
        namespace = get_list(m, "default-namespace", w)
        if not all(isinstance(p, str) for p in namespace):
            raise ValidationError(f"{w}: default-namespace must be a list of strings")
        return ViewVersion(
            version_id=get_int32(m, "version-id", w),
            timestamp_ms=get_int(m, "timestamp-ms", w),
            schema_id=get_int32(m, "schema-id", w),
            summary=get_str_map(m, "summary", w),
            representations=tuple(
                _representation_from_json(r) for r in get_list(m, "representations", w)
            ),
            default_namespace=tuple(namespace),
            default_catalog=opt_str(m, "default-catalog", w),
        )


@dataclass(frozen=True)
class ViewHistoryEntry:
    """When a version became the current one."""

    timestamp_ms: int
    version_id: int

    def to_json(self) -> dict[str, Any]:
        return {"timestamp-ms": self.timestamp_ms, "version-id": self.version_id}

    @staticmethod
    def from_json(obj: Any) -> ViewHistoryEntry:
        m = require_object(obj, "version-log entry")
        return ViewHistoryEntry(
            get_int(m, "timestamp-ms", "version-log entry"),
            get_int32(m, "version-id", "version-log entry"),
        )


# -- the metadata document ---------------------------------------------------------------------
@dataclass(frozen=True)
class ViewMetadata:
    """A view metadata file (``view-uuid``, ``format-version``, ``location``, ``schemas``,
    ``current-version-id``, ``versions``, ``version-log``, ``properties``)."""

    view_uuid: str
    format_version: int
    location: str
    schemas: tuple[Schema, ...]
    current_version_id: int
    versions: tuple[ViewVersion, ...]
    version_log: tuple[ViewHistoryEntry, ...]
    properties: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("schemas", "versions", "version_log"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "properties", dict(self.properties))
        if self.format_version > SUPPORTED_VIEW_FORMAT_VERSION:
            raise UnsupportedFeatureError(
                f"Cannot read unsupported view format version {self.format_version}"
            )
        if self.format_version < 1:
            raise ValidationError(f"unsupported view format version: {self.format_version}")
        for what, ids in (
            ("version", [v.version_id for v in self.versions]),
            ("schema", [s.schema_id for s in self.schemas]),
        ):
            twice = sorted(i for i, n in Counter(ids).items() if n > 1)
            if twice:  # which one is meant is undefined (Java refuses such files too)
                raise ValidationError(f"view metadata: {what} ids {twice} appear more than once")
        versions = {v.version_id for v in self.versions}
        if self.current_version_id not in versions:
            raise ValidationError(
                f"view metadata: current version {self.current_version_id} is not among the "
                f"versions {sorted(versions)}"
            )
        schema_ids = {s.schema_id for s in self.schemas}
        for v in self.versions:
            if v.schema_id not in schema_ids:
                raise ValidationError(
                    f"view metadata: version {v.version_id} names schema {v.schema_id}, which "
                    f"is not among the schemas {sorted(schema_ids)}"
                )

    def version(self, version_id: int) -> ViewVersion | None:
        """The version with this id, if the view still keeps it."""
        return next((v for v in self.versions if v.version_id == version_id), None)

    @property
    def current_version(self) -> ViewVersion:
        found = self.version(self.current_version_id)
        assert found is not None  # checked on construction
        return found

    @property
    def schema(self) -> Schema:
        """The schema of the current version's query."""
        sid = self.current_version.schema_id
        return next(s for s in self.schemas if s.schema_id == sid)

    def schema_by_id(self, schema_id: int) -> Schema | None:
        return next((s for s in self.schemas if s.schema_id == schema_id), None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "view-uuid": self.view_uuid,
            "format-version": self.format_version,
            "location": self.location,
        }
        if self.properties:
            out["properties"] = dict(self.properties)
        out["schemas"] = [s.to_json() for s in self.schemas]
        out["current-version-id"] = self.current_version_id
        out["versions"] = [v.to_json() for v in self.versions]
        out["version-log"] = [e.to_json() for e in self.version_log]
        return out

    def to_bytes(self, compress: bool = False) -> bytes:
        """The file's bytes: compact JSON, gzip-compressed with ``compress``."""
        raw = compact(self.to_json()).encode("utf-8")
        return gzip.compress(raw, mtime=0) if compress else raw

    @staticmethod
    def parse(data: str | bytes | bytearray | memoryview) -> ViewMetadata:
        """Parses view metadata JSON text or bytes (gzip detected by its magic number)."""
        return ViewMetadata.from_json(parse_document(data, "view metadata"))

    @staticmethod
    def from_json(obj: Any) -> ViewMetadata:
        w = "view metadata"
        m = require_object(obj, w)
        if "view-uuid" not in m and "table-uuid" in m:
            raise ValidationError("this is table metadata, not view metadata")
        return ViewMetadata(
            view_uuid=get_str(m, "view-uuid", w),
            format_version=get_int32(m, "format-version", w),
            location=get_str(m, "location", w),
            schemas=tuple(Schema.from_json(s) for s in get_list(m, "schemas", w)),
            current_version_id=get_int32(m, "current-version-id", w),
            versions=tuple(ViewVersion.from_json(v) for v in get_list(m, "versions", w)),
            version_log=tuple(ViewHistoryEntry.from_json(e) for e in get_list(m, "version-log", w)),
            properties=opt_str_map(m, "properties", w),
        )


# -- view updates and requirements (REST) ------------------------------------------------------
@dataclass(frozen=True)
class AddViewVersion(TableUpdate):
    """Adds a version (``schema-id`` -1: the schema added last in the same updates)."""

    view_version: ViewVersion
    action: ClassVar[str] = "add-view-version"

    def _body(self) -> dict[str, Any]:
        return {"view-version": self.view_version.to_json()}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableUpdate:
        return cls(ViewVersion.from_json(get_object(m, "view-version", cls.action)))


@dataclass(frozen=True)
class SetCurrentViewVersion(TableUpdate):
    """Makes a version current (-1: the version added last in the same updates)."""

    view_version_id: int
    action: ClassVar[str] = "set-current-view-version"

    def _body(self) -> dict[str, Any]:
        return {"view-version-id": self.view_version_id}

    @classmethod
    def _from_body(cls, m: Mapping[str, Any]) -> TableUpdate:
        return cls(get_int32(m, "view-version-id", cls.action))


_VIEW_UPDATES: dict[str, type[TableUpdate]] = {
    c.action: c
    for c in (
        AssignUUID,
        UpgradeFormatVersion,
        AddSchema,
        SetLocation,
        SetProperties,
        RemoveProperties,
        AddViewVersion,
        SetCurrentViewVersion,
    )
}


def view_update_from_json(obj: Any) -> TableUpdate:
    """Parses one REST view update; an action views do not have raises ValidationError."""
    m = require_object(obj, "view update")
    action = get_str(m, "action", "view update")
    cls = _VIEW_UPDATES.get(action)
    if cls is None:
        raise ValidationError(f"view update: unknown action {action!r}")
    return cls._from_body(m)


@dataclass(frozen=True)
class AssertViewUUID:
    """The view's UUID must be ``uuid`` (it is still the same view)."""

    uuid: str
    type: ClassVar[str] = "assert-view-uuid"

    def validate(self, base: ViewMetadata) -> None:
        if base.view_uuid.lower() != self.uuid.lower():
            raise CommitFailedError(
                f"Requirement failed: view UUID does not match: expected {base.view_uuid} "
                f"!= {self.uuid}"
            )

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "uuid": self.uuid}


def view_requirement_from_json(obj: Any) -> AssertViewUUID:
    """Parses a REST view requirement (the spec has one kind: ``assert-view-uuid``)."""
    m = require_object(obj, "view requirement")
    kind = get_str(m, "type", "view requirement")
    if kind != AssertViewUUID.type:
        raise ValidationError(f"view requirement: unknown type {kind!r}")
    return AssertViewUUID(get_str(m, "uuid", kind))


# -- building new metadata ---------------------------------------------------------------------
class ViewMetadataBuilder:
    """Changes to view metadata (``base``; None for a new view), applied with the reference's
    rules (see the module docstring); :meth:`build` gives the new metadata and :attr:`changes`
    the updates that describe it."""

    def __init__(self, base: ViewMetadata | None = None, *, now_ms: int | None = None) -> None:
        self._now = now_ms
        self.changes: list[TableUpdate] = []
        self._versions: list[ViewVersion] = list(base.versions) if base else []
        self._schemas: list[Schema] = list(base.schemas) if base else []
        self._history: list[ViewHistoryEntry] = list(base.version_log) if base else []
        self._properties: dict[str, str] = dict(base.properties) if base else {}
        self._format_version = base.format_version if base else SUPPORTED_VIEW_FORMAT_VERSION
        self._current = base.current_version_id if base else None
        self._location: str | None = base.location if base else None
        self._uuid: str | None = base.view_uuid if base else None
        self._previous = base.current_version if base else None
        self._last_added_version: int | None = None
        self._last_added_schema: int | None = None
        self._history_entry: ViewHistoryEntry | None = None
        self._added_versions: set[int] = set()

    def _clock(self) -> int:
        return self._now if self._now is not None else _now_ms()

    # -- single changes
    def upgrade_format_version(self, version: int) -> ViewMetadataBuilder:
        if version < self._format_version:
            raise ValidationError(f"cannot downgrade a v{self._format_version} view to v{version}")
        if version > SUPPORTED_VIEW_FORMAT_VERSION:
            raise ValidationError(f"unsupported view format version: {version}")
        if version != self._format_version:
            self._format_version = version
            self.changes.append(UpgradeFormatVersion(version))
        return self

    def set_location(self, location: str) -> ViewMetadataBuilder:
        if not location:
            raise ValidationError("a view location cannot be empty")
        location = location.rstrip("/")
        if location != self._location:
            self._location = location
            self.changes.append(SetLocation(location))
        return self

    def set_properties(self, updates: Mapping[str, str]) -> ViewMetadataBuilder:
        checked = _strings(updates, "view properties")
        if checked:
            self._properties.update(checked)
            self.changes.append(SetProperties(checked))
        return self

    def remove_properties(self, removals: Iterable[str]) -> ViewMetadataBuilder:
        if isinstance(removals, str) or not isinstance(removals, Iterable):
            raise ValidationError(f"view property names to remove: got {removals!r}")
        keys = tuple(removals)
        if not all(isinstance(k, str) for k in keys):
            raise ValidationError(f"view property names must be strings, got {list(keys)!r}")
        if keys:
            for k in keys:
                self._properties.pop(k, None)
            self.changes.append(RemoveProperties(keys))
        return self

    def assign_uuid(self, uuid: str) -> ViewMetadataBuilder:
        if self._uuid is not None and uuid != self._uuid:
            raise ValidationError("a view's UUID cannot be reassigned")
        if uuid != self._uuid:
            self._uuid = uuid
            self.changes.append(AssignUUID(uuid))
        return self

    def add_schema(self, schema: Schema) -> int:
        """Adds ``schema`` (or finds an equal one); returns its id."""
        new_id = 0
        for s in self._schemas:
            if s.same_schema(schema):
                return s.schema_id
            new_id = max(new_id, s.schema_id + 1)
        if schema.schema_id != new_id:
            schema = Schema(
                *schema.fields, schema_id=new_id, identifier_field_ids=schema.identifier_field_ids
            )
        self._schemas.append(schema)
        self.changes.append(AddSchema(schema))
        self._last_added_schema = new_id
        return new_id

    def add_version(self, version: ViewVersion) -> int:
        """Adds ``version`` (or finds an equal one); returns its id."""
        new_id = version.version_id
        for v in self._versions:
            if v.same_as(version):
                new_id = v.version_id
                break
            if v.version_id >= new_id:
                new_id = v.version_id + 1
        if new_id != version.version_id:
            version = replace(version, version_id=new_id)
        if any(v.version_id == new_id for v in self._versions):
            self._last_added_version = new_id if new_id in self._added_versions else None
            return new_id
        if version.schema_id == LAST_ADDED:
            if self._last_added_schema is None:
                raise ValidationError("cannot use the last added schema: no schema was added")
            version = replace(version, schema_id=self._last_added_schema)
        if not any(s.schema_id == version.schema_id for s in self._schemas):
            raise ValidationError(f"cannot add a version with unknown schema {version.schema_id}")
        dialects = _dialects(version.representations)
        repeated = sorted({d for d in dialects if dialects.count(d) > 1})
        if repeated:
            raise ValidationError(
                f"Invalid view version: Cannot add multiple queries for dialect {repeated[0]}"
            )
        self._versions.append(version)
        self._added_versions.add(new_id)
        wire = version
        if self._last_added_schema is not None and version.schema_id == self._last_added_schema:
            wire = replace(version, schema_id=LAST_ADDED)
        self.changes.append(AddViewVersion(wire))
        self._last_added_version = new_id
        return new_id

    def set_current_version_id(self, version_id: int) -> ViewMetadataBuilder:
        if version_id == LAST_ADDED:
            if self._last_added_version is None:
                raise ValidationError("cannot set the last added version: no version was added")
            version_id = self._last_added_version
        if version_id == self._current:
            return self
        version = next((v for v in self._versions if v.version_id == version_id), None)
        if version is None:
            raise ValidationError(f"cannot set the current version to unknown version {version_id}")
        self._current = version_id
        self.changes.append(
            SetCurrentViewVersion(
                LAST_ADDED if version_id == self._last_added_version else version_id
            )
        )
        stamp = version.timestamp_ms if version_id in self._added_versions else self._clock()
        self._history_entry = ViewHistoryEntry(stamp, version_id)
        return self

    def set_current_version(self, version: ViewVersion, schema: Schema) -> ViewMetadataBuilder:
        """Adds ``schema`` and ``version`` (returning ``schema``) and makes it current."""
        schema_id = self.add_schema(schema)
        return self.set_current_version_id(self.add_version(replace(version, schema_id=schema_id)))

    # -- the result
    def build(self) -> ViewMetadata:
        if not self._location:
            raise ValidationError("a view needs a location")
        if not self._versions or self._current is None:
            raise ValidationError("a view needs a version")
        history = list(self._history)
        if self._history_entry is not None:
            history.append(self._history_entry)
        current = next(v for v in self._versions if v.version_id == self._current)
        allowed = self._properties.get(REPLACE_DROP_DIALECT_ALLOWED, "false").lower() == "true"
        if self._previous is not None and not allowed:
            before = set(_dialects(self._previous.representations))
            after = set(_dialects(current.representations))
            if not before <= after:
                raise ValidationError(
                    f"cannot replace the view: it would lose the dialects {sorted(before - after)} "
                    f"(set {REPLACE_DROP_DIALECT_ALLOWED}=true to allow it)"
                )
        raw_size = self._properties.get(VERSION_HISTORY_SIZE, str(VERSION_HISTORY_SIZE_DEFAULT))
        # as Java's Integer.parseInt reads it (no spaces, no underscores): a value Java cannot
        # read would break every later change Java makes to the view
        if not re.fullmatch(r"[+-]?[0-9]+", raw_size) or not -(2**31) <= int(raw_size) < 2**31:
            raise ValidationError(f"{VERSION_HISTORY_SIZE} must be an integer: {raw_size!r}")
        size = int(raw_size)
        if size <= 0:
            raise ValidationError(f"{VERSION_HISTORY_SIZE} must be positive, got {size}")
        keep_count = max(len(self._added_versions | {self._current}), size)
        versions = self._versions
        if len(versions) > keep_count:
            newest = sorted((v.version_id for v in versions), reverse=True)
            kept_ids = {self._current}
            for vid in newest:
                if len(kept_ids) >= keep_count:
                    break
                kept_ids.add(vid)
            versions = [v for v in versions if v.version_id in kept_ids]
            kept_history: list[ViewHistoryEntry] = []
            for entry in history:
                if entry.version_id in kept_ids:
                    kept_history.append(entry)
                else:
                    kept_history.clear()  # the log restarts after a version no longer kept
            history = kept_history
        if self._uuid is None:
            import uuid as _uuid

            self.assign_uuid(str(_uuid.uuid4()))
        assert self._uuid is not None
        return ViewMetadata(
            view_uuid=self._uuid,
            format_version=self._format_version,
            location=self._location,
            schemas=tuple(self._schemas),
            current_version_id=self._current,
            versions=tuple(versions),
            version_log=tuple(history),
            properties=self._properties,
        )


def apply_view_updates(
    base: ViewMetadata | None, updates: Sequence[TableUpdate], *, now_ms: int | None = None
) -> ViewMetadata:
    """``base`` (None: a new view) with REST view ``updates`` applied in order."""
    b = ViewMetadataBuilder(base, now_ms=now_ms)
    for u in updates:
        if isinstance(u, AssignUUID):
            b.assign_uuid(u.uuid)
        elif isinstance(u, UpgradeFormatVersion):
            b.upgrade_format_version(u.format_version)
        elif isinstance(u, AddSchema):
            b.add_schema(u.schema)
        elif isinstance(u, SetLocation):
            b.set_location(u.location)
        elif isinstance(u, SetProperties):
            b.set_properties(u.updates)
        elif isinstance(u, RemoveProperties):
            b.remove_properties(u.removals)
        elif isinstance(u, AddViewVersion):
            b.add_version(u.view_version)
        elif isinstance(u, SetCurrentViewVersion):
            b.set_current_version_id(u.view_version_id)
        else:
            raise ValidationError(f"{u.action!r} is not an update of views")
    return b.build()
