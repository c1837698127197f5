"""The REST client's plumbing: configuration (``GET /v1/config``: defaults, the user's
properties, overrides, endpoints), authenticated requests with one retry after a 401/419,
paths, pagination and the FileIO of tables (see :mod:`icefloe.catalog.rest.catalog` for the
properties).
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from icefloe.catalog.base import Catalog, Identifier
from icefloe.catalog.rest import config as ep
from icefloe.catalog.rest.auth import auth_from_properties
from icefloe.catalog.rest.errors import UNKNOWN_OUTCOME_STATUS, exception_for_error
from icefloe.catalog.rest.http import HttpResponse, HttpSession, TransportError, request_path
from icefloe.catalog.rest.sigv4 import signer_from_properties
from icefloe.catalog.rest.wire import (
    LoadTableResult,
    answer_list,
    answer_map,
    answer_object,
    merge_io_properties,
    uuid7,
)
from icefloe.exceptions import (
    IcebergError,
    OperationNotOfferedError,
    TableAlreadyExistsError,
    ValidationError,
)
from icefloe.filesystems import secret_values
from icefloe.io import FileIO
from icefloe.properties import parse_int, parse_seconds

__all__ = ["RestClient"]


class RestClient(Catalog):
    """The requests of a REST catalog; the operations are in the subclasses."""

    def __init__(self, name: str, **properties: str) -> None:
        super().__init__(name, **properties)
        uri = properties.get("uri")
        if not uri:
            raise ValidationError("a REST catalog needs a 'uri' property (http(s)://host:port)")
        timeout = parse_seconds(
            "rest.client.socket-timeout-ms",
            properties.get("rest.client.socket-timeout-ms", "60000"),
            0.001,
        )
        pool = parse_int(
            "rest.client.max-connections",
            properties.get("rest.client.max-connections", "16"),
            1,
            "catalog property",
        )
        self._session = HttpSession(uri, timeout=timeout, pool_size=pool)
        self._headers = {"X-Client-Version": "icefloe", **ep.header_properties(dict(properties))}
        self._auth = auth_from_properties(properties, self._session, self._headers)
        self._signer = signer_from_properties(properties)
        self._etags: dict[Identifier, tuple[str, LoadTableResult]] = {}
        self._etag_lock = threading.Lock()
        self._fetch_config()

    def _fetch_config(self) -> None:
        query = (
            {"warehouse": self.properties["warehouse"]} if "warehouse" in self.properties else {}
        )
        resp = self._send("GET", "/v1/config", query=query)
        if resp.status != 200:
            raise self._error(resp, "GET /v1/config")
        body = answer_object(resp.json(), "GET /v1/config")
        defaults = answer_map(body.get("defaults"), "GET /v1/config defaults")
        overrides = answer_map(body.get("overrides"), "GET /v1/config overrides")
        self.properties = {**defaults, **self.properties, **overrides}
        views = self.properties.get("view-endpoints-supported", "false").lower() == "true"
        self.endpoints = ep.endpoint_set(body.get("endpoints"), views)
        self.idempotency_lifetime: str | None = body.get("idempotency-key-lifetime")
        prefix = self.properties.get("prefix", "").strip("/")
        self._prefix = f"/v1/{request_path(prefix)}" if prefix else "/v1"
        page_size = self.properties.get("rest-page-size")
        self._page_size = (  # a positive integer, as Java's client requires
            None
            if page_size is None
            else str(parse_int("rest-page-size", page_size, 1, "catalog property"))
        )
        self._separator = ep.namespace_separator(self.properties)
        self._snapshots = self.properties.get("snapshot-loading-mode", "all").lower()
        if self._snapshots not in ("all", "refs"):
            raise ValidationError("snapshot-loading-mode must be 'all' or 'refs'")
        self._metrics_enabled = (
            self.properties.get("rest-metrics-reporting-enabled", "true").lower() == "true"
        )
        self.metrics_reports_sent = 0
        self.metrics_reports_failed = 0
        self._reports_pending = 0
        self._reports_done = threading.Condition()
        self._reporter: threading.Thread | None = None
        self._report_queue: queue.SimpleQueue[tuple[Identifier, dict[str, Any]] | None] = (
            queue.SimpleQueue()
        )
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
            raise OperationNotOfferedError(f"the REST server does not offer {endpoint}")

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
        mutation: bool = False,
        **kwargs: Any,
    ) -> HttpResponse:
        """One request; an answer not in ``ok`` raises its error.

        A ``mutation`` (create, drop, rename, register) carries an ``Idempotency-Key`` when the
        server advertises keys, the same on each send: a gateway repeating it gets the first
        answer replayed (a drop that happened is not reported as a missing table), and a lost
        answer or a 500/502/503/504 is sent again (:data:`MUTATION_RESENDS` times) with it.
        """
        key = uuid7() if mutation and self.idempotency_lifetime else None
        if key is not None:
            kwargs["headers"] = {**(kwargs.get("headers") or {}), "Idempotency-Key": key}
        earlier: HttpResponse | TransportError | None = None  # a failure a resend followed
        for resend in range(MUTATION_RESENDS + 1):
            last = key is None or resend == MUTATION_RESENDS
            try:
                resp = self._send(method, path, **kwargs)
            except TransportError as exc:
                if last:
                    raise
                earlier = exc
            else:
                if last or resp.status not in UNKNOWN_OUTCOME_STATUS:
                    break
                earlier = resp
            time.sleep(MUTATION_RESEND_WAIT * (resend + 1))
        if resp.status not in ok:
            if earlier is not None and resp.status in (404, 409):
                # the server stores no 5xx answer, so the resend ran again and may have met
                # what the failed send did (a drop that removed the entry, then failed): the
                # first failure is the answer, not "no such table" or "already exists"
                if isinstance(earlier, TransportError):
                    raise earlier
                raise self._error(earlier, what, exists or TableAlreadyExistsError)
            raise self._error(resp, what, exists or TableAlreadyExistsError)
        return resp

    def _error(
        self,
        resp: HttpResponse,
        what: str,
        exists: type[IcebergError] = TableAlreadyExistsError,
    ) -> IcebergError:
        """The error for the answer ``resp`` to ``what``, without the secrets this client
        holds (its token or client secret, the OAuth2 access token, its credential
        properties), which a server or a gateway may quote from the request."""
        return exception_for_error(resp.status, resp.body, what, exists, self._secrets())

    def _secrets(self) -> list[str]:
        # a credential property's value shorter than 8 characters is a setting ("true")
        held = [v for v in secret_values(self.properties) if len(v) >= 8]
        return [*self._auth.secrets(), *held]

    def _ns_path(self, namespace: Iterable[str]) -> str:
        parts = self._ns_levels(namespace)
        return f"{self._prefix}/namespaces/{ep.encode_namespace(parts, self._separator)}"

    def _ns_levels(self, namespace: Iterable[str]) -> tuple[str, ...]:
        """The levels of ``namespace``, each refused when it holds ``/`` or the separator of
        multi-level namespaces (the server would split it: ``("a\x1fb", "t")`` is ``a.b.t``
        there, another table, which a purge would delete)."""
        parts = tuple(namespace)
        for part in parts:
            _check_segment(part, "namespace level")
            if self._separator in part:
                raise ValidationError(
                    f"invalid namespace level {part!r}: it must not contain the namespace "
                    f"separator {self._separator!r}"
                )
        return parts

    def _table_path(self, ident: Identifier) -> str:
        _check_segment(ident[-1], "table name")
        return f"{self._ns_path(ident[:-1])}/tables/{ep.encode_name(ident[-1])}"

    def _paged(self, path: str, what: str, key: str, query: dict[str, str]) -> list[Any]:
        """Every item of a list endpoint; the first request sends an empty ``pageToken`` (as
        Iceberg Java does) so that servers page, a server that does not page answers all."""
        out: list[Any] = []
        token = ""
        seen: set[str] = set()
        while True:
            q = dict(query)
            if self._page_size:
                q["pageSize"] = self._page_size
            q["pageToken"] = token
            body = answer_object(self._call("GET", path, what, query=q).json(), what)
            out.extend(answer_list(body.get(key), what))
            nxt = body.get("next-page-token")
            if not nxt:
                return out
            if not isinstance(nxt, str):
                raise ValidationError(f"{what}: the page token {nxt!r} is not a string")
            if nxt in seen:
                # a server that hands out a token again would be asked for ever
                raise IcebergError(
                    f"{what}: the server answered the page token {nxt!r} again; "
                    "its paging does not end"
                )
            seen.add(nxt)
            token = nxt

    def table_io(
        self,
        table_properties: Mapping[str, str],
        credentials: Mapping[str, str] | None = None,
        refresh_credentials: Callable[[], Mapping[str, str]] | None = None,
        storage_credentials: Sequence[tuple[str, Mapping[str, str]]] = (),
        refresh_storage_credentials: Callable[[], Sequence[tuple[str, Mapping[str, str]]]]
        | None = None,
        own_prefix: str | None = None,
    ) -> FileIO:
        """A FileIO for a table, without the catalog's own credentials: the table's storage
        properties (and ``credentials`` vended for it); ``refresh_credentials`` renews them
        before ``s3.session-token-expires-at-ms``. ``storage_credentials`` serve the
        locations under their prefixes, but for ``own_prefix``, served by the FileIO's own
        properties (see :class:`~icefloe.io.FileIO`)."""
        props = merge_io_properties(self.properties, {**table_properties, **(credentials or {})})
        return FileIO(
            props,
            refresh_credentials=refresh_credentials,
            storage_credentials=storage_credentials,
            refresh_storage_credentials=refresh_storage_credentials,
            own_prefix=own_prefix,
        )

    @property
    def io(self) -> FileIO:
        if self._io is None:
            self._io = FileIO(merge_io_properties(self.properties, {}))
        return self._io

    def _view_path(self, ident: Identifier) -> str:
        _check_segment(ident[-1], "view name")
        return f"{self._ns_path(ident[:-1])}/views/{ep.encode_name(ident[-1])}"


#: Times a mutation whose answer was lost (or a 500/502/503/504) is sent again with its
#: Idempotency-Key, and the wait before the first resend in seconds (doubled for the next).
MUTATION_RESENDS = 2
MUTATION_RESEND_WAIT = 0.2


def _check_segment(part: str, what: str) -> None:
    """Refuse a name with ``/`` before it goes into a path: servers refuse an encoded ``/``
    (Iceberg Java's and icefloe's answer 400) and icefloe's catalogs cannot hold one."""
    if "/" in part:
        raise ValidationError(f"invalid {what} {part!r}: it must not contain '/'")
