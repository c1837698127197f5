"""S3 test setup (a pytest plugin): real S3-compatible servers on loopback ports.

- ``moto_s3``: moto's ``ThreadedMotoServer`` in this process, always available. Every HTTP
  request it serves is counted by method (``S3Server.requests``), which the read tests and the
  benchmark use to measure requests per file.
- ``s3proxy``: s3proxy (``org.gaul:s3proxy:<version>:jar-with-dependencies`` from Maven
  Central, fetched, sha1-checked and cached like Iceberg's jar in ``support/spark.py``) with its
  filesystem backend, started with ``java -jar`` when Java is present. Its ``If-None-Match``
  create is atomic (a hard link), so the commit races run on it.
- ``warehouse``: a fresh warehouse location per test on local disk, moto and s3proxy; the S3
  cases carry the ``s3`` marker.

Every client gets explicit keys and a region, and ``AWS_EC2_METADATA_DISABLED=true`` is set for
the whole run, so the AWS SDK never probes an address outside the loopback range.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

os.environ["AWS_EC2_METADATA_DISABLED"] = "true"

S3PROXY_VERSION = "4.0.0"
REGION = "us-east-1"


class RequestCounter:
    """HTTP requests a server answered, by method (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self.session_tokens: set[str] = set()  # X-Amz-Security-Token values seen
        self.in_flight = 0
        self.max_in_flight = 0  # most requests being answered at once

    def add(self, method: str, token: str | None = None) -> None:
        with self._lock:
            self._counts[method] += 1
            if token:
                self.session_tokens.add(token)

    def begin(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def end(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def snapshot(self) -> Counter[str]:
        with self._lock:
            return Counter(self._counts)

    def since(self, before: Counter[str]) -> Counter[str]:
        """Requests counted after ``before`` (a :meth:`snapshot`)."""
        now = self.snapshot()
        now.subtract(before)
        return +now


@dataclass
class S3Server:
    """A running S3-compatible server and the properties a FileIO needs to reach it."""

    name: str
    endpoint: str
    access_key: str
    secret_key: str
    requests: RequestCounter | None = None
    _buckets: set[str] = field(default_factory=set)

    def properties(self, **extra: str) -> dict[str, str]:
        """``s3.*`` properties with the endpoint, keys and region."""
        return {
            "s3.endpoint": self.endpoint,
            "s3.access-key-id": self.access_key,
            "s3.secret-access-key": self.secret_key,
            "s3.region": REGION,
            **extra,
        }

    def client(self) -> Any:
        """A boto3 client for setup and independent checks."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=REGION,
        )

    def bucket(self, name: str = "icefloe") -> str:
        """The bucket ``name``, created on first use."""
        if name not in self._buckets:
            client = self.client()
            with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
                client.create_bucket(Bucket=name)
            self._buckets.add(name)
        return name

    def fresh_location(self) -> str:
        """A new, empty ``s3://`` prefix."""
        return f"s3://{self.bucket()}/{uuid.uuid4().hex[:12]}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _start_moto(latency_s: float = 0.0) -> tuple[Any, S3Server]:
    """moto's server in a thread; ``latency_s`` delays every answer (the benchmark uses it to
    stand in for a remote store's round trip)."""
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from werkzeug.serving import make_server

    counter = RequestCounter()

    class CountingMotoServer(ThreadedMotoServer):
        def _server_entry(self) -> None:
            app = DomainDispatcherApplication(create_backend_app)

            def counted(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
                counter.add(
                    str(environ.get("REQUEST_METHOD", "?")),
                    environ.get("HTTP_X_AMZ_SECURITY_TOKEN"),
                )
                counter.begin()
                try:
                    if latency_s:
                        time.sleep(latency_s)
                    return app(environ, start_response)
                finally:
                    counter.end()

            self._server = make_server(
                self._ip_address, self._port, counted, True, request_handler=MotoRequestHandler
            )
            self._server_ready_event.set()
            self._server.serve_forever()

    server = CountingMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, S3Server("moto", f"http://{host}:{port}", "testing", "testing", counter)


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[S3Server]:
    """moto's S3 server in a thread of this process (skips if moto is not installed)."""
    try:
        server, info = _start_moto()
    except ImportError:
        pytest.skip("moto[server] is not installed (pip install -r requirements/dev.txt)")
    try:
        yield info
    finally:
        server.stop()


def s3proxy_jar() -> tuple[Path | None, str]:
    """(jar, "") or (None, why s3proxy cannot run here)."""
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        return None, "s3proxy needs Java 17"
    from support.spark import fetch_jar

    try:
        jar = fetch_jar("org.gaul", "s3proxy", S3PROXY_VERSION, "jar-with-dependencies")
    except (OSError, ValueError) as e:
        return None, f"s3proxy {S3PROXY_VERSION} could not be fetched from Maven Central ({e})"
    return jar, ""


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return os.path.join(home, "bin", "java") if home else "java"


def start_s3proxy(
    base: Path, secret: str = "icefloe-test-secret"
) -> tuple[subprocess.Popen[bytes], S3Server]:
    """Start s3proxy with its filesystem backend under ``base``, accepting the key
    ``icefloe-test`` with ``secret``; waits until it answers."""
    jar, why = s3proxy_jar()
    if jar is None:
        raise RuntimeError(why)
    port = _free_port()
    data = base / "data"
    data.mkdir(parents=True, exist_ok=True)
    conf = base / "s3proxy.conf"
    conf.write_text(
        "\n".join(
            (
                f"s3proxy.endpoint=http://127.0.0.1:{port}",
                "s3proxy.authorization=aws-v2-or-v4",
                "s3proxy.identity=icefloe-test",
                f"s3proxy.credential={secret}",
                "jclouds.provider=filesystem-nio2",
                f"jclouds.filesystem.basedir={data}",
                "",
            )
        )
    )
    with open(base / "s3proxy.log", "wb") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            [_java(), "-Xmx256m", "-jar", str(jar), "--properties", str(conf)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"s3proxy exited: {(base / 's3proxy.log').read_text()[-2000:]}")
        try:
            urllib.request.urlopen(endpoint + "/", timeout=2).close()
            break
        except urllib.error.HTTPError:
            break  # it answers (403 without credentials)
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("s3proxy did not start within 60 s") from None
            time.sleep(0.2)
    return proc, S3Server("s3proxy", endpoint, "icefloe-test", secret)


@pytest.fixture(scope="session")
def s3proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """s3proxy on a loopback port (skips when Java or the jar is missing)."""
    jar, why = s3proxy_jar()
    if jar is None:
        pytest.skip(why)
    proc, info = start_s3proxy(tmp_path_factory.mktemp("s3proxy"))
    try:
        yield info
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


S3_SERVERS = [
    pytest.param("moto", marks=pytest.mark.s3),
    pytest.param("s3proxy", marks=pytest.mark.s3),
]


@pytest.fixture(params=S3_SERVERS)
def s3_server(request: pytest.FixtureRequest) -> S3Server:
    """Each S3 server in turn."""
    server: S3Server = request.getfixturevalue("moto_s3" if request.param == "moto" else "s3proxy")
    return server


@dataclass
class Warehouse:
    """Where a test keeps its tables: a location plus the properties to reach it."""

    kind: str
    location: str
    properties: dict[str, str]
    server: S3Server | None = None

    def configure_duckdb(self, con: Any) -> None:
        """Let DuckDB read this warehouse (httpfs with the server's endpoint and keys)."""
        if self.server is None:
            return
        from support.peers import duckdb_load

        duckdb_load(con, "httpfs")
        host = self.server.endpoint.split("://", 1)[1]
        con.execute(
            "CREATE OR REPLACE SECRET icefloe_s3 (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, "
            "ENDPOINT ?, URL_STYLE 'path', USE_SSL false)",
            [self.server.access_key, self.server.secret_key, REGION, host],
        )

    def pyiceberg_properties(self) -> dict[str, str]:
        """Properties for PyIceberg's FileIO."""
        return dict(self.properties)


def versions_and_stores(*versions: int) -> list[Any]:
    """``(version, warehouse)`` parameters: every format version on local disk, the newest on
    each S3 server (the store changes the file IO, not the format rules). Use with
    ``@pytest.mark.parametrize(("version", "warehouse"), ..., indirect=["warehouse"])``."""
    local = [pytest.param(v, "local", id=f"local-{v}") for v in versions]
    newest = versions[-1]
    remote = [
        pytest.param(newest, name, marks=pytest.mark.s3, id=f"{name}-{newest}")
        for name in ("moto", "s3proxy")
    ]
    return [*local, *remote]


@pytest.fixture(params=[pytest.param("local"), *S3_SERVERS])
def warehouse(request: pytest.FixtureRequest, tmp_path: Path) -> Warehouse:
    """A fresh warehouse on local disk, on moto and on s3proxy.

    When the test also uses ``duckdb_con``, that connection is set up to read the warehouse.
    """
    if request.param == "local":
        wh = Warehouse("local", (tmp_path / "wh").as_uri(), {})
    else:
        server: S3Server = request.getfixturevalue(
            "moto_s3" if request.param == "moto" else "s3proxy"
        )
        wh = Warehouse(request.param, server.fresh_location(), server.properties(), server)
    if "duckdb_con" in request.fixturenames:
        wh.configure_duckdb(request.getfixturevalue("duckdb_con"))
    return wh
