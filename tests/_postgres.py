"""A throw-away PostgreSQL server for the SQL catalog tests (a pytest plugin).

The session fixture ``postgres_uri`` finds Debian's server binaries
(``/usr/lib/postgresql/<v>/bin``), creates a cluster in a temporary directory, starts it on a
free loopback port (as the ``postgres`` user when the tests run as root, since ``initdb``
refuses root) and stops and deletes it at the end. Without the binaries or the ``psycopg``
driver the PostgreSQL tests are skipped with a reason that says what to install.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator

import pytest


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


@pytest.fixture(scope="session")
def postgres_uri() -> Iterator[str]:
    """SQLAlchemy URL of a running PostgreSQL server owned by this test session."""
    bindir = _bindir()
    if bindir is None:
        pytest.skip(
            "PostgreSQL server binaries not found under /usr/lib/postgresql; "
            "install them with `apt-get install -y postgresql` (scripts/test.sh does as root)"
        )
    if importlib.util.find_spec("psycopg") is None:
        pytest.skip("the psycopg driver is not installed (pip install 'psycopg[binary]')")
    prefix: list[str] = []
    base = tempfile.mkdtemp(prefix="icefloe-pg-")
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the server as")
        os.chown(base, user.pw_uid, user.pw_gid)
        runuser = shutil.which("runuser")
        prefix = [runuser, "-u", "postgres", "--"] if runuser else ["su", "postgres", "-c"]
    data = os.path.join(base, "data")
    log = os.path.join(base, "server.log")
    port = _free_port()

    def run(*args: str) -> None:
        cmd = [*prefix, *args]
        if prefix[-1:] == ["-c"]:
            cmd = [*prefix, " ".join(args)]
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)

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
        shutil.rmtree(base, ignore_errors=True)
        raise RuntimeError(f"could not start PostgreSQL: {detail}") from exc
    try:
        yield f"postgresql+psycopg://icefloe@127.0.0.1:{port}/postgres"
    finally:
        try:
            run(f"{bindir}/pg_ctl", "-D", data, "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(base, ignore_errors=True)
