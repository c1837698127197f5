#!/usr/bin/env bash
# Soak the property tests: every hypothesis test runs ICEFLOE_SOAK_FACTOR (default 20) times its
# committed max_examples, with a random seed (profile "soak"), so bugs that a CI run's fixed
# examples miss can surface. Extra arguments go to pytest, e.g.
#   scripts/soak.sh tests/test_rowlevel_model.py        # one file
#   ICEFLOE_SOAK_FACTOR=50 scripts/soak.sh -k rowlevel  # more examples
# A failure prints the shrunk example and a @reproduce_failure blob: pin it as an @example
# next to a deterministic regression test. Does not rebuild: run scripts/check.sh (or
# `maturin develop --release`) first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${ICEFLOE_VENV:-$ROOT/.venv}"
# shellcheck disable=SC1091
. "$VENV/bin/activate"
export ICEFLOE_HYPOTHESIS_PROFILE=soak
export ICEFLOE_SOAK_FACTOR="${ICEFLOE_SOAK_FACTOR:-20}"
if [ "$#" -eq 0 ]; then
  mapfile -t files < <(grep -l "from hypothesis import" tests/test_*.py)
  set -- "${files[@]}"
fi
echo "==> soak: ${ICEFLOE_SOAK_FACTOR}x max_examples, random seed" >&2
exec python -m pytest -q -p no:cacheprovider "$@"
