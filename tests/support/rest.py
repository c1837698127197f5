"""``icefloe serve`` processes for the REST tests (a pytest plugin).

``rest_server`` is one server per test session: ``python -m icefloe.rest --per-warehouse`` over a
SQL catalog on a SQLite file, on a free loopback port, so each test gets a catalog of its own by
asking for a fresh ``warehouse`` name. ``start_rest_server`` starts further servers (with auth)
for the tests that need them. Servers are stopped by PID at teardown, and die with the test
process if it is killed (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import icefloe

PYTHONPATH = str(Path(icefloe.__file__).resolve().parent.parent)


@dataclass
class RestServer:
    """A running ``icefloe serve``: its URL, process, log file and data directory."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path
    base: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start_rest_server(
    base: Path,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    probe_headers: Mapping[str, str] | None = None,
    command: Sequence[str] = ("icefloe.rest",),
) -> RestServer:
    """Start ``python -m icefloe.rest`` (or another ``-m`` ``command``, e.g. the CLI's
    ``icefloe.cli serve``) over a SQLite catalog under ``base``; wait until it answers
    ``GET /v1/config``."""
    pytest.importorskip("starlette", reason="icefloe serve needs the 'server' extra")
    pytest.importorskip("uvicorn", reason="icefloe serve needs the 'server' extra")
    base.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = base / "server.log"
    cmd = [
        sys.executable,
        "-m",
        *command,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-p",
        "type=sql",
        "-p",
        f"uri=sqlite:///{base / 'catalog.db'}",
        "-p",
        f"warehouse={(base / 'warehouse').as_uri()}",
        *args,
    ]
    full_env = {
        **os.environ,
        "PYTHONPATH": PYTHONPATH,
        "ICEFLOE_CONFIG": str(base / "none.yaml"),
        **(env or {}),
    }
    (base / "none.yaml").write_text("{}\n")
    with log.open("wb") as out:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=full_env,
            cwd=base,
            preexec_fn=_die_with_parent,
        )
    server = RestServer(f"http://127.0.0.1:{port}", proc, log, base)
    deadline = time.monotonic() + 60
    query = "?warehouse=probe" if "--per-warehouse" in args else ""
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"icefloe serve exited with {proc.returncode}:\n{server.log_text()}")
        try:
            req = urllib.request.Request(
                f"{server.url}/v1/config{query}", headers=dict(probe_headers or {})
            )
            with urllib.request.urlopen(req, timeout=2) as resp:
                json.load(resp)
            return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"icefloe serve did not start:\n{server.log_text()}") from None
            time.sleep(0.1)


@pytest.fixture(scope="session")
def rest_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """One ``icefloe serve --per-warehouse`` for the session."""
    server = start_rest_server(tmp_path_factory.mktemp("rest"), ["--per-warehouse"])
    try:
        yield server
    finally:
        server.stop()


TOKEN = "tok-3f9c2b7d1e-very-secret"
CLIENT_ID = "app"
CLIENT_SECRET = "s3cret-9a8b7c6d5e"


@pytest.fixture(scope="session")
def rest_auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """``icefloe serve`` with auth: bearer :data:`TOKEN`, and OAuth2 client
    :data:`CLIENT_ID` / :data:`CLIENT_SECRET` whose tokens live 3 seconds."""
    server = start_rest_server(
        tmp_path_factory.mktemp("rest-auth"),
        ["--token-env", "T", "--client-env", "C", "--token-lifetime", "3"],
        env={"T": TOKEN, "C": f"{CLIENT_ID}:{CLIENT_SECRET}"},
        probe_headers={"Authorization": f"Bearer {TOKEN}"},
    )
    try:
        yield server
    finally:
        server.stop()


def view_body(name: str, namespace: Sequence[str], **extra: Any) -> dict[str, Any]:
    """A create-view request body: an empty schema and one Spark SQL representation."""
    return {
        "name": name,
        "schema": {"type": "struct", "schema-id": 0, "fields": []},
        "view-version": {
            "version-id": 1,
            "timestamp-ms": 0,
            "schema-id": 0,
            "summary": {},
            "default-namespace": list(namespace),
            "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}],
        },
        "properties": {},
        **extra,
    }


def new_warehouse() -> str:
    """A fresh warehouse name: a catalog of its own on the session's server."""
    return f"w{uuid.uuid4().hex[:12]}"


class FaultyProxy:
    """An HTTP proxy on a loopback port in front of a server, that can fail commits on purpose.

    ``mode`` applies to ``POST`` requests whose path matches ``target`` (a substring; metrics
    reports only when ``target`` names them):
    ``"pass"`` forwards, ``"drop-response"`` forwards and then closes the connection without
    answering (the server acted, the client cannot know), ``"drop-request"`` closes without
    forwarding, ``"status:<N>"`` answers N without forwarding, ``"after:<N>"`` forwards and
    answers N instead of the server's answer (an empty body), ``"refuse:<N>"`` answers N
    with an HTML page without forwarding, ``"bare:<N>"`` answers N with error fields lacking
    the ``error`` wrapper without forwarding, ``"page:<N>"`` forwards and
    answers N with an HTML page of its own (a gateway's error page), ``"dup"`` forwards twice
    and answers the second answer (a gateway repeating a request). ``methods`` of :meth:`fail`
    names the methods that fail (``POST`` by default). ``times`` limits how many
    requests are failed (then it passes again); :meth:`fail_sequence` gives each request its own
    mode. Everything else is forwarded unchanged.
    """

    def __init__(self, upstream: str) -> None:
        import http.client
        import http.server
        import threading
        from urllib.parse import urlsplit

        self.mode = "pass"
        self.strip_keys = False  # forward without Idempotency-Key (a server without replay)
        #: rewrites the body of every answer to a GET (path, body) -> body, when set
        self.rewrite_get: Callable[[str, bytes], bytes] | None = None
        self.target = "/tables/"
        self.methods: tuple[str, ...] = ("POST",)
        self.times = 1 << 30
        self.failed = 0
        self.sequence: list[str] = []
        up = urlsplit(upstream)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                # metrics reports (sent in the background) only fail when targeted
                reports = self.path.endswith("/metrics") and "metrics" not in proxy.target
                posted = self.command in proxy.methods and proxy.target in self.path and not reports
                if proxy.sequence and posted:
                    proxy.mode, proxy.times, proxy.failed = proxy.sequence.pop(0), 1, 0
                fail = (
                    self.command in proxy.methods
                    and proxy.target in self.path
                    and not reports
                    and proxy.mode != "pass"
                    and proxy.failed < proxy.times
                )
                if fail and proxy.mode == "drop-request":
                    proxy.failed += 1
                    self.close_connection = True
                    return
                if fail and proxy.mode.startswith("status:"):
                    proxy.failed += 1
                    status = int(proxy.mode.split(":")[1])
                    payload = b'{"error":{"message":"injected","type":"ServerError","code":%d}}' % (
                        status
                    )
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if fail and proxy.mode.startswith(("refuse:", "bare:")):
                    # not forwarded: a gateway's own refusal page, or a catalog's error fields
                    # sent without Iceberg's {"error": ...} wrapper
                    proxy.failed += 1
                    kind, code = proxy.mode.split(":")
                    body, ctype = (
                        (b"<html><body>Forbidden</body></html>", "text/html")
                        if kind == "refuse"
                        else (
                            b'{"message":"injected","type":"CommitFailedException","code":%s}'
                            % code.encode(),
                            "application/json",
                        )
                    )
                    self.send_response(int(code))
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
                dropped = {"host"} | ({"idempotency-key"} if proxy.strip_keys else set())
                headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                if fail and proxy.mode == "dup":  # the gateway sends it again: the second wins
                    proxy.failed += 1
                    conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    conn.close()
                if self.command == "GET" and proxy.rewrite_get is not None:
                    data = proxy.rewrite_get(self.path, data)
                if fail and proxy.mode == "drop-response":
                    proxy.failed += 1
                    self.close_connection = True
                    return
                if fail and proxy.mode.startswith("after:"):  # acted on, then a failure status
                    proxy.failed += 1
                    resp_status = int(proxy.mode.split(":")[1])
                    self.send_response(resp_status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if fail and proxy.mode.startswith("page:"):  # acted on, then the gateway's page
                    proxy.failed += 1
                    page = b"<html><body><h1>Bad Request</h1>Header Too Large</body></html>"
                    self.send_response(int(proxy.mode.split(":")[1]))
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(page)))
                    self.end_headers()
                    self.wfile.write(page)
                    return
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_POST = do_DELETE = do_HEAD = _handle

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def fail(
        self,
        mode: str,
        times: int = 1 << 30,
        target: str = "/tables/",
        methods: tuple[str, ...] = ("POST",),
    ) -> None:
        self.mode, self.times, self.failed, self.target = mode, times, 0, target
        self.methods = methods

    def fail_sequence(self, modes: list[str], target: str = "/tables/") -> None:
        """The next ``POST`` requests to ``target`` fail in ``modes``, one each, in order."""
        self.fail("pass", target=target)
        self.sequence = list(modes)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


# -- Iceberg Java's REST server ---------------------------------------------------------------

JAVA_REST_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
  <groupId>local</groupId><artifactId>rest-fixture</artifactId><version>1</version>
  <properties><ib>{version}</ib><jetty>12.1.8</jetty></properties>
  <dependencies>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-core</artifactId>
      <version>${{ib}}</version></dependency>
    <dependency><groupId>org.apache.iceberg</groupId><artifactId>iceberg-core</artifactId>
      <version>${{ib}}</version><classifier>tests</classifier></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-api</artifactId>
      <version>3.4.3</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-client-runtime</artifactId>
      <version>3.4.3</version></dependency>
    <dependency><groupId>org.eclipse.jetty.ee10</groupId><artifactId>jetty-ee10-servlet</artifactId>
      <version>${{jetty}}</version></dependency>
    <dependency><groupId>org.xerial</groupId><artifactId>sqlite-jdbc</artifactId>
      <version>3.53.0.0</version></dependency>
    <dependency><groupId>org.apache.httpcomponents</groupId><artifactId>httpcore</artifactId>
      <version>4.4.16</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-simple</artifactId>
      <version>2.0.17</version></dependency>
  </dependencies></project>
"""
LAUNCHER = Path(__file__).resolve().parents[1] / "java" / "LoopbackRestServer.java"
#: Iceberg Java of the REST server and the compatibility kit: the Jetty, SQLite and Hadoop
#: versions in the POMs are those of its build (``gradle/libs.versions.toml`` at 1.11.0).
JAVA_REST_VERSION = "1.11.0"


def maven_classpath(name: str, pom: str) -> tuple[Path, str]:
    """(cache directory, classpath) of the dependencies of ``pom``, resolved once.

    Maven resolves the jars from Maven Central into ``~/.m2`` with strict checksum checks
    (``--strict-checksums``: a jar whose ``.sha1`` does not match fails); the classpath file
    is cached under the jar cache. Raises ``RuntimeError`` with the reason when Java, javac,
    Maven or the download is unavailable.
    """
    import shutil

    from support.spark import jar_cache

    if os.environ.get("ICEFLOE_NO_ICEBERG_JAVA"):
        raise RuntimeError("ICEFLOE_NO_ICEBERG_JAVA is set")
    for tool in ("java", "javac", "mvn"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} is not installed")
    base = jar_cache() / name
    base.mkdir(parents=True, exist_ok=True)
    cp_file = base / "cp.txt"
    if not cp_file.exists():
        (base / "pom.xml").write_text(pom)
        tmp = base / f"cp.{os.getpid()}.txt"
        done = subprocess.run(
            [
                "mvn",
                "-B",
                "-q",
                "--strict-checksums",
                "-f",
                str(base / "pom.xml"),
                "dependency:build-classpath",
                f"-Dmdep.outputFile={tmp}",
            ],
            capture_output=True,
            timeout=600,
        )
        if done.returncode != 0 or not tmp.exists():
            out = (done.stdout + done.stderr).decode(errors="replace")[-2000:]
            raise RuntimeError(f"cannot resolve the classpath of {name}:\n{out}")
        tmp.replace(cp_file)
    return base, cp_file.read_text().strip()


def java_rest_classpath() -> str:
    """The classpath of Iceberg Java's REST test server plus the compiled loopback launcher
    (see :func:`maven_classpath`)."""
    base, classpath = maven_classpath(
        f"iceberg-rest-server-{JAVA_REST_VERSION}",
        JAVA_REST_POM.format(version=JAVA_REST_VERSION),
    )
    classes = base / "classes"
    compiled = classes / "LoopbackRestServer.class"
    if not compiled.exists() or compiled.stat().st_mtime < LAUNCHER.stat().st_mtime:
        classes.mkdir(exist_ok=True)
        done = subprocess.run(
            ["javac", "-cp", classpath, "-d", str(classes), str(LAUNCHER)],
            capture_output=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise RuntimeError(f"javac failed:\n{done.stderr.decode(errors='replace')}")
    return f"{classes}{os.pathsep}{classpath}"


def start_java_rest_server(base: Path) -> RestServer:
    """Start Iceberg Java's REST server (a JdbcCatalog on SQLite under ``base``) on a free
    loopback port; raises ``RuntimeError`` when Java or its classpath is unavailable."""
    classpath = java_rest_classpath()
    base.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = base / "server.log"
    with log.open("wb") as out:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            [
                "java",
                "-Xmx256m",
                "-cp",
                classpath,
                "LoopbackRestServer",
                str(port),
                (base / "warehouse").as_uri(),
                f"jdbc:sqlite:{base / 'catalog.db'}",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
        )
    server = RestServer(f"http://127.0.0.1:{port}", proc, log, base)
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"Iceberg's REST server exited:\n{server.log_text()}")
        try:
            with urllib.request.urlopen(f"{server.url}/v1/config", timeout=2) as resp:
                json.load(resp)
            return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(
                    f"Iceberg's REST server did not start:\n{server.log_text()}"
                ) from None
            time.sleep(0.2)


@pytest.fixture(scope="session")
def java_rest_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestServer]:
    """Iceberg Java's REST server (a JdbcCatalog on SQLite) on a free loopback port."""
    try:
        java_rest_classpath()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    server = start_java_rest_server(tmp_path_factory.mktemp("java-rest"))
    try:
        yield server
    finally:
        server.stop()
