"""The ``icefloe`` outputs shown in docs/guide.md are what the commands print: each
``$ icefloe ...`` line of the guide's console blocks is run against the test world (the same
tables, committed at the same times) and its output compared with the guide's, volatile values
(ids, times, paths, sizes) masked on both sides."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.cli import mask_golden, run
from support.cli_tables import CliWorld, build_world

GUIDE = Path(__file__).resolve().parent.parent / "docs" / "guide.md"


def guide_commands() -> list[tuple[str, str]]:
    """(command line, expected output) of every ``$ icefloe`` line in a console block."""
    text = GUIDE.read_text()
    out: list[tuple[str, str]] = []
    for block in re.findall(r"^```console\n(.*?)^```", text, re.S | re.M):
        current: list[str] | None = None
        for line in block.splitlines():
            if line.startswith("$ "):
                current = [line[2:]]
                out.append((line[2:], ""))
            elif current is not None:
                cmd, body = out[-1]
                out[-1] = (cmd, body + line + "\n")
    return [(c, b) for c, b in out if c.startswith("icefloe ")]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliWorld]:
    yield build_world(tmp_path_factory.mktemp("cli-guide") / "world")


def test_the_guide_shows_commands() -> None:
    commands = [c for c, _ in guide_commands()]
    assert len(commands) >= 10
    for name in ("snapshots", "partitions", "files", "health", "compact", "scan", "sql", "report"):
        assert any(c.split()[1] == name for c in commands), name


@pytest.mark.parametrize(("command", "expected"), guide_commands(), ids=lambda v: v[:40])
def test_guide_output_is_real(
    world: CliWorld, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, expected: str
) -> None:
    monkeypatch.chdir(tmp_path)
    args = shlex.split(command)[1:]
    r = run(world, *args, width=100)
    want_code = 3 if "db.nope" in command else 0
    assert r.exit_code == want_code, r.stderr
    shown = r.stdout if want_code == 0 else r.stderr
    # the pictures' layout is held by the golden files; here the words and numbers count
    assert mask_golden(shown).split() == mask_golden(expected).split()
