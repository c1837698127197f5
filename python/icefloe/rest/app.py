"""The ASGI application: routes of Iceberg's REST catalog API over a :class:`RestService`.

Every request is logged once at INFO on the ``icefloe.rest`` logger (client, method, path,
status, milliseconds; never headers or bodies; control characters of the decoded path written
out as ``\\x1b``, ``\\n``). Auth is checked before anything else; a mutating request with an
``Idempotency-Key`` goes through the :class:`~icefloe.rest.idempotency.IdempotencyStore` (a
failed lookup of its stored answers is answered as the catalog's errors are: a database that
cannot be reached is a 503). Catalog work runs in worker threads. Bodies are read up to a
limit (:data:`MAX_BODY_BYTES`, :data:`MAX_TOKEN_BODY_BYTES` for the token endpoint) and
refused with 413 beyond it; every error, unknown routes included, is an
``IcebergErrorResponse`` (the token endpoint answers OAuth2 errors). A path with an encoded
``/`` or ``\\`` (``%2F``, ``%5C``) is refused with 400 before routing: routes match the decoded
path, so it would address another resource (a namespace named ``a/tables/t`` is table ``a.t``).
A request a web browser sends for a page (with ``Origin`` or ``Sec-Fetch-Site``) is refused
with 403, and a POST body declared as anything but JSON with 415, so a web page the user
visits cannot drive a server without auth on their machine.
Routes of the REST spec this server does not implement (fetching or cancelling a plan and its
plan tasks: plans complete at once; functions, signing, unregister) answer 406
``UnsupportedOperationException``, and so do the view routes when the catalog keeps no views
(a file-system catalog).
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from icefloe.catalog.base import Catalog
from icefloe.catalog.rest.errors import (
    CORRUPT_FILE_ERROR_TYPE,
    STORAGE_ERROR_TYPE,
    error_body,
    error_for_exception,
)
from icefloe.catalog.sql_hook import PointerChange
from icefloe.exceptions import (
    CommitConflictError,
    CommitFailedError,
    IcebergError,
    UnsupportedFeatureError,
    ValidationError,
)
from icefloe.io.errors import scrub
from icefloe.rest.browsers import JSON, browser_refusal
from icefloe.rest.idempotency import (
    IdempotencyKeyReused,
    IdempotencyStore,
    MemoryReplies,
    Replies,
    SqlReplies,
    StoredReply,
    fingerprint,
    legacy_fingerprint,
    parse_duration,
)
from icefloe.rest.security import Authenticator
from icefloe.rest.service import (
    CredentialProvider,
    Reply,
    RestService,
    decode_namespace,
    printable,
)

__all__ = ["create_app", "warehouse_catalogs"]

log = logging.getLogger("icefloe.rest")

_DELEGATION = "x-iceberg-access-delegation"
#: Headers of every token endpoint answer (RFC 6749 5.1: tokens must not be cached).
_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
#: Error types of the statuses Starlette's router raises (unknown path, wrong method).
_ROUTING_ERRORS = {404: "NotFoundException", 405: "MethodNotAllowedException"}

#: A JSON escape of a UTF-16 surrogate (``\\ud800`` to ``\\udfff``).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _json_reply(status: int, body: Any, headers: Mapping[str, str] | None = None) -> StoredReply:
    data = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
    return StoredReply(status, data, JSON, tuple((headers or {}).items()))


# icefloe's messages -> the wording of Iceberg Java's catalogs, which Java clients and
# Iceberg's REST compatibility kit expect.
_JAVA_MESSAGES = [
    (re.compile(r"^namespace '(.+)' does not exist$"), "Namespace does not exist: {}"),
    (re.compile(r"^namespace '(.+)' already exists$"), "Namespace already exists: {}"),
    (re.compile(r"^namespace '(.+)' is not empty$"), "Namespace {} is not empty"),
    (re.compile(r"^table '(.+)' does not exist$"), "Table does not exist: {}"),
    (re.compile(r"^table '(.+)' already exists$"), "Table already exists: {}"),
    (re.compile(r"^view '(.+)' does not exist$"), "View does not exist: {}"),
    (
        re.compile(r"^cannot open (\S+): file not found$"),
        "Failed to open input stream for file: {}",
    ),
]


def _message(exc: BaseException) -> str:
    if isinstance(exc, CommitConflictError) and isinstance(exc.__cause__, CommitFailedError):
        return str(exc.__cause__)  # "Requirement failed: ...", as Java words it
    text = str(exc)
    for pattern, java in _JAVA_MESSAGES:
        m = pattern.match(text)
        if m:
            return java.format(m.group(1))
    return text


def _error(exc: BaseException) -> StoredReply:
    status, type_ = error_for_exception(exc)
    if status == 500 and not isinstance(exc, IcebergError):
        log.exception("internal error")
        message = f"internal server error ({type(exc).__name__})"
    elif type_ == STORAGE_ERROR_TYPE:
        # said as the server's failure, not the client's; the message names the file (as
        # a load answer would) and holds no secret of the server's storage
        message = f"the server's storage failed: {scrub(_message(exc))}"
        log.warning("%s", printable(message))
    elif type_ == CORRUPT_FILE_ERROR_TYPE:
        # a file the server keeps is damaged (a metadata file it cannot parse): named, so
        # whoever runs the server can repair it
        message = f"a file on the server's storage is damaged: {scrub(_message(exc))}"
        log.warning("%s", printable(message))
    else:
        message = _message(exc)
    return _json_reply(status, error_body(status, type_, message))


Handler = Callable[[RestService, Request, Any], Reply]
#: The credentials (``config``, ``storage-credentials``) of a route's answer (the last
#: argument), for a replay by Idempotency-Key: they are not stored with the answer.
Access = Callable[[RestService, Request, Any, dict[str, Any]], dict[str, Any]]
#: The answer of a route's request (its parsed body the third argument: the same as the first
#: attempt's, which the request's fingerprint holds it to) from the catalog change it
#: committed (recorded in the request's marker row, see :mod:`icefloe.rest.idempotency`),
#: without credentials.
Pending = Callable[[RestService, Request, Any, PointerChange], Reply]

_WAREHOUSE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
MAX_BODY_BYTES = 64 << 20  # a commit's JSON is far smaller; refuse anything beyond
MAX_TOKEN_BODY_BYTES = 64 << 10  # a form of a few fields, read before any auth
MAX_WAREHOUSES = 1000  # catalogs one server opens on demand (each holds a connection pool)


class _NotFinite(ValueError):
    """A number of the request body that is NaN or infinite."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(f"the number {text[:40]} (beyond a double)")
    return value


def _no_constant(name: str) -> Any:
    raise _NotFinite(name)


def _parse_body(raw: bytes) -> Any:
    """The JSON of a request body; NaN, Infinity and numbers beyond a double are refused
    (RFC 8259 has no such numbers: metadata holding them is not JSON other readers parse)."""
    return json.loads(raw, parse_float=_finite, parse_constant=_no_constant)


async def _read_body(request: Request, limit: int) -> bytes | None:
    """The request body, or None as soon as more than ``limit`` bytes have arrived (a larger
    body is never held in memory).

    A declared ``Content-Length`` is not refused before reading: the answer would come while
    the client still sends, and uvicorn closes the connection 5 s later, so a client that
    sends a large body whole would see a broken pipe instead of the 413."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _logged_path(request: Request) -> str:
    """The decoded path the routes matched, with ``?``, ``#`` and ``\\`` percent-encoded as in
    ``request.url`` (which also drops tabs and line breaks: the log would not show the path
    that was served)."""
    path = str(request.scope.get("path") or request.url.path)
    return path.replace("?", "%3F").replace("#", "%23").replace("\\", "%5C")


def _log_request(request: Request, status: int, started: float, path: str | None = None) -> None:
    """One line per request; control characters of the path (and of everything else a client
    chooses) are written out (``\\x1b``, ``\\n``), so a request cannot forge log lines or send
    escape codes to a terminal showing the log."""
    client = request.client.host if request.client else "-"
    elapsed = (time.perf_counter() - started) * 1000
    path = _logged_path(request) if path is None else path
    method = printable(request.method)
    log.info('%s "%s %s" %d %.1fms', printable(client), method, printable(path), status, elapsed)


async def _client_gone(request: Request, exc: Exception) -> Response:
    """A client that disconnected before its request body arrived: one log line (not an
    application error with a traceback); the answer goes nowhere."""
    client = request.client.host if request.client else "-"
    log.info(
        "%s disconnected before sending %s %s",
        printable(client),
        printable(request.method),
        printable(_logged_path(request)),
    )
    return Response(status_code=400)


async def _routing_error(request: Request, exc: Exception) -> Response:
    """An ``IcebergErrorResponse`` for the router's 404 (no such path) and 405 (wrong method,
    with ``Allow``)."""
    if not isinstance(exc, HTTPException):
        raise exc
    status = exc.status_code
    _log_request(request, status, time.perf_counter())
    message = f"{exc.detail}: {request.method} {request.url.path}"
    body = error_body(status, _ROUTING_ERRORS.get(status, "BadRequestException"), message)
    headers = dict(exc.headers or {})
    if status == 405:  # Starlette names only the first route of the path
        routes = [r for r in request.app.router.routes if isinstance(r, Route)]
        allowed = {
            m for r in routes if r.matches(request.scope)[0] != Match.NONE for m in r.methods or ()
        }
        headers["Allow"] = ", ".join(sorted(allowed))
    if request.method == "HEAD":
        return Response(status_code=status, headers=headers)
    return Response(json.dumps(body, separators=(",", ":")), status, headers, JSON)


#: ``%2F`` (slash) and ``%5C`` (backslash) in a raw path, any case.
_ENCODED_SEPARATOR = re.compile(rb"%(?:2f|5c)", re.IGNORECASE)


class _RefuseEncodedSeparators:
    """ASGI middleware: 400 ``BadRequestException`` for a request whose raw path has an encoded
    ``/`` or ``\\``, before routing (which matches the decoded path, where ``%2F`` would split a
    namespace level into path segments); Iceberg Java's server refuses them too. The 0x1F
    separator of multi-level namespaces (``%1F``) is unaffected."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path") if scope["type"] == "http" else None
        path = (raw or b"").partition(b"?")[0]  # raw_path has no query; in case a server adds it
        if not _ENCODED_SEPARATOR.search(path):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request = Request(scope, receive)
        message = (
            "the path contains an encoded '/' or '\\' (%2F or %5C): namespace levels and table "
            "names cannot contain them"
        )
        body = json.dumps(error_body(400, "BadRequestException", message), separators=(",", ":"))
        # the path as sent: decoded, it would name another resource
        _log_request(request, 400, started, path.decode("ascii", "replace"))
        if request.method == "HEAD":
            response = Response(status_code=400, media_type=JSON)
        else:
            response = Response(body, 400, media_type=JSON)
        await response(scope, receive, send)


class _RefuseBrowsers:
    """ASGI middleware answering :func:`~icefloe.rest.browsers.browser_refusal`'s refusals
    before routing."""

    def __init__(self, app: ASGIApp, allowed_hosts: Collection[str] | None = None) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = browser_refusal(scope, self.allowed_hosts) if scope["type"] == "http" else None
        if refusal is None:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request = Request(scope, receive)
        status, type_, message = refusal
        _log_request(request, status, started)
        body = json.dumps(error_body(status, type_, message), separators=(",", ":"))
        response = (
            Response(status_code=status, media_type=JSON)
            if request.method == "HEAD"
            else Response(body, status, media_type=JSON)
        )
        await response(scope, receive, send)


#: Routes of the REST spec this server does not implement (under the base path): path,
#: methods, what the message names. They answer 406 instead of a 404, which clients would take
#: for a missing namespace or table.
_UNSUPPORTED_ROUTES = [
    (
        "/namespaces/{namespace}/tables/{table}/plan/{plan_id}",
        ["GET", "DELETE"],
        "asynchronous scan planning (plans complete at once, with no plan id)",
    ),
    (
        "/namespaces/{namespace}/tables/{table}/tasks",
        ["POST"],
        "plan tasks (plans complete at once, with every file scan task)",
    ),
    ("/namespaces/{namespace}/tables/{table}/unregister", ["POST"], "unregistering tables"),
    ("/namespaces/{namespace}/tables/{table}/sign", ["POST"], "remote signing"),
    ("/namespaces/{namespace}/functions", ["GET"], "functions"),
    ("/namespaces/{namespace}/functions/{function}", ["GET"], "functions"),
]


def warehouse_catalogs(catalog: Catalog) -> Callable[[str], Catalog]:
    """Catalogs named after warehouses, each like ``catalog`` with its warehouse in a
    sub-directory (for the SQL catalog: rows of their own in the same database)."""
    root = catalog.properties.get("warehouse", "").rstrip("/")
    if not root:
        raise ValidationError("serving several warehouses needs the catalog's 'warehouse'")

    def make(name: str) -> Catalog:
        return type(catalog)(name, **{**catalog.properties, "warehouse": f"{root}/{name}"})

    return make


def _replies_for(catalog: Catalog) -> Replies:
    """Where finished replies are kept: the SQL catalog's database, else memory."""
    from icefloe.catalog.sql import SqlCatalog

    if isinstance(catalog, SqlCatalog):
        return SqlReplies(catalog.engine, catalog.name)
    return MemoryReplies()


def create_app(
    catalog: Catalog,
    *,
    warehouses: Callable[[str], Catalog] | None = None,
    tokens: list[str] | tuple[str, ...] = (),
    clients: Mapping[str, str] | None = None,
    token_lifetime_s: int = 3600,
    prefix: str = "",
    idempotency_lifetime: str | None = "PT30M",
    table_config: Mapping[str, str] | None = None,
    storage_credentials: Sequence[tuple[str, Mapping[str, str]]] = (),
    credential_provider: CredentialProvider | None = None,
    allowed_hosts: Collection[str] | None = None,
) -> Starlette:
    """An ASGI app serving ``catalog`` over Iceberg's REST catalog protocol.

    ``tokens`` are accepted bearer tokens; ``clients`` maps OAuth2 client ids to secrets for
    ``POST /v1/oauth/tokens`` (tokens it issues last ``token_lifetime_s``); with neither, no
    auth is required. ``prefix`` is advertised in
    the config and used in every path; ``idempotency_lifetime`` (ISO-8601, ``None`` to turn
    replay off) is advertised and how long finished replies are kept (in a SQL catalog's
    database, so they outlive a restart; else in memory); ``table_config`` is
    returned as every table's ``config`` (for example storage endpoints for clients);
    ``storage_credentials`` (``(prefix, properties)`` pairs) are vended with the tables under
    their prefix to clients that send ``X-Iceberg-Access-Delegation: vended-credentials``;
    ``credential_provider`` (a :data:`~icefloe.rest.service.CredentialProvider`) vends
    credentials made per table and request, for example short-lived keys, on every table load
    and ``GET .../credentials`` (clients renew expiring ones through the latter).

    With ``warehouses`` (a function from a warehouse name to its catalog, e.g.
    :func:`warehouse_catalogs`) the server serves one catalog per ``?warehouse=`` name given to
    ``GET /v1/config``, which answers that name as the ``prefix`` of every later path.

    ``allowed_hosts`` are the ``Host`` names served (None: any); see
    :func:`~icefloe.rest.browsers.allowed_hosts_for`.
    """
    options: dict[str, Any] = {
        "idempotency_lifetime": idempotency_lifetime,
        "table_config": table_config,
        "storage_credentials": storage_credentials,
        "credential_provider": credential_provider,
    }
    service = RestService(catalog, prefix=prefix, **options)
    services: dict[str, RestService] = {}
    services_lock = threading.Lock()

    def service_for(request: Request) -> RestService:
        name = request.path_params.get("prefix")
        if warehouses is None or name is None:
            return service
        if not _WAREHOUSE_NAME.fullmatch(name):
            raise ValidationError(f"invalid warehouse name {name!r}")
        with services_lock:
            found = services.get(name)
            if found is None:
                if len(services) >= MAX_WAREHOUSES:
                    raise ValidationError(f"this server serves at most {MAX_WAREHOUSES} warehouses")
                found = RestService(warehouses(name), prefix=name, **options)
                services[name] = found
            return found

    def config(s: RestService, request: Request, body: Any) -> Reply:
        query = q(request)
        if warehouses is None:
            return s.config(query)
        name = query.get("warehouse")
        if not name:
            raise ValidationError("this server needs ?warehouse=<name> (one catalog per name)")
        request.path_params["prefix"] = name
        return service_for(request).config(query)

    auth = Authenticator(tokens, clients, token_lifetime_s)
    store = (
        IdempotencyStore(parse_duration(idempotency_lifetime), _replies_for(catalog))
        if idempotency_lifetime
        else None
    )
    if warehouses is not None:
        base = "/v1/{prefix}"
    else:
        base = f"/v1/{service.prefix}" if service.prefix else "/v1"

    def route(
        path: str,
        methods: list[str],
        handler: Handler,
        access: Access | None = None,
        pending: Pending | None = None,
    ) -> Route:
        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            reply = await _dispatch(request, handler, access, pending)
            status = reply.status
            _log_request(request, status, started)
            headers = dict(reply.headers)
            if request.method == "HEAD" or status in (204, 304):
                return Response(status_code=status, headers=headers)
            return Response(
                reply.body, status_code=status, media_type=reply.media_type, headers=headers
            )

        return Route(path, endpoint, methods=methods)

    def authenticate(request: Request) -> str | StoredReply:
        """The request's principal, or the 401 reply; an unexpected failure of the check is a
        401 too (logged by type only: the header holds a secret)."""
        authorization = request.headers.get("authorization")
        try:
            principal = auth.principal(authorization)
        except Exception as exc:
            log.error("bearer token check failed (%s)", type(exc).__name__)
            principal = None
        if principal is not None:
            return principal
        # RFC 6750 3: name the scheme; "invalid_token" when a token was sent
        challenge = 'Bearer error="invalid_token"' if authorization else "Bearer"
        return _json_reply(
            401,
            error_body(401, "NotAuthorizedException", "a valid bearer token is required"),
            {"WWW-Authenticate": challenge},
        )

    def _lone_surrogate(raw: bytes, body: Any) -> bool:
        """Whether JSON ``raw``, parsed as ``body``, escapes a surrogate that pairs with none
        (Python's parser accepts it; nothing can store or answer it)."""
        if not _SURROGATE_ESCAPE.search(raw):
            return False
        try:
            json.dumps(body, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False

    async def _dispatch(
        request: Request,
        handler: Handler,
        access: Access | None = None,
        pending: Pending | None = None,
    ) -> StoredReply:
        principal = authenticate(request)
        if isinstance(principal, StoredReply):
            return principal
        raw = await _read_body(request, MAX_BODY_BYTES)
        if raw is None:
            return _json_reply(
                413, error_body(413, "BadRequestException", "the request body is too large")
            )
        try:
            body = _parse_body(raw) if raw and request.method == "POST" else None
        except _NotFinite as e:
            return _error(ValidationError(f"the request body holds {e}, which JSON cannot"))
        except (ValueError, RecursionError):  # RecursionError: nested too deeply
            return _error(ValidationError("the request body is not valid JSON"))
        if body is not None and _lone_surrogate(raw, body):
            return _error(
                ValidationError(
                    "the request body holds an unpaired UTF-16 surrogate escape (\\ud800 to "
                    "\\udfff alone), which is not Unicode text"
                )
            )

        def run() -> StoredReply:
            try:
                status, out, headers = handler(service_for(request), request, body)
            except Exception as exc:
                return _error(exc)
            return _json_reply(status, out, headers)

        def rebuild(change: PointerChange) -> StoredReply:
            assert pending is not None
            try:
                status, out, headers = pending(service_for(request), request, body, change)
            except Exception as exc:
                return _error(exc)
            return _json_reply(status, out, headers)

        key = request.headers.get("idempotency-key")
        if store is not None and key and request.method in ("POST", "DELETE"):
            method, path = request.method, request.url.path
            this = fingerprint(method, path, request.url.query, principal, body)
            try:
                reply, replayed = await run_in_threadpool(
                    store.run,
                    key,
                    this,
                    run,
                    legacy=legacy_fingerprint(method, path),
                    rebuild=rebuild if pending is not None else None,
                )
            except IdempotencyKeyReused as exc:
                return _json_reply(422, error_body(422, "UnprocessableEntityException", str(exc)))
            except Exception as exc:  # the stored answers could not be looked up: nothing ran
                return _error(exc)
            if replayed and access is not None and reply.status == 200:
                return await run_in_threadpool(_with_access, request, body, reply, access)
            return reply
        return await run_in_threadpool(run)

    def _with_access(
        request: Request, body: Any, reply: StoredReply, access: Access
    ) -> StoredReply:
        """A replayed answer with the credentials it was stored without, as they are now."""
        try:
            out = json.loads(reply.body)
            out.update(access(service_for(request), request, body, out))
        except Exception as exc:
            return _error(exc)
        return _json_reply(reply.status, out, dict(reply.headers))

    def created(s: RestService, r: Request, b: Any, out: dict[str, Any]) -> dict[str, Any]:
        return s.table_access((*ns(r), b["name"]), out["metadata"], r.headers.get(_DELEGATION))

    def registered(s: RestService, r: Request, b: Any, out: dict[str, Any]) -> dict[str, Any]:
        return s.table_access((*ns(r), b["name"]), out["metadata"])

    def view_config(s: RestService, r: Request, b: Any, out: dict[str, Any]) -> dict[str, Any]:
        return {"config": {}}  # a view's answer has no settings (stored without it)

    def no_content(s: RestService, r: Request, b: Any, c: PointerChange) -> Reply:
        return 204, None, {}

    def committed(s: RestService, r: Request, b: Any, c: PointerChange) -> Reply:
        return s.committed_table(c)

    def loaded(s: RestService, r: Request, b: Any, c: PointerChange) -> Reply:
        return s.created_table(c)

    def viewed(s: RestService, r: Request, b: Any, c: PointerChange) -> Reply:
        return s.changed_view(c)

    def namespace_created(s: RestService, r: Request, b: Any, c: PointerChange) -> Reply:
        return s.created_namespace(b)

    def namespace_updated(s: RestService, r: Request, b: Any, c: PointerChange) -> Reply:
        return s.updated_namespace(c)

    def planned(s: RestService, r: Request, b: Any, out: dict[str, Any]) -> dict[str, Any]:
        metadata = s.catalog.load_table(ident(r)).metadata.to_json()
        found = s.table_access(ident(r), metadata, r.headers.get(_DELEGATION))
        return {k: v for k, v in found.items() if k == "storage-credentials"}

    def q(request: Request) -> dict[str, str]:
        return dict(parse_qsl(request.url.query, keep_blank_values=True))

    def ns(request: Request) -> tuple[str, ...]:
        return decode_namespace(request.path_params["namespace"])

    def ident(request: Request) -> tuple[str, ...]:
        return (*ns(request), request.path_params["table"])

    def view(request: Request) -> tuple[str, ...]:
        return (*ns(request), request.path_params["view"])

    async def token_endpoint(request: Request) -> Response:
        started = time.perf_counter()
        raw = await _read_body(request, MAX_TOKEN_BODY_BYTES)
        if raw is None:
            status = 413
            body: dict[str, Any] = {
                "error": "invalid_request",
                "error_description": "the request body is too large",
            }
        else:
            form = dict(parse_qsl(raw.decode("utf-8", "replace")))
            try:
                status, body = auth.grant(form, request.headers.get("authorization"))
            except Exception as exc:  # never a 500; the form holds secrets: log the type only
                log.error("token request check failed (%s)", type(exc).__name__)
                status = 401
                body = {"error": "invalid_client", "error_description": "bad credentials"}
        _log_request(request, status, started)
        headers = dict(_NO_STORE)
        scheme = (request.headers.get("authorization") or "").partition(" ")[0]
        if body.get("error") == "invalid_client" and scheme.lower() == "basic":
            # RFC 6749 5.2: a failed client authentication in the Authorization header is
            # answered with the challenge of the scheme the client used
            headers["WWW-Authenticate"] = 'Basic realm="icefloe"'
        return Response(json.dumps(body), status, headers, JSON)

    def unsupported(path: str, methods: list[str], what: str) -> Route:
        """A route of the spec this server does not implement: 406 (after auth)."""

        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            refused = authenticate(request)
            if isinstance(refused, StoredReply):
                reply = refused
            else:
                # read (and drop) the body so the connection stays usable
                await _read_body(request, MAX_BODY_BYTES)
                where = f"{request.method} {request.url.path}"
                reply = _error(
                    UnsupportedFeatureError(f"this server does not support {what}: {where}")
                )
            _log_request(request, reply.status, started)
            if request.method == "HEAD":
                return Response(status_code=reply.status, headers=dict(reply.headers))
            return Response(
                reply.body, reply.status, dict(reply.headers), media_type=reply.media_type
            )

        return Route(path, endpoint, methods=methods)

    t = base + "/namespaces/{namespace}/tables/{table}"
    v = base + "/namespaces/{namespace}/views/{view}"
    routes = [
        route("/v1/config", ["GET"], config),
        Route("/v1/oauth/tokens", token_endpoint, methods=["POST"]),
        route(base + "/namespaces", ["GET"], lambda s, r, b: s.list_namespaces(q(r))),
        route(
            base + "/namespaces",
            ["POST"],
            lambda s, r, b: s.create_namespace(b),
            pending=namespace_created,
        ),
        # HEAD before GET: Starlette's GET routes also answer HEAD.
        route(
            base + "/namespaces/{namespace}", ["HEAD"], lambda s, r, b: s.namespace_exists(ns(r))
        ),
        route(base + "/namespaces/{namespace}", ["GET"], lambda s, r, b: s.load_namespace(ns(r))),
        route(
            base + "/namespaces/{namespace}",
            ["DELETE"],
            lambda s, r, b: s.drop_namespace(ns(r)),
            pending=no_content,
        ),
        route(
            base + "/namespaces/{namespace}/properties",
            ["POST"],
            lambda s, r, b: s.update_namespace(ns(r), b),
            pending=namespace_updated,
        ),
        route(
            base + "/namespaces/{namespace}/tables",
            ["GET"],
            lambda s, r, b: s.list_tables(ns(r), q(r)),
        ),
        route(
            base + "/namespaces/{namespace}/tables",
            ["POST"],
            lambda s, r, b: s.create_table(ns(r), b, r.headers.get(_DELEGATION)),
            created,
            loaded,
        ),
        route(
            base + "/namespaces/{namespace}/register",
            ["POST"],
            lambda s, r, b: s.register_table(ns(r), b),
            registered,
            loaded,
        ),
        route(t, ["HEAD"], lambda s, r, b: s.table_exists(ident(r))),
        route(
            t,
            ["GET"],
            lambda s, r, b: s.load_table(
                ident(r), q(r), r.headers.get("if-none-match"), r.headers.get(_DELEGATION)
            ),
        ),
        route(t, ["POST"], lambda s, r, b: s.commit_table(ident(r), b), pending=committed),
        route(t, ["DELETE"], lambda s, r, b: s.drop_table(ident(r), q(r)), pending=no_content),
        route(t + "/metrics", ["POST"], lambda s, r, b: s.report_metrics(ident(r), b)),
        route(t + "/credentials", ["GET"], lambda s, r, b: s.load_credentials(ident(r))),
        route(
            t + "/plan",
            ["POST"],
            lambda s, r, b: s.plan_table_scan(ident(r), b, r.headers.get(_DELEGATION)),
            planned,
        ),
        route(
            base + "/tables/rename",
            ["POST"],
            lambda s, r, b: s.rename_table(b),
            pending=no_content,
        ),
        route(
            base + "/transactions/commit",
            ["POST"],
            lambda s, r, b: s.commit_transaction(b),
            pending=no_content,
        ),
        route(
            base + "/namespaces/{namespace}/views",
            ["GET"],
            lambda s, r, b: s.list_views(ns(r), q(r)),
        ),
        route(
            base + "/namespaces/{namespace}/views",
            ["POST"],
            lambda s, r, b: s.create_view(ns(r), b),
            view_config,
            viewed,
        ),
        route(
            base + "/namespaces/{namespace}/register-view",
            ["POST"],
            lambda s, r, b: s.register_view(ns(r), b),
            view_config,
            viewed,
        ),
        route(v, ["HEAD"], lambda s, r, b: s.view_exists(view(r))),
        route(v, ["GET"], lambda s, r, b: s.load_view(view(r))),
        route(v, ["POST"], lambda s, r, b: s.replace_view(view(r), b), view_config, viewed),
        route(v, ["DELETE"], lambda s, r, b: s.drop_view(view(r)), pending=no_content),
        route(
            base + "/views/rename", ["POST"], lambda s, r, b: s.rename_view(b), pending=no_content
        ),
        *(unsupported(base + path, methods, what) for path, methods, what in _UNSUPPORTED_ROUTES),
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(_RefuseBrowsers, allowed_hosts=allowed_hosts),
            Middleware(_RefuseEncodedSeparators),
        ],
        exception_handlers={
            404: _routing_error,
            405: _routing_error,
            ClientDisconnect: _client_gone,
        },
    )
    app.state.service = service
    return app
