"""Running the ``icefloe`` command in tests: through click's CliRunner (in process) and as a
real subprocess (the ``icefloe`` script that ``pip install``/``maturin develop`` put next to
the interpreter, else ``python -m icefloe.cli``), both against a :class:`~_cli_tables.CliWorld`.
The subprocess gets this tree's ``python/`` first on ``PYTHONPATH``, so it runs this code.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
from click.testing import CliRunner

from icefloe.cli import cli
from support.cli_tables import CliWorld

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run(world: CliWorld, *args: str, width: int = 100) -> Result:
    """``icefloe --width W ARGS`` in process, colour off."""
    runner = CliRunner()
    r = runner.invoke(
        cli,
        ["--no-color", "--width", str(width), *args],
        env=world.env,
        catch_exceptions=False,
        prog_name="icefloe",
    )
    return Result(r.exit_code, r.stdout, r.stderr)


def subprocess_command() -> list[str]:
    """How to start the command as its own process: the installed console script of this
    interpreter's environment when there is one."""
    script = Path(sys.executable).with_name("icefloe")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "icefloe.cli"]


def run_process(
    world: CliWorld, *args: str, timeout: float = 120, command: list[str] | None = None
) -> Result:
    """``icefloe ARGS`` (or ``command ARGS``) in a child process with the world's
    environment."""
    env = {**os.environ, **world.env, "COLUMNS": "100", "NO_COLOR": "1"}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PYTHON_DIR), env.get("PYTHONPATH", "")) if p
    )
    p = subprocess.run(
        [*(command or subprocess_command()), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=world.root,
    )
    return Result(p.returncode, p.stdout, p.stderr)


def check_schema(document: Any, schema: dict[str, Any]) -> None:
    """Validate ``document`` against a JSON Schema (draft 2020-12)."""
    jsonschema.Draft202012Validator(schema).validate(document)


_VOLATILE = [
    (re.compile(r"\b\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?(\+00:00)?"), "<TIME>"),
    # snapshot ids have 18 or 19 digits: the placeholder and one following blank replace the
    # id and its column padding, so rows align the same way on every run
    (re.compile(r"\b\d{15,19}\b( *)"), lambda m: "<ID>" + (" " if m.group(1) else "")),
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<UUID>"),
    (re.compile(r"file://\S+"), "<PATH>"),
]


def mask(text: str) -> str:
    """``text`` with times, snapshot ids, uuids and paths replaced by placeholders and trailing
    blanks removed from every line."""
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


GOLDEN_DIR = Path(__file__).resolve().parents[1] / "golden" / "cli"
_MORE_VOLATILE = [
    (re.compile(r"[0-9a-f]{4,}(?:-[0-9a-f]{2,})+"), "<HEX>"),
    (re.compile(r"[\d,]+(\.\d)? days? old"), "<N> days old"),
    # deletion-vector Puffin files name their data files, so their size follows the path
    (re.compile(r"\b\d+(?:\.\d)? (?:B|KiB)\b"), "<SIZE>"),
    (re.compile(r"\(\d[\d,]* bytes\)"), "(<N> bytes)"),
]


def mask_golden(text: str) -> str:
    """``text`` with every volatile value masked, as golden files hold it."""
    masked = mask(text)
    for pattern, repl in _MORE_VOLATILE:
        masked = pattern.sub(repl, masked)
    return masked


def assert_golden(name: str, text: str) -> None:
    """``text`` (masked) equals ``tests/golden/cli/<name>.txt``; ``ICEFLOE_UPDATE_GOLDEN=1``
    rewrites the file instead."""
    masked = mask_golden(text)
    path = GOLDEN_DIR / f"{name}.txt"
    if os.environ.get("ICEFLOE_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(masked)
        return
    assert path.exists(), f"no golden file {path}; run with ICEFLOE_UPDATE_GOLDEN=1"
    assert masked == path.read_text(), f"{name}: output differs from {path}:\n{masked}"
