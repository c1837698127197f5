"""Azure and GCS emulators on loopback ports (a pytest plugin), installed from the registries.

- ``azurite``: Azurite's blob service (npm package ``azurite``), installed with ``npm`` into
  ``$ICEFLOE_TOOL_CACHE`` (default ``~/.cache/icefloe/tools``) on first use.
- ``fake_gcs``: fake-gcs-server (Go module ``github.com/fsouza/fake-gcs-server``), built with
  ``go install`` into the same cache when ``ICEFLOE_BUILD_FAKE_GCS=1`` (the build takes minutes),
  used from the cache afterwards.

A fixture skips, with the reason, when its tool (npm or go) is missing or the install fails.
Clients always get explicit credentials (or anonymous access), so no cloud SDK looks for a
metadata server.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

AZURITE_VERSION = "3.37.0"
FAKE_GCS_VERSION = "v1.56.1"
# Azurite's well-known development account (public, documented by Microsoft).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def tool_cache() -> Path:
    """Where installed emulators are kept."""
    return Path(os.environ.get("ICEFLOE_TOOL_CACHE", Path.home() / ".cache" / "icefloe" / "tools"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(proc: subprocess.Popen[bytes], port: int, log: Path, what: str) -> None:
    deadline = time.monotonic() + 90
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited: {log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"{what} did not listen on port {port} within 90 s") from None
            time.sleep(0.3)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def azurite_binary() -> tuple[Path | None, str]:
    """(azurite-blob, "") or (None, why it cannot run here)."""
    prefix = tool_cache() / f"azurite-{AZURITE_VERSION}"
    binary = prefix / "node_modules" / ".bin" / "azurite-blob"
    if binary.exists():
        return binary, ""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        return None, "Azurite needs Node.js and npm"
    prefix.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix),
         f"azurite@{AZURITE_VERSION}"],
        capture_output=True,
        timeout=600,
    )  # fmt: skip
    if done.returncode != 0 or not binary.exists():
        return None, f"npm install azurite@{AZURITE_VERSION} failed: {done.stderr[-500:]!r}"
    return binary, ""


@dataclass(frozen=True)
class Azurite:
    """A running Azurite blob service and the ``adls.*`` properties that reach it."""

    authority: str

    def properties(self) -> dict[str, str]:
        return {
            "adls.account-name": AZURITE_ACCOUNT,
            "adls.account-key": AZURITE_KEY,
            "adls.blob-storage-authority": self.authority,
            "adls.blob-storage-scheme": "http",
            "adls.dfs-storage-authority": self.authority,
            "adls.dfs-storage-scheme": "http",
        }

    def location(self, container: str, path: str) -> str:
        return f"abfs://{container}@{AZURITE_ACCOUNT}.dfs.core.windows.net/{path}"


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    """Azurite's blob service on a loopback port (skips without Node.js/npm)."""
    binary, why = azurite_binary()
    if binary is None:
        pytest.skip(why)
    base = tmp_path_factory.mktemp("azurite")
    port = _free_port()
    log = base / "azurite.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(binary), "--blobHost", "127.0.0.1", "--blobPort", str(port),
             "--location", str(base / "data"), "--skipApiVersionCheck", "--loose", "--silent"],
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        _wait_for_port(proc, port, log, "Azurite")
        yield Azurite(f"127.0.0.1:{port}")
    finally:
        _stop(proc)


def fake_gcs_binary() -> tuple[Path | None, str]:
    """(fake-gcs-server, "") or (None, why it cannot run here)."""
    bindir = tool_cache() / f"fake-gcs-server-{FAKE_GCS_VERSION}"
    binary = bindir / "fake-gcs-server"
    if binary.exists():
        return binary, ""
    go = shutil.which("go")
    if go is None:
        return None, "fake-gcs-server is built from its Go module: it needs the Go toolchain"
    if not os.environ.get("ICEFLOE_BUILD_FAKE_GCS"):
        return None, (
            f"fake-gcs-server is not in {bindir}; set ICEFLOE_BUILD_FAKE_GCS=1 to build it "
            "(go install, several minutes on a small machine)"
        )
    bindir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [go, "install", f"github.com/fsouza/fake-gcs-server@{FAKE_GCS_VERSION}"],
        capture_output=True,
        timeout=1200,
        env={**os.environ, "GOBIN": str(bindir)},
    )
    if done.returncode != 0 or not binary.exists():
        return None, f"go install fake-gcs-server failed: {done.stderr[-500:]!r}"
    return binary, ""


@dataclass(frozen=True)
class FakeGcs:
    """A running fake-gcs-server and the ``gcs.*`` properties that reach it."""

    endpoint: str

    def properties(self) -> dict[str, str]:
        return {
            "gcs.service.host": self.endpoint,
            "gcs.anonymous": "true",
            "gcs.project-id": "icefloe-test",
        }


@pytest.fixture(scope="session")
def fake_gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeGcs]:
    """fake-gcs-server (HTTP, in memory) on a loopback port (skips without Go)."""
    binary, why = fake_gcs_binary()
    if binary is None:
        pytest.skip(why)
    base = tmp_path_factory.mktemp("fakegcs")
    port = _free_port()
    log = base / "fake-gcs.log"
    endpoint = f"http://127.0.0.1:{port}"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(binary), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
             "-backend", "memory", "-public-host", f"127.0.0.1:{port}",
             "-external-url", endpoint],
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        _wait_for_port(proc, port, log, "fake-gcs-server")
        yield FakeGcs(endpoint)
    finally:
        _stop(proc)
