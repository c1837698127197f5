# Shared setup for the README's commands: a virtualenv with the pinned dependencies and a
# release build of the Rust extension. Sourced, not run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# "==> what" with the minutes since the run began (ICEFLOE_T0 carries the start to sub-scripts)
export ICEFLOE_T0="${ICEFLOE_T0:-$(date +%s)}"
step() { local t=$(( $(date +%s) - ICEFLOE_T0 )); printf '==> [%d:%02d] %s\n' $((t / 60)) $((t % 60)) "$*"; }

need() { command -v "$1" >/dev/null 2>&1 || { echo "error: '$1' is required ($2)" >&2; exit 1; }; }
need python3 "Python >= 3.10"
if ! command -v cargo >/dev/null 2>&1; then
  [ -f "$HOME/.cargo/env" ] && . "$HOME/.cargo/env"
fi
need cargo "the Rust toolchain: install it with rustup (https://rustup.rs)"

VENV="${ICEFLOE_VENV:-$ROOT/.venv}"
if [ ! -x "$VENV/bin/python" ]; then
  step "creating virtualenv $VENV"
  python3 -m venv "$VENV"
fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"
stamp="$VENV/.requirements-dev.sha"
want="$(sha256sum requirements/dev.txt | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  step "installing Python dependencies"
  python -m pip install --quiet --upgrade pip
  python -m pip install --quiet -r requirements/dev.txt
  echo "$want" >"$stamp"
fi
step "building the Rust extension (release)"
maturin develop --release --quiet 2>&1 | grep -vE '^(📦|🔗|🐍|📡|🛠|⚠️  Warning: CPython)' || true
python -c "import icefloe._native" || { echo "error: the extension did not build" >&2; exit 1; }
