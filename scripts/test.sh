#!/usr/bin/env bash
# Sets up everything and runs every check: Rust format/lint/tests, Python lint/types/stubs, pytest.
# Extra arguments go to pytest (e.g. `scripts/test.sh -k transforms`).
. "$(dirname "${BASH_SOURCE[0]}")/_env.sh"

echo "==> cargo fmt --check"; cargo fmt --all -- --check
echo "==> cargo clippy"; cargo clippy --quiet --all-targets --features python -- -D warnings
echo "==> cargo test"; cargo test --quiet
echo "==> ruff"; ruff check python tests benches; ruff format --check python tests benches
echo "==> mypy"; mypy
echo "==> stubtest"; python -m mypy.stubtest icefloe._native
echo "==> pytest"
set +e
python -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi
exit "$rc"
