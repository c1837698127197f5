"""The REST catalog client: an icefloe :class:`~icefloe.catalog.Catalog` over Iceberg's REST API.

Properties: ``uri`` (the server, e.g. ``http://127.0.0.1:8181``), ``warehouse`` (sent to
``GET /v1/config``), auth (see :mod:`icefloe.catalog.rest.auth`), ``header.<Name>`` (extra
headers), ``rest.access-delegation`` (the ``X-Iceberg-Access-Delegation`` header; default
``vended-credentials``, empty to send none), SigV4 (see :mod:`icefloe.catalog.rest.sigv4`),
``rest-page-size``, ``snapshot-loading-mode``
(``all`` or ``refs``), ``rest.client.socket-timeout-ms`` (default 60000) and
``rest.client.max-connections`` (default 16) and ``rest-metrics-reporting-enabled`` (default
true: a commit report after each commit that adds a snapshot, see
:mod:`icefloe.catalog.rest.metrics`; :attr:`RestCatalog.metrics_reports_sent` and
``metrics_reports_failed`` count them).

A commit sends the table's requirements and updates; the server checks and applies them. A 409
means another writer moved the table: the table is reloaded and the requirements checked again
here; if they still hold the same changes are sent again (waiting as the table's
``commit.retry.*`` properties say), else :class:`CommitConflictError` lets the transaction
rebuild its changes on the new state. 500/502/503/504 and timeouts raise
:class:`CommitStateUnknownError` (nothing is deleted), unless the server advertises
``Idempotency-Key`` support, in which case the same request is retried with the same key.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from icefloe.arrow_schema import to_schema
from icefloe.catalog.base import (
    Catalog,
    Identifier,
    PropertiesUpdateSummary,
    to_identifier,
)
from icefloe.catalog.rest import config as ep
from icefloe.catalog.rest.auth import auth_from_properties
from icefloe.catalog.rest.errors import exception_for_error
from icefloe.catalog.rest.http import HttpResponse, HttpSession, TransportError
from icefloe.catalog.rest.metrics import commit_report, scan_report
from icefloe.catalog.rest.sigv4 import signer_from_properties
from icefloe.catalog.rest.wire import (
    LoadTableResult,
    creation_updates,
    identifier_from_json,
    identifier_to_json,
    longest_prefix_config,
    merge_io_properties,
    uuid7,
)
from icefloe.exceptions import (
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
    IcebergError,
    NamespaceAlreadyExistsError,
    NoSuchViewError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.io import FileIO
from icefloe.metadata import (
    AddSnapshot,
    AssertCreate,
    TableMetadata,
    TableRequirement,
    TableUpdate,
    validate_requirements,
)
from icefloe.table.committer import CommitResult, RetryPolicy

if TYPE_CHECKING:
    import pyarrow as pa

    from icefloe.partitioning import PartitionSpec
    from icefloe.scan.metrics import ScanReport
    from icefloe.schema import Schema
    from icefloe.sorting import SortOrder
    from icefloe.table import Table, Transaction

__all__ = ["RestCatalog"]

log = logging.getLogger("icefloe.catalog.rest")

_UNKNOWN_STATUS = (500, 502, 503, 504)


class RestCatalog(Catalog):
    """A catalog served over Iceberg's REST protocol (see the module docstring)."""

    def __init__(self, name: str, **properties: str) -> None:
        super().__init__(name, **properties)
        uri = properties.get("uri")
        if not uri:
            raise ValidationError("a REST catalog needs a 'uri' property (http(s)://host:port)")
        timeout = float(properties.get("rest.client.socket-timeout-ms", "60000")) / 1000.0
        pool = int(properties.get("rest.client.max-connections", "16"))
        self._session = HttpSession(uri, timeout=timeout, pool_size=pool)
        self._headers = {"X-Client-Version": "icefloe", **ep.header_properties(dict(properties))}
        self._auth = auth_from_properties(properties, self._session, self._headers)
        self._signer = signer_from_properties(properties)
        self._etags: dict[Identifier, tuple[str, LoadTableResult]] = {}
        self._etag_lock = threading.Lock()
        self._fetch_config()

    # -- plumbing -------------------------------------------------------------------------------
    def _fetch_config(self) -> None:
        query = (
            {"warehouse": self.properties["warehouse"]} if "warehouse" in self.properties else {}
        )
        resp = self._send("GET", "/v1/config", query=query)
        if resp.status != 200:
            raise exception_for_error(resp.status, resp.body, "GET /v1/config")
        body = resp.json()
        if not isinstance(body, dict):
            raise ValidationError("GET /v1/config did not answer a JSON object")
        defaults = {str(k): str(v) for k, v in (body.get("defaults") or {}).items()}
        overrides = {str(k): str(v) for k, v in (body.get("overrides") or {}).items()}
        self.properties = {**defaults, **self.properties, **overrides}
        views = self.properties.get("view-endpoints-supported", "false").lower() == "true"
        self.endpoints = ep.endpoint_set(body.get("endpoints"), views)
        self.idempotency_lifetime: str | None = body.get("idempotency-key-lifetime")
        prefix = self.properties.get("prefix", "").strip("/")
        self._prefix = f"/v1/{prefix}" if prefix else "/v1"
        self._page_size = self.properties.get("rest-page-size")
        self._separator = ep.namespace_separator(self.properties)
        self._snapshots = self.properties.get("snapshot-loading-mode", "all").lower()
        if self._snapshots not in ("all", "refs"):
            raise ValidationError("snapshot-loading-mode must be 'all' or 'refs'")
        self._metrics_enabled = (
            self.properties.get("rest-metrics-reporting-enabled", "true").lower() == "true"
        )
        self.metrics_reports_sent = 0
        self.metrics_reports_failed = 0
        delegation = self.properties.get("rest.access-delegation", "vended-credentials")
        if delegation:
            self._headers["X-Iceberg-Access-Delegation"] = delegation

    def close(self) -> None:
        """Close the pooled HTTP connections."""
        self._session.close()

    def supports(self, endpoint: str) -> bool:
        """Whether the server offers ``endpoint`` (``"GET /v1/{prefix}/namespaces"``)."""
        return endpoint in self.endpoints

    def _require(self, endpoint: str) -> None:
        if endpoint not in self.endpoints:
            raise UnsupportedFeatureError(f"the REST server does not offer {endpoint}")

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> HttpResponse:
        """One request with auth; a 401/419 re-authenticates and retries once when possible."""
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        for attempt in (0, 1):
            hdrs = {**self._headers, **self._auth.headers(), **(headers or {})}
            resp = self._session.request(
                method,
                path,
                query=query,
                body=data,
                headers=hdrs,
                sign=self._signer.sign if self._signer else None,
            )
            if resp.status in (401, 419) and attempt == 0 and self._auth.invalidate():
                continue
            return resp
        raise AssertionError("unreachable")  # pragma: no cover

    def _call(
        self,
        method: str,
        path: str,
        what: str,
        *,
        ok: tuple[int, ...] = (200, 204),
        exists: type[IcebergError] | None = None,
        **kwargs: Any,
    ) -> HttpResponse:
        resp = self._send(method, path, **kwargs)
        if resp.status not in ok:
            if exists is not None:
                raise exception_for_error(resp.status, resp.body, what, exists)
            raise exception_for_error(resp.status, resp.body, what)
        return resp

    def _ns_path(self, namespace: Iterable[str]) -> str:
        return f"{self._prefix}/namespaces/{ep.encode_namespace(namespace, self._separator)}"

    def _table_path(self, ident: Identifier) -> str:
        return f"{self._ns_path(ident[:-1])}/tables/{ep.encode_name(ident[-1])}"

    def _paged(self, path: str, what: str, key: str, query: dict[str, str]) -> list[Any]:
        out: list[Any] = []
        token: str | None = None
        while True:
            q = dict(query)
            if self._page_size:
                q["pageSize"] = self._page_size
            if token:
                q["pageToken"] = token
            body = self._call("GET", path, what, query=q).json()
            out.extend(body.get(key) or [])
            token = body.get("next-page-token")
            if not token:
                return out

    # -- namespaces -----------------------------------------------------------------------------
    def create_namespace(
        self, namespace: str | Iterable[str], properties: Mapping[str, str] | None = None
    ) -> None:
        """Create a namespace; :class:`NamespaceAlreadyExistsError` if it exists."""
        self._require(ep.CREATE_NAMESPACE)
        ns = to_identifier(namespace)
        self._ns_string(ns)
        self._call(
            "POST",
            f"{self._prefix}/namespaces",
            f"create namespace {'.'.join(ns)!r}",
            exists=NamespaceAlreadyExistsError,
            body={"namespace": list(ns), "properties": dict(properties or {})},
        )

    def list_namespaces(self, namespace: str | Iterable[str] = ()) -> list[Identifier]:
        """The namespaces directly under ``namespace`` (all pages)."""
        self._require(ep.LIST_NAMESPACES)
        parent = to_identifier(namespace)
        query = {"parent": self._separator.join(parent)} if parent else {}
        found = self._paged(
            f"{self._prefix}/namespaces",
            f"list namespaces {'.'.join(parent)!r}",
            "namespaces",
            query,
        )
        return [tuple(ns) for ns in found]

    def load_namespace_properties(self, namespace: str | Iterable[str]) -> dict[str, str]:
        """The properties of a namespace."""
        self._require(ep.LOAD_NAMESPACE)
        ns = to_identifier(namespace)
        self._ns_string(ns)
        body = self._call("GET", self._ns_path(ns), f"load namespace {'.'.join(ns)!r}").json()
        return {str(k): str(v) for k, v in (body.get("properties") or {}).items()}

    def update_namespace_properties(
        self,
        namespace: str | Iterable[str],
        removals: Iterable[str] | None = None,
        updates: Mapping[str, str] | None = None,
    ) -> PropertiesUpdateSummary:
        """Remove and set namespace properties in one request."""
        self._require(ep.UPDATE_NAMESPACE)
        ns = to_identifier(namespace)
        self._ns_string(ns)
        removal_set, update_map = self._check_update(removals, updates)
        body = self._call(
            "POST",
            f"{self._ns_path(ns)}/properties",
            f"update namespace {'.'.join(ns)!r}",
            body={"removals": sorted(removal_set), "updates": update_map},
        ).json()
        return PropertiesUpdateSummary(
            removed=sorted(body.get("removed") or []),
            updated=sorted(body.get("updated") or []),
            missing=sorted(body.get("missing") or []),
        )

    def drop_namespace(self, namespace: str | Iterable[str]) -> None:
        """Drop an empty namespace."""
        self._require(ep.DROP_NAMESPACE)
        ns = to_identifier(namespace)
        self._ns_string(ns)
        self._call("DELETE", self._ns_path(ns), f"drop namespace {'.'.join(ns)!r}")

    def namespace_exists(self, namespace: str | Iterable[str]) -> bool:
        """Whether the namespace exists (HEAD, or GET when the server lists no HEAD)."""
        ns = to_identifier(namespace)
        self._ns_string(ns)
        method = "HEAD" if ep.NAMESPACE_EXISTS in self.endpoints else "GET"
        resp = self._send(method, self._ns_path(ns))
        if resp.status == 404:
            return False
        if resp.status not in (200, 204):
            raise exception_for_error(resp.status, resp.body, f"namespace {'.'.join(ns)!r}")
        return True

    # -- tables ---------------------------------------------------------------------------------
    def _result_table(self, ident: Identifier, result: LoadTableResult) -> Table:
        from icefloe.table import Table

        location = result.metadata.location
        refresh = None
        if ep.TABLE_CREDENTIALS in self.endpoints and result.storage_credentials:

            def refresh() -> Mapping[str, str]:  # vended credentials about to expire
                return longest_prefix_config(location, self.load_credentials(ident))

        io = self.table_io(result.io_properties(), refresh_credentials=refresh)
        return Table(ident, result.metadata, result.metadata_location or "", io, self)

    def table_io(
        self,
        table_properties: Mapping[str, str],
        credentials: Mapping[str, str] | None = None,
        refresh_credentials: Callable[[], Mapping[str, str]] | None = None,
    ) -> FileIO:
        """A FileIO for a table, without the catalog's own credentials: the table's storage
        properties (and ``credentials`` vended for it); ``refresh_credentials`` renews them
        before ``s3.session-token-expires-at-ms``."""
        props = merge_io_properties(self.properties, {**table_properties, **(credentials or {})})
        return FileIO(props, refresh_credentials=refresh_credentials)

    @property
    def io(self) -> FileIO:
        if self._io is None:
            self._io = FileIO(merge_io_properties(self.properties, {}))
        return self._io

    def list_tables(self, namespace: str | Iterable[str]) -> list[Identifier]:
        """Identifiers of the tables in ``namespace`` (all pages)."""
        self._require(ep.LIST_TABLES)
        ns = to_identifier(namespace)
        self._ns_string(ns)
        found = self._paged(
            f"{self._ns_path(ns)}/tables", f"list tables of {'.'.join(ns)!r}", "identifiers", {}
        )
        return [identifier_from_json(i) for i in found]

    def _load_result(self, ident: Identifier, mode: str | None = None) -> LoadTableResult:
        self._require(ep.LOAD_TABLE)
        mode = mode or self._snapshots
        headers = {}
        with self._etag_lock:
            cached = self._etags.get(ident)
        if cached is not None and mode == "all":
            headers["If-None-Match"] = cached[0]
        resp = self._call(
            "GET",
            self._table_path(ident),
            f"load table {'.'.join(ident)!r}",
            ok=(200, 304),
            query={"snapshots": mode},
            headers=headers,
        )
        if resp.status == 304 and cached is not None:
            return cached[1]
        result = LoadTableResult.from_json(resp.json())
        etag = resp.headers.get("etag")
        if etag and mode == "all":
            with self._etag_lock:
                self._etags[ident] = (etag, result)
        return result

    def load_table(self, identifier: str | Iterable[str]) -> Table:
        """The table's current state (a 304 for an unchanged ETag reuses the cached answer)."""
        ident = self._table_identifier(identifier)
        return self._result_table(ident, self._load_result(ident))

    def _current_location(self, identifier: Identifier) -> str:
        return self._load_result(identifier).metadata_location or ""

    def table_exists(self, identifier: str | Iterable[str]) -> bool:
        """Whether the table exists (HEAD, or GET when the server lists no HEAD)."""
        ident = self._table_identifier(identifier)
        method = "HEAD" if ep.TABLE_EXISTS in self.endpoints else "GET"
        resp = self._send(method, self._table_path(ident))
        if resp.status == 404:
            return False
        if resp.status not in (200, 204):
            raise exception_for_error(resp.status, resp.body, f"table {'.'.join(ident)!r}")
        return True

    def _create_request(
        self,
        ident: Identifier,
        schema: Schema | pa.Schema,
        location: str | None,
        partition_spec: PartitionSpec | None,
        sort_order: SortOrder | None,
        properties: Mapping[str, str] | None,
        format_version: int | None,
        stage: bool,
    ) -> LoadTableResult:
        self._require(ep.CREATE_TABLE)
        props = dict(properties or {})
        if format_version is not None:
            props["format-version"] = str(format_version)
        body: dict[str, Any] = {
            "name": ident[-1],
            "schema": to_schema(schema).to_json(),
            "stage-create": stage,
            "properties": props,
        }
        if location:
            body["location"] = location
        if partition_spec is not None:
            body["partition-spec"] = partition_spec.to_json()
        if sort_order is not None:
            body["write-order"] = sort_order.to_json()
        resp = self._call(
            "POST",
            f"{self._ns_path(ident[:-1])}/tables",
            f"create table {'.'.join(ident)!r}",
            body=body,
        )
        return LoadTableResult.from_json(resp.json())

    def create_table(
        self,
        identifier: str | Iterable[str],
        schema: Schema | pa.Schema,
        location: str | None = None,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        properties: Mapping[str, str] | None = None,
        format_version: int | None = None,
    ) -> Table:
        """Create a table on the server (it assigns fresh field ids and the location)."""
        ident = self._table_identifier(identifier)
        result = self._create_request(
            ident, schema, location, partition_spec, sort_order, properties, format_version, False
        )
        return self._result_table(ident, result)

    def create_table_transaction(
        self,
        identifier: str | Iterable[str],
        schema: Schema | pa.Schema,
        location: str | None = None,
        partition_spec: PartitionSpec | None = None,
        sort_order: SortOrder | None = None,
        properties: Mapping[str, str] | None = None,
        format_version: int | None = None,
    ) -> Transaction:
        """A transaction that creates the table when it commits (a staged create).

        Nothing exists until :meth:`Transaction.commit_transaction`; the commit then creates
        the table with every change of the transaction (for example its first append) at
        once, or fails with :class:`TableAlreadyExistsError` if the name was taken meanwhile.
        """
        from icefloe.table import Transaction

        ident = self._table_identifier(identifier)
        result = self._create_request(
            ident, schema, location, partition_spec, sort_order, properties, format_version, True
        )
        return Transaction(self._result_table(ident, result))

    def load_credentials(self, identifier: str | Iterable[str]) -> list[tuple[str, dict[str, str]]]:
        """The table's storage credentials now (``GET .../credentials``): ``(prefix, config)``
        pairs, for example to renew vended credentials that are about to expire."""
        self._require(ep.TABLE_CREDENTIALS)
        ident = self._table_identifier(identifier)
        body = self._call(
            "GET", f"{self._table_path(ident)}/credentials", f"credentials of {'.'.join(ident)!r}"
        ).json()
        out = []
        for entry in body.get("storage-credentials") or []:
            if isinstance(entry, dict) and isinstance(entry.get("config"), dict):
                config = {str(k): str(v) for k, v in entry["config"].items()}
                out.append((str(entry.get("prefix") or ""), config))
        return out

    def drop_table(self, identifier: str | Iterable[str], purge: bool = False) -> None:
        """Drop the table; with ``purge`` the server also deletes its files."""
        self._require(ep.DROP_TABLE)
        ident = self._table_identifier(identifier)
        query = {"purgeRequested": "true"} if purge else {}
        self._call(
            "DELETE", self._table_path(ident), f"drop table {'.'.join(ident)!r}", query=query
        )
        with self._etag_lock:
            self._etags.pop(ident, None)

    def rename_table(self, source: str | Iterable[str], target: str | Iterable[str]) -> Table:
        """Rename a table."""
        self._require(ep.RENAME_TABLE)
        src = self._table_identifier(source)
        dst = self._table_identifier(target)
        self._call(
            "POST",
            f"{self._prefix}/tables/rename",
            f"rename table {'.'.join(src)!r} to {'.'.join(dst)!r}",
            body={"source": identifier_to_json(src), "destination": identifier_to_json(dst)},
        )
        with self._etag_lock:
            self._etags.pop(src, None)
        return self.load_table(dst)

    def register_table(self, identifier: str | Iterable[str], metadata_location: str) -> Table:
        """Register an existing metadata file as a table."""
        self._require(ep.REGISTER_TABLE)
        ident = self._table_identifier(identifier)
        resp = self._call(
            "POST",
            f"{self._ns_path(ident[:-1])}/register",
            f"register table {'.'.join(ident)!r}",
            body={"name": ident[-1], "metadata-location": metadata_location},
        )
        return self._result_table(ident, LoadTableResult.from_json(resp.json()))

    # -- commits --------------------------------------------------------------------------------
    def commit_table(
        self,
        table: Table,
        requirements: Iterable[TableRequirement],
        updates: Iterable[TableUpdate],
    ) -> CommitResult:
        """Send requirements and updates to the server (see the module docstring for retries).

        A table from :meth:`create_table_transaction` (no metadata file yet) is created by
        this commit: ``assert-create`` plus the updates that make it, then ``updates``.
        """
        self._require(ep.UPDATE_TABLE)
        ident = table.identifier
        reqs = list(requirements)
        ups = list(updates)
        staged = not table.metadata_location
        if staged:
            reqs = [AssertCreate()]
            ups = creation_updates(table.metadata) + ups
        policy = RetryPolicy.from_properties(table.metadata.properties)
        deadline = time.monotonic() + policy.total_timeout_ms / 1000.0
        body = {
            "identifier": identifier_to_json(ident),
            "requirements": [r.to_json() for r in reqs],
            "updates": [u.to_json() for u in ups],
        }
        path = self._table_path(ident)
        what = f"commit to table {'.'.join(ident)!r}"
        key = uuid7() if self.idempotency_lifetime else None
        attempt = 0
        started = time.perf_counter_ns()
        uncertain = False  # an earlier attempt may have committed
        while True:
            headers = {"Idempotency-Key": key} if key else {}
            try:
                resp = self._send("POST", path, body=body, headers=headers)
            except TransportError as exc:
                if not exc.maybe_sent and not uncertain:
                    raise CommitFailedError(f"{what}: {exc}") from exc
                resp = None
                failure = str(exc)
            if resp is not None and resp.status == 200:
                result = LoadTableResult.from_json(resp.json())
                with self._etag_lock:
                    self._etags.pop(ident, None)
                if staged:
                    table.io = FileIO(merge_io_properties(self.properties, result.io_properties()))
                self._report_commit(ident, ups, result.metadata, attempt + 1, started)
                return CommitResult(result.metadata, result.metadata_location or "")
            if resp is not None and resp.status == 409:
                if uncertain:
                    # A retry after an unknown outcome may conflict with our own first attempt:
                    # rebuilding now could apply the same change twice.
                    done = self._committed(ident, ups)
                    if done is not None:
                        return done
                if staged:
                    raise exception_for_error(resp.status, resp.body, what)
                attempt += 1
                wait = policy.wait_ms(attempt) / 1000.0
                if attempt > policy.num_retries or time.monotonic() + wait > deadline:
                    raise exception_for_error(resp.status, resp.body, what)
                fresh = self._load_result(ident, "all").metadata
                try:
                    validate_requirements(reqs, fresh)
                except CommitFailedError as exc:
                    raise CommitConflictError(
                        f"{what} conflicts with the table's current state: {exc}"
                    ) from exc
                time.sleep(wait)
                key = uuid7() if self.idempotency_lifetime else None  # a 409 is final per key
                continue
            if resp is None or resp.status in _UNKNOWN_STATUS:
                if resp is not None:
                    failure = str(exception_for_error(resp.status, resp.body, what))
                uncertain = True
                attempt += 1
                if key is not None and attempt <= policy.num_retries:
                    time.sleep(policy.wait_ms(attempt) / 1000.0)
                    continue  # the same key: the server replays the first outcome if any
                done = self._committed(ident, ups)
                if done is not None:
                    return done
                raise CommitStateUnknownError(
                    f"{what}: the outcome is unknown ({failure}); no file was deleted"
                )
            raise exception_for_error(resp.status, resp.body, what)

    def _report_commit(
        self,
        ident: Identifier,
        updates: list[TableUpdate],
        metadata: TableMetadata,
        attempts: int,
        started_ns: int,
    ) -> None:
        """Send a commit report for the snapshots the commit added; never raises."""
        if not self._metrics_enabled or ep.REPORT_METRICS not in self.endpoints:
            return
        added = [u.snapshot.snapshot_id for u in updates if isinstance(u, AddSnapshot)]
        if not added:
            return
        snapshot = metadata.snapshot_by_id(added[-1])
        if snapshot is None:
            return
        duration = time.perf_counter_ns() - started_ns
        name = ".".join(ident)
        self._post_report(ident, lambda: commit_report(name, snapshot, attempts, duration))

    def report_scan(self, table: Table, report: ScanReport) -> None:
        """Send a scan report for a scan planned on ``table``; never raises."""
        if not self._metrics_enabled or ep.REPORT_METRICS not in self.endpoints:
            return
        if not table.metadata_location:  # a staged create: the table does not exist yet
            return
        ident = table.identifier
        self._post_report(ident, lambda: scan_report(".".join(ident), report))

    def _post_report(self, ident: Identifier, build: Callable[[], dict[str, Any]]) -> None:
        """POST a metrics report and count it as sent or failed; never raises."""
        try:
            resp = self._send("POST", f"{self._table_path(ident)}/metrics", body=build())
            ok = resp.status in (200, 204)
        except Exception as exc:  # a report must never fail the user's operation
            log.debug("metrics report for %s failed: %s", ".".join(ident), type(exc).__name__)
            ok = False
        if ok:
            self.metrics_reports_sent += 1
        else:
            self.metrics_reports_failed += 1

    def _committed(self, ident: Identifier, updates: list[TableUpdate]) -> CommitResult | None:
        """After an unknown outcome: the table's state if it shows our new snapshots, else None.

        Only a commit that adds snapshots can be recognised; every other outcome stays unknown.
        """
        added = {u.snapshot.snapshot_id for u in updates if isinstance(u, AddSnapshot)}
        if not added:
            return None
        try:
            fresh = self._load_result(ident, "all")
        except Exception:  # the server may still be down
            return None
        present = {s.snapshot_id for s in fresh.metadata.snapshots}
        if added <= present:
            return CommitResult(fresh.metadata, fresh.metadata_location or "")
        return None

    def commit_tables(
        self, changes: Iterable[tuple[Table, list[TableRequirement], list[TableUpdate]]]
    ) -> None:
        """Commit changes to several tables at once (``POST /transactions/commit``).

        All or nothing: 409 (:class:`CommitFailedError`) if any requirement fails, nothing
        changed; 5xx or a timeout is :class:`CommitStateUnknownError`.
        """
        self._require(ep.COMMIT_TRANSACTION)
        items = list(changes)
        body = {
            "table-changes": [
                {
                    "identifier": identifier_to_json(t.identifier),
                    "requirements": [r.to_json() for r in reqs],
                    "updates": [u.to_json() for u in ups],
                }
                for t, reqs, ups in items
            ]
        }
        what = "multi-table commit of " + ", ".join(".".join(t.identifier) for t, _, _ in items)
        key = uuid7() if self.idempotency_lifetime else None
        attempts = 1 + (RetryPolicy().num_retries if key else 0)
        failure = ""
        uncertain = False
        for attempt in range(attempts):
            headers = {"Idempotency-Key": key} if key else {}
            try:
                resp = self._send(
                    "POST", f"{self._prefix}/transactions/commit", body=body, headers=headers
                )
            except TransportError as exc:
                if not exc.maybe_sent and not uncertain:
                    raise CommitFailedError(f"{what}: {exc}") from exc
                failure = str(exc)
                uncertain = True
            else:
                if resp.status in (200, 204):
                    with self._etag_lock:
                        for t, _, _ in items:
                            self._etags.pop(t.identifier, None)
                    return
                if resp.status == 409 and uncertain:
                    # the conflict may be with our own first attempt (see commit_table)
                    done = [self._committed(t.identifier, ups) for t, _, ups in items]
                    if all(d is not None for d in done):
                        return
                    if any(d is not None for d in done):
                        raise CommitStateUnknownError(f"{what}: the outcome is unknown")
                if resp.status not in _UNKNOWN_STATUS:
                    raise exception_for_error(resp.status, resp.body, what)
                failure = str(exception_for_error(resp.status, resp.body, what))
                uncertain = True
            if attempt + 1 < attempts:
                time.sleep(RetryPolicy().wait_ms(attempt + 1) / 1000.0)
        raise CommitStateUnknownError(f"{what}: the outcome is unknown ({failure})")

    # -- views ----------------------------------------------------------------------------------
    def list_views(self, namespace: str | Iterable[str]) -> list[Identifier]:
        """Identifiers of the views in ``namespace``."""
        self._require(ep.LIST_VIEWS)
        ns = to_identifier(namespace)
        self._ns_string(ns)
        found = self._paged(
            f"{self._ns_path(ns)}/views", f"list views of {'.'.join(ns)!r}", "identifiers", {}
        )
        return [identifier_from_json(i) for i in found]

    def _view_path(self, ident: Identifier) -> str:
        return f"{self._ns_path(ident[:-1])}/views/{ep.encode_name(ident[-1])}"

    def load_view(self, identifier: str | Iterable[str]) -> dict[str, Any]:
        """The view's ``LoadViewResult`` (``metadata-location``, ``metadata``, ``config``)."""
        self._require(ep.LOAD_VIEW)
        ident = self._table_identifier(identifier)
        resp = self._send("GET", self._view_path(ident))
        if resp.status == 404:
            raise NoSuchViewError(f"view {'.'.join(ident)!r} does not exist")
        if resp.status != 200:
            raise exception_for_error(resp.status, resp.body, f"load view {'.'.join(ident)!r}")
        body: dict[str, Any] = resp.json()
        return body

    def view_exists(self, identifier: str | Iterable[str]) -> bool:
        """Whether the view exists."""
        try:
            self.load_view(identifier)
        except NoSuchViewError:
            return False
        return True

    def drop_view(self, identifier: str | Iterable[str]) -> None:
        """Drop a view."""
        self._require(ep.DROP_VIEW)
        ident = self._table_identifier(identifier)
        resp = self._send("DELETE", self._view_path(ident))
        if resp.status == 404:
            raise NoSuchViewError(f"view {'.'.join(ident)!r} does not exist")
        if resp.status not in (200, 204):
            raise exception_for_error(resp.status, resp.body, f"drop view {'.'.join(ident)!r}")

    # -- primitives of file-based catalogs, which a REST catalog leaves to its server -----------
    def _create_entry(self, identifier: Identifier, metadata: TableMetadata) -> str:
        raise UnsupportedFeatureError("a REST catalog creates tables on its server")

    def _write_and_swap(
        self, identifier: Identifier, base: TableMetadata, base_location: str, new: TableMetadata
    ) -> str:
        raise UnsupportedFeatureError("a REST catalog commits through its server")

    def _drop_entry(self, identifier: Identifier) -> None:
        self.drop_table(identifier)

    def _default_table_location(self, identifier: Identifier) -> str:
        raise UnsupportedFeatureError("a REST catalog's server chooses table locations")
