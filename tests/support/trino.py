"""A Trino server for the interop tests (a pytest plugin), and a small client of its HTTP protocol.

``trino-server-476.tar.gz`` is downloaded once from Maven Central, checked against the ``.sha1``
Maven publishes next to it, and extracted into ``$ICEFLOE_TRINO_CACHE`` (default
``~/.cache/icefloe/trino``) with only the Iceberg plugin (the other plugins would only slow the
start-up); the tarball itself is not kept, and nothing of it is committed. Trino 476 needs
Java 24 or later: ``$ICEFLOE_TRINO_JAVA_HOME``, else the newest such JDK under ``/usr/lib/jvm``.
Without one, or when the server cannot be fetched, the tests that use the ``trino`` fixture are
skipped with the reason.

One server serves the test session: a coordinator that also runs the work, bound to 127.0.0.1 on
a free port, 1 GB of heap, with one catalog ``iceberg`` over the session's ``icefloe serve``
(:func:`support.rest.rest_server`), warehouse :data:`WAREHOUSE`, and Hadoop's file system for the
``file://`` paths of that server's warehouse. It is stopped by PID at teardown, and dies with the
test process if that is killed (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.rest import RestServer, _die_with_parent, free_port
from support.spark import MAVEN

TRINO_VERSION = "476"
#: the oldest Java Trino 476 runs on
MIN_JAVA = 24
#: the warehouse (catalog) of the session's ``icefloe serve`` that Trino's catalog uses
WAREHOUSE = "trino"
#: what is kept of the server's tarball (the rest is other connectors' plugins)
_KEEP = ("bin/", "lib/", "plugin/iceberg/")


def trino_cache() -> Path:
    """Where the extracted server is kept."""
    default = Path.home() / ".cache" / "icefloe" / "trino"
    return Path(os.environ.get("ICEFLOE_TRINO_CACHE", default))


def _java_major(home: Path) -> int | None:
    """The feature version of the JDK at ``home`` (from its ``release`` file), or None."""
    try:
        text = (home / "release").read_text()
    except OSError:
        return None
    m = re.search(r'^JAVA_VERSION="(?:1\.)?(\d+)', text, re.MULTILINE)
    return int(m.group(1)) if m and (home / "bin" / "java").exists() else None


def trino_java_home() -> tuple[Path | None, str]:
    """(a JDK home of Java >= :data:`MIN_JAVA`, "") or (None, why there is none)."""
    given = os.environ.get("ICEFLOE_TRINO_JAVA_HOME")
    if given:
        major = _java_major(Path(given))
        if major is None or major < MIN_JAVA:
            return None, (
                f"ICEFLOE_TRINO_JAVA_HOME={given} is not a JDK of Java {MIN_JAVA} or later "
                f"(found {major}); Trino {TRINO_VERSION} needs one"
            )
        return Path(given), ""
    found: list[tuple[int, Path]] = []
    jvm = Path("/usr/lib/jvm")
    for home in sorted(jvm.iterdir()) if jvm.is_dir() else []:
        major = _java_major(home)
        if major is not None and major >= MIN_JAVA:
            found.append((major, home))
    if not found:
        return None, (
            f"Trino {TRINO_VERSION} needs Java {MIN_JAVA} or later: none under /usr/lib/jvm "
            "(install e.g. Temurin 25, or set ICEFLOE_TRINO_JAVA_HOME)"
        )
    return max(found)[1], ""


def _download(url: str, dest: Path) -> None:
    """``url`` into ``dest``, checked against the ``.sha1`` next to it (streamed: 0.8 GB)."""
    with urllib.request.urlopen(url + ".sha1", timeout=30) as r:
        want = r.read().decode().split()[0].strip().lower()
    digest = hashlib.sha1()
    with urllib.request.urlopen(url, timeout=120) as r, dest.open("wb") as out:
        while chunk := r.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != want:
        dest.unlink()
        raise ValueError(f"{url}: sha1 {digest.hexdigest()} does not match the published {want}")


def trino_server_dir() -> Path:
    """The extracted server (bin, lib, the Iceberg plugin), downloaded and extracted on first
    use. Raises ``OSError`` (``ValueError`` on a checksum mismatch, ``CalledProcessError`` when
    ``tar`` fails) when it cannot be had."""
    root = trino_cache()
    dest = root / f"trino-server-{TRINO_VERSION}"
    if (dest / ".complete").exists():
        return dest
    root.mkdir(parents=True, exist_ok=True)
    name = f"trino-server-{TRINO_VERSION}.tar.gz"
    tarball = root / f"{name}.part{os.getpid()}"
    work = root / f".extract{os.getpid()}"
    try:
        _download(f"{MAVEN}/io/trino/trino-server/{TRINO_VERSION}/{name}", tarball)
        shutil.rmtree(work, ignore_errors=True)
        prefix = f"trino-server-{TRINO_VERSION}/"
        work.mkdir()
        # all of it, then the other plugins are deleted: plugins share jars as hard links
        if shutil.which("tar"):  # seconds; tarfile takes about a minute
            subprocess.run(["tar", "-xzf", str(tarball), "-C", str(work)], check=True)
        else:
            with tarfile.open(tarball, "r:gz") as tar:
                tar.extractall(work, filter="data")
        for path in [*(work / prefix).iterdir(), *(work / prefix / "plugin").iterdir()]:
            rel = f"{path.relative_to(work / prefix)}/"
            if not any(k.startswith(rel) or rel.startswith(k) for k in _KEEP):
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
        (work / prefix / ".complete").write_text(f"{name}\n")
        shutil.rmtree(dest, ignore_errors=True)
        (work / prefix).rename(dest)
    finally:
        tarball.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    return dest


_NO_NODES = "No nodes available to run query"


class TrinoError(Exception):
    """A query Trino failed (its message), or a protocol error."""


@dataclass
class TrinoServer:
    """A running Trino: its URL, process, log and config directory."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path
    etc: Path

    def query(self, sql: str, timeout: float = 120.0) -> list[list[Any]]:
        """The rows of ``sql`` (JSON values: varchar and timestamps as strings), through
        ``POST /v1/statement`` and its ``nextUri`` chain; a failed query raises
        :class:`TrinoError` with Trino's message. A query refused for want of worker nodes
        (for a few seconds after start-up, until the node is known to the scheduler; nothing
        ran) is sent again."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self._run(sql, deadline)
            except TrinoError as e:
                if str(e) != _NO_NODES or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def _run(self, sql: str, deadline: float) -> list[list[Any]]:
        headers = {"X-Trino-User": "icefloe-tests", "X-Trino-Catalog": "iceberg"}
        req = urllib.request.Request(
            f"{self.url}/v1/statement", data=sql.encode(), headers=headers, method="POST"
        )
        rows: list[list[Any]] = []
        while True:
            try:
                with urllib.request.urlopen(req, timeout=60) as resp:
                    answer = json.load(resp)
            except urllib.error.HTTPError as e:
                if e.code not in (502, 503, 504) or time.monotonic() > deadline:
                    raise TrinoError(f"{e.code} from Trino: {e.read()[:500]!r}") from None
                time.sleep(0.05)  # the protocol's "try again" answers
                continue
            if "error" in answer:
                raise TrinoError(answer["error"].get("message", str(answer["error"])))
            rows.extend(answer.get("data") or [])
            if "nextUri" not in answer:
                return rows
            if time.monotonic() > deadline:
                raise TrinoError(f"query did not finish in time: {sql}")
            req = urllib.request.Request(answer["nextUri"], headers=headers)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _write_config(etc: Path, data: Path, port: int, rest_url: str) -> None:
    (etc / "catalog").mkdir(parents=True, exist_ok=True)
    (etc / "node.properties").write_text(
        f"node.environment=icefloe_tests\nnode.id=icefloe-tests\nnode.data-dir={data}\n"
        "node.bind-ip=127.0.0.1\n"
    )
    (etc / "jvm.config").write_text(
        "\n".join(
            [
                "-server",
                "-Xmx1G",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",  # the client compiler only: a faster start-up
                "-Djdk.attach.allowAttachSelf=true",
                "-Duser.timezone=UTC",
                "",
            ]
        )
    )
    (etc / "config.properties").write_text(
        "\n".join(
            [
                "coordinator=true",
                "node-scheduler.include-coordinator=true",
                f"http-server.http.port={port}",
                f"discovery.uri=http://127.0.0.1:{port}",
                "node.internal-address=127.0.0.1",
                "query.max-memory=512MB",
                "query.max-memory-per-node=256MB",
                "",
            ]
        )
    )
    (etc / "log.properties").write_text("io.trino=WARN\n")
    (etc / "catalog" / "iceberg.properties").write_text(
        "\n".join(
            [
                "connector.name=iceberg",
                "iceberg.catalog.type=rest",
                f"iceberg.rest-catalog.uri={rest_url}",
                f"iceberg.rest-catalog.warehouse={WAREHOUSE}",
                "fs.hadoop.enabled=true",  # Hadoop's local file system for file:// paths
                "",
            ]
        )
    )


def start_trino(base: Path, rest_url: str, java_home: Path, server_dir: Path) -> TrinoServer:
    """Start Trino (``bin/launcher run``) with its config under ``base``; wait until
    ``/v1/info`` says it has started and a query runs."""
    port = free_port()
    etc = base / "etc"
    _write_config(etc, base / "data", port, rest_url)
    log = base / "trino.log"
    env = {
        **os.environ,
        "JAVA_HOME": str(java_home),
        "PATH": f"{java_home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(server_dir / "bin" / "launcher"), "run", f"--etc-dir={etc}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=base,
            preexec_fn=_die_with_parent,
        )
    server = TrinoServer(f"http://127.0.0.1:{port}", proc, log, etc)
    deadline = time.monotonic() + 180
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"Trino exited with {proc.returncode}:\n{server.log_text()[-5000:]}")
        try:
            with urllib.request.urlopen(f"{server.url}/v1/info", timeout=2) as resp:
                started = json.load(resp).get("starting") is False
            # started, the node still has to announce itself before queries find it
            if started and server.query("SELECT 1") == [[1]]:
                return server
        except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError, TrinoError):
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"Trino did not start:\n{server.log_text()[-5000:]}")
        time.sleep(0.25)


@pytest.fixture(scope="session")
def trino(
    rest_server: RestServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TrinoServer]:
    """One Trino for the session, its catalog ``iceberg`` over ``rest_server``'s warehouse
    :data:`WAREHOUSE` (skips without Java 24+ or when the server cannot be fetched)."""
    java_home, why = trino_java_home()
    if java_home is None:
        pytest.skip(why)
    try:
        server_dir = trino_server_dir()
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        pytest.skip(f"Trino {TRINO_VERSION} could not be fetched from Maven Central ({e})")
    server = start_trino(tmp_path_factory.mktemp("trino"), rest_server.url, java_home, server_dir)
    try:
        yield server
    finally:
        server.stop()
