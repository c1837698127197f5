"""A small HTTP/1.1 client on :mod:`http.client` with a pool of keep-alive connections.

One :class:`HttpSession` is shared by every thread of a catalog. Requests take a free pooled
connection (or open one), and give it back after reading the whole response. A pooled
connection the server closed while idle is detected before use and dropped; if one still fails
on first use, a read (``GET``/``HEAD``) is sent once more on a fresh connection; any other
request fails with :class:`TransportError` saying it may have been sent (a caller retrying
with an ``Idempotency-Key`` then knows that the first attempt may have been applied).
Timeouts, connection failures and answers cut short or malformed raise
:class:`TransportError`. Nothing here logs headers or bodies.
"""

from __future__ import annotations

import http.client
import json
import logging
import queue
import select
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from icefloe.exceptions import ServiceUnavailableError, ValidationError
from icefloe.properties import parse_url, redact_url

__all__ = ["HttpResponse", "HttpSession", "TransportError", "request_path", "wire_headers"]

log = logging.getLogger("icefloe.catalog.rest")

_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


class TransportError(ServiceUnavailableError):
    """The request could not be completed: timeout, refused or broken connection (the
    service is unavailable, as an unreachable database is for the SQL catalog).

    ``maybe_sent`` is true when the server may have received (and acted on) the request.
    """

    def __init__(self, message: str, maybe_sent: bool) -> None:
        super().__init__(message)
        self.maybe_sent = maybe_sent


#: Characters of an RFC 9110 field name (``token``).
_NAME_CHARS = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)


def wire_headers(headers: Mapping[str, str]) -> dict[str, bytes]:
    """``headers`` as sent: values encoded as UTF-8 (as servers compare non-ASCII tokens;
    :mod:`http.client` would send Latin-1 or fail), a name that is not a field name or a value
    holding a control character (a line break would end the header) refused with
    :class:`ValidationError` naming the header, never the value (it may be a secret)."""
    out: dict[str, bytes] = {}
    for name, value in headers.items():
        if not name or not set(name) <= _NAME_CHARS:
            raise ValidationError(f"{name!r} is not an HTTP header name")
        if any((c < " " and c != "\t") or c == "\x7f" for c in value):
            raise ValidationError(
                f"the {name} header's value holds a line break or another control character"
            )
        out[name] = value.encode("utf-8")
    return out


class _NoDelayHTTP(http.client.HTTPConnection):
    """Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and
    delayed ACKs can hold the body back for tens of milliseconds."""

    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _NoDelayHTTPS(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


@dataclass(frozen=True)
class HttpResponse:
    """Status, headers (lower-case names) and body of a response."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON (``{}`` when empty)."""
        if not self.body:
            return {}
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
            raise ValidationError(f"the catalog answered HTTP {self.status} with bad JSON") from exc


def request_path(path: str) -> str:
    """``path`` with what cannot go into a request line (non-ASCII, spaces, control
    characters) percent-encoded as UTF-8; escapes already there are kept."""
    return quote(path, safe="/%!$&'()*+,;=:@~")


class HttpSession:
    """Requests to one base URL (``http`` or ``https``) over pooled connections."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 60.0,
        pool_size: int = 16,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        parts = parse_url("uri", base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValidationError(
                f"REST catalog uri must be an http(s) URL, got {redact_url(base_url)!r}"
            )
        if parts.username or parts.password:
            raise ValidationError("put REST catalog credentials in 'token' or 'credential'")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.base_path = request_path(parts.path.rstrip("/"))
        self.timeout = timeout
        self._ssl = ssl_context
        self._pool: queue.LifoQueue[http.client.HTTPConnection] = queue.LifoQueue(pool_size)

    def __repr__(self) -> str:
        return f"HttpSession({self.scheme}://{self.host}:{self.port}{self.base_path})"

    def url(self, path: str) -> str:
        """The absolute URL of ``path`` (relative to the base URL)."""
        return f"{self.scheme}://{self.host}:{self.port}{self.base_path}{path}"

    def _connect(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return _NoDelayHTTPS(self.host, self.port, timeout=self.timeout, context=self._ssl)
        return _NoDelayHTTP(self.host, self.port, timeout=self.timeout)

    def _take(self) -> tuple[http.client.HTTPConnection, bool]:
        while True:
            try:
                conn = self._pool.get_nowait()
            except queue.Empty:
                return self._connect(), False
            sock = conn.sock
            if sock is not None:
                readable, _, _ = select.select([sock], [], [], 0)
                if not readable:
                    return conn, True
            conn.close()  # closed by the server while idle (or it sent something unasked)

    def _give_back(self, conn: http.client.HTTPConnection) -> None:
        try:
            self._pool.put_nowait(conn)
        except queue.Full:
            conn.close()

    def close(self) -> None:
        """Close every pooled connection."""
        while True:
            try:
                self._pool.get_nowait().close()
            except queue.Empty:
                return

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str] | None = None,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        absolute_url: str | None = None,
        sign: Callable[[str, str, dict[str, str], bytes | None], dict[str, str]] | None = None,
    ) -> HttpResponse:
        """Send one request; ``path`` is relative to the base URL (or ``absolute_url`` wins).

        ``sign(method, url, headers, body)`` returns the headers to send (a request signer).
        """
        if absolute_url is not None:
            return self._request_absolute(method, absolute_url, body, headers or {})
        target = self.base_path + path
        if query:
            target += "?" + urlencode(query, quote_via=quote)  # %20, never "+": signable
        hdrs = dict(headers or {})
        # Only reads are sent again here. A request with an Idempotency-Key is repeated by its
        # caller, which must know that the first one may have been acted on (a server or proxy
        # that does not honour the key applies it twice, or answers 409 to it).
        repeatable = method in ("GET", "HEAD")
        if body is not None:
            hdrs.setdefault("Content-Type", "application/json")
        if sign is not None:
            default = 443 if self.scheme == "https" else 80
            netloc = self.host if self.port == default else f"{self.host}:{self.port}"
            hdrs = sign(method, f"{self.scheme}://{netloc}{target}", hdrs, body)
        wire = wire_headers(hdrs)
        for attempt in (0, 1):
            conn, reused = self._take()
            sent = False
            try:
                conn.request(method, target, body=body, headers=wire)
                sent = True
                resp = conn.getresponse()
                data = resp.read()
            except _STALE as exc:
                conn.close()
                if reused and attempt == 0 and repeatable:
                    continue  # an idle keep-alive connection the server had closed
                raise TransportError(
                    f"{method} {self.url(path)}: connection failed: {exc!r}", maybe_sent=sent
                ) from None
            except TimeoutError as exc:
                conn.close()
                raise TransportError(
                    f"{method} {self.url(path)}: timed out after {self.timeout}s", maybe_sent=sent
                ) from exc
            except (OSError, http.client.HTTPException) as exc:
                # a refused connection, or an answer cut short or malformed (IncompleteRead,
                # BadStatusLine, LineTooLong): once the request went out, the server may have
                # acted on it
                conn.close()
                raise TransportError(
                    f"{method} {self.url(path)}: {type(exc).__name__}: {exc}", maybe_sent=sent
                ) from None
            except BaseException:
                conn.close()  # interrupted mid-exchange: the connection's state is unknown
                raise
            out = HttpResponse(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
            if resp.will_close:
                conn.close()
            else:
                self._give_back(conn)
            log.debug("%s %s -> %d", method, target, resp.status)
            return out
        raise AssertionError("unreachable")  # pragma: no cover

    def _request_absolute(
        self, method: str, url: str, body: bytes | None, headers: Mapping[str, str]
    ) -> HttpResponse:
        """One request to another server (an OAuth2 token endpoint), on its own connection."""
        parts = parse_url("oauth2-server-uri", url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValidationError(f"not an http(s) URL: {redact_url(url)!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        conn: http.client.HTTPConnection
        if parts.scheme == "https":
            conn = http.client.HTTPSConnection(
                parts.hostname, port, timeout=self.timeout, context=self._ssl
            )
        else:
            conn = http.client.HTTPConnection(parts.hostname, port, timeout=self.timeout)
        target = request_path(parts.path) + (f"?{parts.query}" if parts.query else "")
        wire = wire_headers(headers)
        try:
            conn.request(method, target or "/", body=body, headers=wire)
            resp = conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            raise TransportError(
                f"{method} {parts.scheme}://{parts.hostname}:{port}{parts.path}: "
                f"{type(exc).__name__}",
                maybe_sent=True,
            ) from None
        finally:
            conn.close()
        return HttpResponse(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
