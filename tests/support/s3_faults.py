"""A fault-injecting HTTP proxy in front of an S3 server, on loopback, for the fault tests.

:class:`FaultProxy` forwards every request to the server unless a :class:`Fault` matches its
method and path (with query): then it answers ``status`` with an S3 error body instead, or
resets the connection (``status=0``). An error body can echo what the client sent (its
``X-Amz-Security-Token``, and ``echo`` text), as some servers do. Every request is logged as
``(method, path with query)``.
"""

from __future__ import annotations

import http.client
import http.server
import re
import socket
import socketserver
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

__all__ = ["Fault", "FaultProxy", "fault_proxy"]


@dataclass
class Fault:
    """Answer requests of ``method`` whose path matches ``pattern`` with ``status`` (0: reset
    the connection), ``times`` times, after letting the first ``skip`` through. With
    ``forward`` the request reaches the server first (done, but its answer lost). The error
    body's code is ``code`` (else the status's reason without spaces); ``headers`` are added
    to the answer (S3's ``x-amz-bucket-region`` of a ``301``, say)."""

    method: str
    pattern: str
    status: int
    times: int = 1000
    skip: int = 0
    echo: str = ""
    hits: int = 0
    forward: bool = False
    code: str = ""
    headers: dict[str, str] = field(default_factory=dict)


class FaultProxy:
    """The proxy; ``endpoint`` is its URL (pass it as ``s3.endpoint``)."""

    def __init__(self, upstream: str) -> None:
        self._upstream = upstream.split("://", 1)[1]
        self._lock = threading.Lock()
        self.faults: list[Fault] = []
        self.log: list[tuple[str, str]] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _body(self) -> bytes:
                if self.headers.get("transfer-encoding", "").lower() != "chunked":
                    return self.rfile.read(int(self.headers.get("content-length") or 0))
                chunks = []
                while size := int(self.rfile.readline().split(b";")[0], 16):
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                self.rfile.readline()
                return b"".join(chunks)

            def _handle(self) -> None:
                body = self._body()
                fault = proxy._match(self.command, self.path)
                if fault is None:
                    self._forward(body)
                    return
                if fault.forward:
                    self._forward(body, reply=False)
                if fault.status == 0:
                    # RST instead of FIN: the client sees "connection reset by peer"
                    linger = struct.pack("ii", 1, 0)
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                    self.close_connection = True
                    self.connection.close()
                else:
                    self._error(fault)

            def _error(self, fault: Fault) -> None:
                token = self.headers.get("x-amz-security-token", "")
                text = escape(f"refused; you sent {token} {fault.echo}".strip())
                code = fault.code or http.client.responses.get(fault.status, "Error")
                payload = (
                    "<?xml version='1.0' encoding='UTF-8'?><Error><Code>"
                    f"{code.replace(' ', '')}"
                    f"</Code><Message>{text}</Message></Error>"
                ).encode()
                self.send_response(fault.status)
                for key, value in fault.headers.items():
                    self.send_header(key, value)
                self.send_header("content-type", "application/xml")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            def _forward(self, body: bytes, reply: bool = True) -> None:
                conn = http.client.HTTPConnection(proxy._upstream, timeout=30)
                try:
                    headers = {
                        k: v for k, v in self.headers.items() if k.lower() != "transfer-encoding"
                    }
                    if "transfer-encoding" in self.headers:
                        headers["content-length"] = str(len(body))
                    conn.request(self.command, self.path, body=body, headers=headers)
                    answer = conn.getresponse()
                    data = answer.read()
                finally:
                    conn.close()
                if not reply:
                    return
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                length = answer.getheader("content-length") if self.command == "HEAD" else None
                self.send_header("content-length", length or str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self._server = Server(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def _match(self, method: str, path: str) -> Fault | None:
        with self._lock:
            self.log.append((method, path))
            for fault in self.faults:
                if fault.method != method or not re.search(fault.pattern, path):
                    continue
                if fault.skip:
                    fault.skip -= 1
                    continue
                if fault.hits < fault.times:
                    fault.hits += 1
                    return fault
        return None

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()
            self.log.clear()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def fault_proxy(upstream: str) -> Iterator[FaultProxy]:
    """A :class:`FaultProxy` in front of ``upstream`` (an ``http://`` endpoint)."""
    proxy = FaultProxy(upstream)
    try:
        yield proxy
    finally:
        proxy.close()
