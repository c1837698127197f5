"""A throw-away PostgreSQL server for the SQL catalog tests (a pytest plugin).

The session fixture ``postgres_uri`` finds Debian's server binaries
(``/usr/lib/postgresql/<v>/bin``), creates a cluster in a temporary directory, starts it on a
free loopback port (as the ``postgres`` user when the tests run as root, since ``initdb``
refuses root) and stops and deletes it at the end. Without the binaries or the ``psycopg``
driver the PostgreSQL tests are skipped with a reason that says what to install.

The server is a daemon, so it would outlive a test run that is killed (``SIGKILL``, a CI
timeout) before the fixture's teardown. A small watchdog process (:data:`_WATCHDOG`, in its own
session so a signal to the test's process group doesn't reach it) holds the read end of a pipe
whose write end only the test process has; when that process ends, however it ends, the pipe
closes and the watchdog stops the server and deletes its directory.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

_WATCHDOG = """
import shutil, subprocess, sys
sys.stdin.buffer.read()  # returns at EOF: the test process closed the pipe or died
stop, base = sys.argv[1:-1], sys.argv[-1]
subprocess.run(stop, capture_output=True, timeout=120)
shutil.rmtree(base, ignore_errors=True)
"""


class PostgresUnavailable(Exception):
    """The server binaries, the ``postgres`` user or the driver are missing (a skip reason)."""


@dataclass(frozen=True)
class PostgresServer:
    """A running throw-away server: its SQLAlchemy URL, port and cluster directory."""

    uri: str
    port: int
    base: str


def _bindir() -> str | None:
    candidates = glob.glob("/usr/lib/postgresql/*/bin/initdb")
    if not candidates:
        return None
    best = max(candidates, key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    return os.path.dirname(best)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """Start a server in a new temporary cluster; stop and delete it on exit or process death."""
    bindir = _bindir()
    if bindir is None:
        raise PostgresUnavailable(
            "PostgreSQL server binaries not found under /usr/lib/postgresql; "
            "install them with `apt-get install -y postgresql` (scripts/test.sh does as root)"
        )
    prefix: list[str] = []
    base = tempfile.mkdtemp(prefix="icefloe-pg-")
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(base, ignore_errors=True)
            raise PostgresUnavailable(
                "running as root and there is no 'postgres' user to run the server as"
            ) from None
        os.chown(base, user.pw_uid, user.pw_gid)
        runuser = shutil.which("runuser")
        prefix = [runuser, "-u", "postgres", "--"] if runuser else ["su", "postgres", "-c"]
    data = os.path.join(base, "data")
    log = os.path.join(base, "server.log")
    port = _free_port()

    def command(*args: str) -> list[str]:
        if prefix[-1:] == ["-c"]:
            return [*prefix, " ".join(args)]
        return [*prefix, *args]

    def run(*args: str) -> None:
        subprocess.run(command(*args), check=True, capture_output=True, timeout=120)

    stop = command(f"{bindir}/pg_ctl", "-D", data, "-m", "fast", "-w", "stop")
    watchdog = subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG, *stop, base],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        run(f"{bindir}/initdb", "-D", data, "-U", "icefloe", "--auth=trust", "-E", "UTF8")
        options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"
        options += " -c max_connections=100"
        run(f"{bindir}/pg_ctl", "-D", data, "-l", log, "-o", options, "-w", "start")
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or b"").decode(errors="replace")
        if os.path.exists(log):
            with open(log) as handle:
                detail += handle.read()
        _release(watchdog)
        raise RuntimeError(f"could not start PostgreSQL: {detail}") from exc
    try:
        yield PostgresServer(f"postgresql+psycopg://icefloe@127.0.0.1:{port}/postgres", port, base)
    finally:
        _release(watchdog)


def _release(watchdog: subprocess.Popen[bytes]) -> None:
    """Close the watchdog's pipe and wait while it stops the server and deletes the cluster."""
    assert watchdog.stdin is not None
    watchdog.stdin.close()
    watchdog.wait(timeout=180)


@pytest.fixture(scope="session")
def postgres_uri() -> Iterator[str]:
    """SQLAlchemy URL of a running PostgreSQL server owned by this test session."""
    if importlib.util.find_spec("psycopg") is None:
        pytest.skip("the psycopg driver is not installed (pip install 'psycopg[binary]')")
    try:
        with postgres_server() as server:
            yield server.uri
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
