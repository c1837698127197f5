"""The REST catalog operations over an icefloe :class:`~icefloe.catalog.Catalog`.

Each method takes decoded request parts and returns ``(status, JSON body or None, headers)``;
errors are raised as :mod:`icefloe.exceptions` and turned into REST error bodies by the app.
Commits check the requirements against the table's current metadata and apply the updates
through the catalog's compare-and-swap commit (a lost race is retried on the new state while
the requirements still hold, so no update is lost); a failed requirement is a 409. A commit
with ``assert-create`` creates the table (the second half of a staged create); the name and
location of a staged create are checked and stored as a plain create's are, and a staged create
on a local file system makes ``<location>/metadata`` (clients write manifests there before the
create commits). Creates and commits store any valid schema: icefloe's nesting limits
(:mod:`icefloe.nesting`) bound the data icefloe reads and writes, and the server reads none.
``assign-uuid`` cannot change the UUID a table has (400). Multi-table
commits use :meth:`Catalog.commit_tables` (one database transaction in the SQL catalog) and
are only offered when the catalog implements it; views (:mod:`icefloe.rest.views`) when the
catalog keeps them.

Request bodies are checked field by field (types, and no NUL in property keys or namespace
property values) and refused with 400 before the catalog is touched. Lists are paged only when
the request has a ``pageToken`` (empty for the first page), as the spec asks: without one
everything comes in one answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from icefloe.catalog.base import Catalog, Identifier, check_table_identifier
from icefloe.catalog.rest import config as ep
from icefloe.catalog.rest.errors import UnprocessableEntityError
from icefloe.catalog.rest.wire import (
    LoadTableResult,
    identifier_from_json,
    identifier_to_json,
    metadata_from_creation,
)
from icefloe.catalog.sql_hook import PointerChange
from icefloe.exceptions import (
    CommitFailedError,
    FileIOError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.metadata import (
    AssertCreate,
    AssignUUID,
    SetLocation,
    SetProperties,
    TableMetadata,
    requirement_from_json,
    update_from_json,
)
from icefloe.partitioning import PartitionSpec
from icefloe.rest.bodies import (
    all_strings,
    body_list,
    body_object,
    checked_locations,
    flag,
    nonempty_string,
    registered_file,
    server_location,
    string_properties,
)
from icefloe.rest.paging import page
from icefloe.rest.views import ViewRoutes
from icefloe.schema import Schema
from icefloe.sorting import SortOrder
from icefloe.table_paths import data_location, metadata_location

__all__ = ["CredentialProvider", "Reply", "RestService", "printable"]

Reply = tuple[int, Any, dict[str, str]]
#: Vends storage credentials for a table: ``(identifier, table location)`` to
#: ``(prefix, properties)`` pairs, e.g. short-lived keys with ``s3.session-token-expires-at-ms``.
CredentialProvider = Callable[[Identifier, str], Sequence[tuple[str, Mapping[str, str]]]]


metrics_log = logging.getLogger("icefloe.rest.metrics")

#: The fields Iceberg Java requires of each kind of metrics report.
_REPORT_FIELDS = {
    "scan-report": (
        "snapshot-id",
        "filter",
        "schema-id",
        "projected-field-ids",
        "projected-field-names",
        "metrics",
    ),
    "commit-report": ("snapshot-id", "sequence-number", "operation", "metrics"),
}


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED_CONTROLS = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(value: object) -> str:
    """``str(value)`` with control characters written out (``\\x1b``, ``\\n``), as the CLI
    shows names: what a client puts in a request path cannot forge log lines or send escape
    codes to the terminal of whoever reads the log."""

    def written(m: re.Match[str]) -> str:
        ch = m.group()
        return _NAMED_CONTROLS.get(ch) or f"\\x{ord(ch):02x}"

    return _CONTROL.sub(written, str(value))


def decode_namespace(raw: str) -> Identifier:
    """A namespace from its path segment (parts separated by 0x1F)."""
    parts = tuple(raw.split(ep.NAMESPACE_SEPARATOR))
    if not all(parts):
        raise ValidationError(f"invalid namespace {raw!r}")
    return parts


def _summary_answer(
    updated: Sequence[str], removed: Sequence[str], missing: Sequence[str]
) -> Reply:
    """The answer of a namespace property update (``UpdateNamespacePropertiesResponse``)."""
    body = {"updated": list(updated), "removed": list(removed), "missing": list(missing)}
    return 200, body, {}


def _etag(metadata_location: str, mode: str) -> str:
    return '"' + hashlib.sha256(f"{metadata_location}|{mode}".encode()).hexdigest()[:40] + '"'


class RestService(ViewRoutes):
    """REST operations on ``catalog`` (see the module docstring)."""

    def __init__(
        self,
        catalog: Catalog,
        *,
        prefix: str = "",
        idempotency_lifetime: str | None = "PT30M",
        table_config: Mapping[str, str] | None = None,
        storage_credentials: Sequence[tuple[str, Mapping[str, str]]] = (),
        credential_provider: CredentialProvider | None = None,
    ) -> None:
        self.catalog = catalog
        self.storage_credentials = [(p, dict(c)) for p, c in storage_credentials]
        self.credential_provider = credential_provider
        self.prefix = prefix.strip("/")
        segments = self.prefix.split("/") if self.prefix else []
        odd = any(c in "%?#\\" or c < " " or c == "\x7f" for c in self.prefix)
        if odd or any(part in ("", ".", "..") for part in segments):
            # routes match the decoded path: such a prefix is never matched as advertised
            raise ValidationError(
                f"prefix {self.prefix!r} cannot hold '%', '?', '#', '\\', control characters "
                "or empty, '.' or '..' segments"
            )
        self.idempotency_lifetime = idempotency_lifetime
        self.table_config = dict(table_config or {})
        self.multi_table = type(catalog).commit_tables is not Catalog.commit_tables

    # -- config ---------------------------------------------------------------------------------
    def endpoints(self) -> list[str]:
        out = sorted(
            ep.DEFAULT_ENDPOINTS
            | {ep.NAMESPACE_EXISTS, ep.TABLE_EXISTS, ep.TABLE_CREDENTIALS, ep.PLAN_TABLE_SCAN}
        )
        if not self.multi_table:
            out.remove(ep.COMMIT_TRANSACTION)
        if not self.catalog.renames_and_registers:
            out.remove(ep.RENAME_TABLE)
            out.remove(ep.REGISTER_TABLE)
        if self.catalog.keeps_views:
            out.extend(sorted(ep.VIEW_ENDPOINTS | {ep.VIEW_EXISTS, ep.REGISTER_VIEW}))
        return out

    def config(self, query: Mapping[str, str]) -> Reply:
        overrides: dict[str, str] = {}
        if self.prefix:
            overrides["prefix"] = self.prefix
        body: dict[str, Any] = {
            "defaults": {},
            "overrides": overrides,
            "endpoints": self.endpoints(),
        }
        if self.idempotency_lifetime:
            body["idempotency-key-lifetime"] = self.idempotency_lifetime
        return 200, body, {}

    # -- namespaces -----------------------------------------------------------------------------
    def list_namespaces(self, query: Mapping[str, str]) -> Reply:
        parent = decode_namespace(query["parent"]) if query.get("parent") else ()
        found = sorted(self.catalog.list_namespaces(parent))
        items, token = page(found, list, query)
        return 200, {"namespaces": [list(ns) for ns in items], "next-page-token": token}, {}

    def create_namespace(self, body: Any) -> Reply:
        reply = self.created_namespace(body)  # the body checked before the catalog is touched
        out = reply[1]
        self.catalog.create_namespace(tuple(out["namespace"]), out["properties"])
        return reply

    def created_namespace(self, body: Any) -> Reply:
        """The answer of a create of the namespace ``body`` asks for, once it is made: the
        namespace and the properties it was given (checked here; the catalog is not read). A
        replay of a create whose change committed gets it from the same body, which the
        request's fingerprint holds to the first one's."""
        b = body_object(body, "namespace")
        ns = b["namespace"]
        if not isinstance(ns, list) or not all(isinstance(p, str) for p in ns):
            raise ValidationError("namespace must be a list of strings")
        if not ns:
            raise ValidationError("the empty namespace cannot be created")
        props = string_properties(b.get("properties"), "namespace properties")
        return 200, {"namespace": ns, "properties": props}, {}

    def load_namespace(self, ns: Identifier) -> Reply:
        props = self.catalog.load_namespace_properties(ns)
        return 200, {"namespace": list(ns), "properties": props}, {}

    def namespace_exists(self, ns: Identifier) -> Reply:
        if not self.catalog.namespace_exists(ns):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ns)!r} does not exist")
        return 204, None, {}

    def drop_namespace(self, ns: Identifier) -> Reply:
        self.catalog.drop_namespace(ns)
        return 204, None, {}

    def update_namespace(self, ns: Identifier, body: Any) -> Reply:
        b = body_object(body)
        removals = body_list(b.get("removals"), "removals")
        if not all_strings(removals):
            raise ValidationError("removals must be a list of strings")
        updates = string_properties(b.get("updates"), "namespace property updates")
        both = sorted(set(removals) & set(updates))
        if both:  # checked before the namespace is looked up, as Java's server does
            raise UnprocessableEntityError(
                f"Invalid namespace update, cannot simultaneously set and remove keys: {both}"
            )
        summary = self.catalog.update_namespace_properties(ns, removals, updates)
        return _summary_answer(summary.updated, summary.removed, summary.missing)

    def updated_namespace(self, change: PointerChange) -> Reply:
        """The answer of a namespace property update that made ``change``: what it set,
        removed and found missing, as its transaction recorded them (the properties may have
        changed since)."""
        return _summary_answer(change.updated, change.removed, change.missing)

    # -- tables ---------------------------------------------------------------------------------
    def _credentials(
        self, ident: Identifier, metadata: TableMetadata
    ) -> list[tuple[str, dict[str, str]]]:
        """The configured credentials whose prefix covers the table's location or the
        directory of its data or metadata files (``write.data.path`` elsewhere, say), then
        the provider's for the location."""
        location = metadata.location
        dirs = (
            location,
            f"{data_location(location, metadata.properties)}/",
            f"{metadata_location(location, metadata.properties)}/",
        )
        creds = [(p, c) for p, c in self.storage_credentials if any(d.startswith(p) for d in dirs)]
        if self.credential_provider is not None:
            creds += [(p, dict(c)) for p, c in self.credential_provider(ident, location)]
        return creds

    def _result(
        self,
        ident: Identifier,
        metadata: TableMetadata,
        location: str | None,
        delegation: str | None = None,
    ) -> dict[str, Any]:
        """A ``LoadTableResult``; storage credentials only when the client asked for vended
        credentials (``X-Iceberg-Access-Delegation``)."""
        creds: list[tuple[str, dict[str, str]]] = []
        if delegation and "vended-credentials" in delegation:
            creds = self._credentials(ident, metadata)
        return LoadTableResult(metadata, location, dict(self.table_config), creds).to_json()

    def table_access(
        self, ident: Identifier, metadata: Any, delegation: str | None = None
    ) -> dict[str, Any]:
        """The ``config`` and ``storage-credentials`` of a ``LoadTableResult`` for the table
        of ``metadata`` (its JSON), as a load gives them: for the replay of a stored answer,
        which is kept without them."""
        result = self._result(ident, TableMetadata.from_json(metadata), None, delegation)
        return {k: result[k] for k in ("config", "storage-credentials") if k in result}

    def list_tables(self, ns: Identifier, query: Mapping[str, str]) -> Reply:
        found = sorted(self.catalog.list_tables(ns))
        items, token = page(found, list, query)
        return (
            200,
            {"identifiers": [identifier_to_json(i) for i in items], "next-page-token": token},
            {},
        )

    def create_table(self, ns: Identifier, body: Any, delegation: str | None = None) -> Reply:
        b = body_object(body, "name", "schema")
        ident = (*ns, nonempty_string(b, "name"))
        schema = Schema.from_json(b["schema"])
        spec = _spec(b.get("partition-spec"))
        order = _object(b.get("write-order"), "write-order")
        sort = SortOrder.from_json(order) if order else None
        props = string_properties(b.get("properties"), "table properties", values_nul=False)
        location = b.get("location") or None  # "": the default location
        if location is not None and not isinstance(location, str):
            raise ValidationError(f"location must be a string, got {location!r}")
        if location is not None:
            server_location(location)
        # the checks and the metadata of the catalog's create_table, without icefloe's own
        # nesting limits: they bound what icefloe reads and writes, and the server reads no
        # data, so it stores any valid schema a client creates (a Java table's 50-deep list)
        ident, metadata = self.catalog._new_table(
            ident, schema, location, spec, sort, props, None, limit_nesting=False
        )
        if flag(b, "stage-create"):  # nothing written until the create commits
            self._make_local_metadata_dirs(metadata)
            return 200, self._result(ident, metadata, None, delegation), {}
        metadata_location = self.catalog._create_entry(ident, metadata)
        return 200, self._result(ident, metadata, metadata_location, delegation), {}

    def _make_local_metadata_dirs(self, metadata: TableMetadata) -> None:
        """Create the metadata directory of a staged table on a local file system.

        A staged create writes nothing, yet clients write their first manifests into
        ``<location>/metadata`` before they commit the create (DuckDB's CTAS, or CREATE and
        INSERT in one transaction), and DuckDB's local file system does not create parent
        directories. Object stores have no directories: nothing is made there."""
        io = self.catalog.table_io(metadata.properties)
        for directory in dict.fromkeys(
            (
                f"{metadata.location}/metadata",
                metadata_location(metadata.location, metadata.properties),
            )
        ):
            if io.local_path(directory) is not None:
                # a convenience: the create itself reports a location it cannot write
                with contextlib.suppress(FileIOError):
                    io.make_dirs(directory)

    def load_table(
        self,
        ident: Identifier,
        query: Mapping[str, str],
        if_none_match: str | None,
        delegation: str | None = None,
    ) -> Reply:
        mode = query.get("snapshots", "all")
        if mode not in ("all", "refs"):
            raise ValidationError(f"snapshots must be 'all' or 'refs', got {mode!r}")
        table = self.catalog.load_table(ident)
        vends = self.credential_provider is not None and "vended-credentials" in (delegation or "")
        # freshly vended credentials differ on every load: no ETag then; otherwise it covers
        # the whole answer, the table config and static storage credentials too (a server
        # restarted with other settings or rotated keys must not answer 304)
        etag = None
        if not vends:
            static = (
                self._credentials(ident, table.metadata)
                if delegation and "vended-credentials" in delegation
                else []
            )
            settings = json.dumps([self.table_config, static], sort_keys=True)
            etag = _etag(table.metadata_location, f"{mode}|{delegation or ''}|{settings}")
        if etag and if_none_match and etag in [t.strip() for t in if_none_match.split(",")]:
            return 304, None, {"ETag": etag}
        metadata = table.metadata
        if mode == "refs":
            # the snapshots no ref points at are left out (a client fetches them when it needs
            # them); the snapshot log stays whole, as Java's server keeps it: time travel by
            # timestamp, history and rollback to a time read it
            keep = {r.snapshot_id for r in metadata.refs.values()}
            metadata = replace(
                metadata,
                snapshots=tuple(s for s in metadata.snapshots if s.snapshot_id in keep),
                statistics=tuple(s for s in metadata.statistics if s.snapshot_id in keep),
                partition_statistics=tuple(
                    s for s in metadata.partition_statistics if s.snapshot_id in keep
                ),
            )
        result = self._result(ident, metadata, table.metadata_location, delegation)
        return 200, result, {"ETag": etag} if etag else {}

    def load_credentials(self, ident: Identifier) -> Reply:
        """``GET .../credentials``: the storage credentials covering the table's location."""
        metadata = self.catalog.load_table(ident).metadata
        creds = [{"prefix": p, "config": c} for p, c in self._credentials(ident, metadata)]
        return 200, {"storage-credentials": creds}, {}

    def plan_table_scan(self, ident: Identifier, body: Any, delegation: str | None = None) -> Reply:
        """``POST .../plan``: the scan planned here, completed at once (see
        :mod:`icefloe.rest.planning`), with the table's storage credentials for clients that
        ask for vended credentials."""
        from icefloe.rest.planning import plan_table_scan

        table = self.catalog.load_table(ident)
        out = plan_table_scan(table, body)
        if delegation and "vended-credentials" in delegation:
            creds = self._credentials(ident, table.metadata)
            if creds:
                out["storage-credentials"] = [{"prefix": p, "config": c} for p, c in creds]
        return 200, out, {}

    def table_exists(self, ident: Identifier) -> Reply:
        if not self.catalog.table_exists(ident):
            raise NoSuchTableError(f"table {'.'.join(ident)!r} does not exist")
        return 204, None, {}

    def drop_table(self, ident: Identifier, query: Mapping[str, str]) -> Reply:
        purge = query.get("purgeRequested", "false").lower() == "true"
        self.catalog.drop_table(ident, purge=purge)
        return 204, None, {}

    def rename_table(self, body: Any) -> Reply:
        b = body_object(body, "source", "destination")
        # the rename alone, as Java's catalogs do it: the table's metadata is not read
        self.catalog._rename_table_entry(
            identifier_from_json(b["source"]), identifier_from_json(b["destination"])
        )
        return 204, None, {}

    def register_table(self, ns: Identifier, body: Any) -> Reply:
        """Register the table whose metadata file the client names: a file that is not table
        metadata (or a directory) is the client's mistake, 400; a missing one 404 (as Iceberg
        Java answers both); other storage failures stay the server's."""
        b = body_object(body, "name", "metadata-location")
        name = nonempty_string(b, "name")
        location = server_location(nonempty_string(b, "metadata-location"), "metadata-location")
        if flag(b, "overwrite"):
            raise UnsupportedFeatureError("register with overwrite is not supported")
        with registered_file(self.catalog.io, location):
            table = self.catalog.register_table((*ns, name), location)
        return 200, self._result(table.identifier, table.metadata, table.metadata_location), {}

    def committed_table(self, change: PointerChange) -> Reply:
        """The answer of a table commit (or the create that ends a staged create) that made
        ``change``: the new metadata, read back from its file."""
        location = change.metadata_locations[0]
        return _commit_answer(location, self.catalog.read_metadata(location))

    def created_table(self, change: PointerChange) -> Reply:
        """The answer of a create or register that made ``change``: the table's load answer
        (its credentials are added as a replay adds them)."""
        ident, location = change.identifiers[0], change.metadata_locations[0]
        return 200, self._result(ident, self.catalog.read_metadata(location), location), {}

    def _parse_change(self, b: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
        reqs = body_list(b.get("requirements"), "requirements")
        ups = body_list(b.get("updates"), "updates")
        requirements = [requirement_from_json(body_object(r, what="a requirement")) for r in reqs]
        updates = [update_from_json(body_object(u, what="an update")) for u in ups]
        for u in updates:
            if isinstance(u, SetProperties) and any("\x00" in k for k in u.updates):
                raise ValidationError("table property keys cannot contain NUL characters")
        return requirements, updates

    def commit_table(self, ident: Identifier, body: Any) -> Reply:
        b = body_object(body)
        if b.get("identifier") is not None and identifier_from_json(b["identifier"]) != ident:
            raise ValidationError("the body's identifier does not match the path")
        reqs, ups = self._parse_change(b)
        if any(isinstance(r, AssertCreate) for r in reqs):
            return self._create_by_commit(ident, ups)
        table = self.catalog.load_table(ident)
        ups = _check_assign_uuid(ident, ups, table.metadata.table_uuid)
        ups = checked_locations(table.metadata.location, ups)
        result = self.catalog.commit_table(table, reqs, ups)
        return _commit_answer(result.metadata_location, result.metadata)

    def _create_by_commit(self, ident: Identifier, ups: list[Any]) -> Reply:
        """The second half of a staged create: the name and location are checked as a plain
        create checks them (:meth:`Catalog._new_table`)."""
        check_table_identifier(ident)
        ups = _check_assign_uuid(ident, ups, None)
        if not self.catalog.namespace_exists(ident[:-1]):
            raise NoSuchNamespaceError(f"namespace {'.'.join(ident[:-1])!r} does not exist")
        if self.catalog.table_exists(ident):
            raise CommitFailedError("Requirement failed: table already exists")
        self.catalog._refuse_view_name(ident)
        for u in ups:
            if isinstance(u, SetLocation):
                server_location(u.location)
        metadata = metadata_from_creation(ups, self.catalog._default_table_location(ident))
        try:
            location = self.catalog._create_entry(ident, metadata)
        except TableAlreadyExistsError as exc:
            raise CommitFailedError("Requirement failed: table already exists") from exc
        return _commit_answer(location, metadata)

    def commit_transaction(self, body: Any) -> Reply:
        if not self.multi_table:
            raise UnsupportedFeatureError(
                f"{type(self.catalog).__name__} cannot commit several tables atomically"
            )
        b = body_object(body, "table-changes")
        changes = b["table-changes"]
        if not isinstance(changes, list) or not changes:
            raise ValidationError("table-changes must be a non-empty list")
        items = []
        for change in changes:
            c = body_object(change, "identifier", what="a table change")
            ident = identifier_from_json(c["identifier"])
            reqs, ups = self._parse_change(c)
            if any(isinstance(r, AssertCreate) for r in reqs):
                raise UnsupportedFeatureError("a multi-table commit cannot create tables")
            table = self.catalog.load_table(ident)
            ups = _check_assign_uuid(ident, ups, table.metadata.table_uuid)
            items.append((table, reqs, checked_locations(table.metadata.location, ups)))
        self.catalog.commit_tables(items)
        return 204, None, {}

    def report_metrics(self, ident: Identifier, body: Any) -> Reply:
        """Check a metrics report's required fields (as Iceberg Java's parser does) and log it:
        one line at INFO on the ``icefloe.rest.metrics`` logger, ``<report-type>
        [<prefix>/]<table> <report JSON>``."""
        b = body_object(body, "report-type", "table-name")
        kind = b["report-type"]
        required = _REPORT_FIELDS.get(kind) if isinstance(kind, str) else None
        if required is None:
            raise ValidationError(f"unknown report-type {kind!r}")
        if not isinstance(b["table-name"], str):
            raise ValidationError("a report's table-name must be a string")
        body_object(b, *required)
        if not isinstance(b["metrics"], dict):
            raise ValidationError("a report's metrics must be an object")
        if not self.catalog.table_exists(ident):  # 404 for a table that does not exist
            raise NoSuchTableError(f"table {'.'.join(ident)!r} does not exist")
        where = f"{self.prefix}/" if self.prefix else ""
        text = json.dumps(b, separators=(",", ":"))
        metrics_log.info("%s %s%s %s", kind, printable(where), printable(".".join(ident)), text)
        return 204, None, {}


def _check_assign_uuid(ident: Identifier, updates: list[Any], current: str | None) -> list[Any]:
    """``updates`` with each ``assign-uuid`` checked: its value must be a UUID (8-4-4-4-12
    hex digits) and must not differ from the UUID the table already has (``current``; for a
    create, the first ``assign-uuid``): the REST spec says re-assigning it is not safe, and
    clients take a table whose UUID changed for another table. Assigning the table's own UUID
    changes nothing (and is left out). :class:`ValidationError` (400) otherwise."""
    out = []
    for u in updates:
        if isinstance(u, AssignUUID):
            try:
                given = uuid.UUID(u.uuid)
            except (TypeError, ValueError):
                given = None
            if given is None or str(given) != u.uuid.lower():
                raise ValidationError(f"assign-uuid: {u.uuid!r} is not a UUID")
            if current is not None:
                if _uuid_or_none(current) != given:
                    raise ValidationError(
                        f"Cannot reassign the UUID of table {'.'.join(ident)!r} from {current} "
                        f"to {u.uuid}: a table keeps its UUID"
                    )
                if u.uuid != current:  # the same UUID written otherwise: nothing to change
                    continue
            current = u.uuid
        out.append(u)
    return out


def _uuid_or_none(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except (TypeError, ValueError):
        return None


def _object(value: Any, what: str) -> dict[str, Any] | None:
    """An optional JSON object of a request (null or absent: None)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValidationError(f"{what} must be an object, got {type(value).__name__}")
    return value


def _spec(value: Any) -> PartitionSpec | None:
    obj = _object(value, "partition-spec")
    if not obj:
        return None
    if isinstance(obj, dict) and "spec-id" not in obj:
        return PartitionSpec.fields_from_json(obj.get("fields") or [])
    return PartitionSpec.from_json(obj)


def _commit_answer(location: str, metadata: TableMetadata) -> Reply:
    """The ``CommitTableResponse`` of a commit that made ``metadata`` current at ``location``."""
    return 200, {"metadata-location": location, "metadata": metadata.to_json()}, {}
