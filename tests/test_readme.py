"""The README's quick start runs as written, in a fresh working directory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def test_quick_start_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M)
    assert blocks, "README has no python block"
    monkeypatch.chdir(tmp_path)  # load_catalog() with no configuration uses ./warehouse
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.icefloe.yaml: the embedded default
    monkeypatch.delenv("ICEFLOE_CONFIG", raising=False)
    ns: dict[str, object] = {}
    exec(compile(blocks[0], str(README), "exec"), ns)
    rows = ns["table"].scan(row_filter="id >= 2").to_arrow().sort_by("id")  # type: ignore[attr-defined]
    assert rows.to_pydict() == {"id": [3, 4], "kind": ["buy", "view"]}
