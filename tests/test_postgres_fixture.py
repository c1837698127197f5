"""The throw-away PostgreSQL server of the SQL catalog tests doesn't outlive a killed run."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.postgres

_CHILD = """
import sys, time
sys.path.insert(0, {tests!r})
from support.postgres import PostgresUnavailable, postgres_server
try:
    with postgres_server() as server:
        print(server.port, server.base, flush=True)
        time.sleep(600)
except PostgresUnavailable as exc:
    print("UNAVAILABLE", exc, flush=True)
"""


def _accepts(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _wait_until(condition, seconds: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def test_server_is_stopped_and_deleted_when_the_test_process_is_killed() -> None:
    code = _CHILD.format(tests=str(Path(__file__).resolve().parent))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        line = child.stdout.readline().split(maxsplit=1)
        if line and line[0] == "UNAVAILABLE":
            pytest.skip(line[1] if len(line) > 1 else "PostgreSQL unavailable")
        port, base = int(line[0]), line[1].strip()
        assert _accepts(port), "the server should be up while its owner runs"
        assert os.path.isdir(base)
        os.kill(child.pid, signal.SIGKILL)  # no teardown runs in the child
        child.wait(timeout=30)
        assert _wait_until(lambda: not os.path.exists(base), 60), f"{base} left behind"
        assert not _accepts(port), f"a server still listens on port {port}"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
