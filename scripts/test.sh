#!/usr/bin/env bash
# Sets up everything and runs every check: Rust format/lint/tests, Python lint/types/stubs,
# clean-install smoke tests (scripts/smoke.sh), pytest.
# Extra arguments go to pytest (e.g. `scripts/test.sh -k transforms`).
. "$(dirname "${BASH_SOURCE[0]}")/_env.sh"

# one full build: incremental state would only take disk (about 0.5 GB)
export CARGO_INCREMENTAL=0
step "cargo fmt --check"; cargo fmt --all -- --check
step "cargo clippy"; cargo clippy --quiet --all-targets --features python -- -D warnings
step "cargo test"; cargo test --quiet
# the minimum supported Rust version (Cargo.toml rust-version), when that toolchain is installed
# (`rustup toolchain install 1.90.0 --profile minimal`)
if rustup toolchain list 2>/dev/null | grep -q '^1\.90\.0'; then
  step "cargo +1.90.0 check (MSRV)"; cargo +1.90.0 check --quiet --all-targets --features python
else
  echo "note: Rust 1.90.0 not installed; the minimum-version check is skipped" >&2
fi
step "ruff"; ruff check python tests benches; ruff format --check python tests benches
step "mypy"; mypy
step "stubtest"; python -m mypy.stubtest icefloe._native
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    step "installing PostgreSQL (Debian package) for the SQL catalog tests"
    apt-get update -qq && apt-get install -y -qq postgresql >/dev/null
  else
    echo "note: PostgreSQL server binaries not found; the PostgreSQL catalog tests will be" \
      "skipped. Install them with: sudo apt-get install -y postgresql" >&2
  fi
fi
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    step "installing Chromium (Debian package) for the HTML report test"
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  else
    echo "note: chromium not found; the HTML report's browser test will be skipped." \
      "Install it with: sudo apt-get install -y chromium" >&2
  fi
fi
# fresh virtualenvs with only `pip install .` / `'.[spark]'` / the declared floors
bash scripts/smoke.sh
step "pytest"
# fixed hypothesis examples (tests/conftest.py): a gate that passes or fails the same way on
# every machine; scripts/soak.sh hunts with random seeds and many more examples
export ICEFLOE_HYPOTHESIS_PROFILE="${ICEFLOE_HYPOTHESIS_PROFILE:-ci}"
# the GCS tests build fake-gcs-server from its Go module (cached under ~/.cache/icefloe/tools)
export ICEFLOE_BUILD_FAKE_GCS="${ICEFLOE_BUILD_FAKE_GCS:-1}"
set +e
python -m pytest --durations=40 "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then echo "error: pytest collected no tests" >&2; exit 1; fi
exit "$rc"
