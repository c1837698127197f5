"""Where the shared reference material lives (specs, golden files from the reference engines).

It is ``shared/`` beside the repository, as on CI and in a developer's checkout (or beside the
parent folder, for git worktrees); ``ICEFLOE_SHARED_DIR`` overrides it. Tests that need it fail
loudly when it is missing instead of skipping, so a green run always includes the golden files.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _find_shared() -> Path:
    env = os.environ.get("ICEFLOE_SHARED_DIR")
    candidates = [Path(env)] if env else []
    candidates += [ROOT.parent / "shared", ROOT.parent.parent / "shared"]
    for candidate in candidates:
        if (candidate / "testdata").is_dir():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"shared reference material not found (tried {tried})")


SHARED = _find_shared()
TESTDATA = SHARED / "testdata"
