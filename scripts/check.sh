#!/usr/bin/env bash
# Quick checks for iterating and for merging: build the extension, then ruff, mypy, stubtest and
# pytest (extra arguments go to pytest). Set ICEFLOE_CHECK_RUST=1 to add cargo fmt, clippy and
# cargo test. `scripts/test.sh` (the README's test command) runs everything.
. "$(dirname "${BASH_SOURCE[0]}")/_env.sh"

if [ "${ICEFLOE_CHECK_RUST:-0}" = 1 ]; then
  step "cargo fmt --check"; cargo fmt --all -- --check
  step "cargo clippy"; cargo clippy --quiet --all-targets --features python -- -D warnings
  step "cargo test"; cargo test --quiet
fi
step "ruff"; ruff check python tests benches; ruff format --check python tests benches
step "mypy"; mypy
step "stubtest"; python -m mypy.stubtest icefloe._native
step "pytest"
# fixed hypothesis examples (tests/conftest.py): a gate that passes or fails the same way on
# every machine; scripts/soak.sh hunts with random seeds and many more examples
export ICEFLOE_HYPOTHESIS_PROFILE="${ICEFLOE_HYPOTHESIS_PROFILE:-ci}"
set +e
python -m pytest -q -x "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi
exit "$rc"
