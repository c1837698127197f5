"""``icefloe serve`` processes for the REST tests (a pytest plugin).

``rest_server`` is one server per test session: ``python -m icefloe.rest --per-warehouse`` over a
SQL catalog on a SQLite file, on a free loopback port, so each test gets a catalog of its own by
asking for a fresh ``warehouse`` name. ``start_rest_server`` starts further servers (with auth)
for the tests that need them. Servers are stopped by PID at teardown, and die with the test
process if it is killed (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

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
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def start_rest_server(
    base: Path,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    probe_headers: Mapping[str, str] | None = None,
) -> RestServer:
    """Start ``python -m icefloe.rest`` over a SQLite catalog under ``base``; wait until it
    answers ``GET /v1/config``."""
    base.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = base / "server.log"
    cmd = [
        sys.executable,
        "-m",
        "icefloe.rest",
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
    proc = subprocess.Popen(
        cmd,
        stdout=log.open("wb"),
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


def new_warehouse() -> str:
    """A fresh warehouse name: a catalog of its own on the session's server."""
    return f"w{uuid.uuid4().hex[:12]}"
