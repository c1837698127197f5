#!/usr/bin/env bash
# Clean-install smoke tests: fresh virtualenvs holding only icefloe and what it declares.
#   1. `pip install .`          -> create, append, scan, delete, upsert (scripts/smoke/core.py)
#   2. `pip install '.[spark]'` -> a Spark write, read and merge (scripts/smoke/spark.py)
#   3. `pip install .` at the declared minimum versions of every dependency -> core.py
# A module imported but not declared, or a floor that no longer works, fails here.
# Usage: scripts/smoke.sh [core|spark|floor ...]   (default: all three). Needs python3 and cargo;
# spark needs Java. The wheel build reuses target/ from scripts/_env.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# "==> what" with the minutes since the run began (ICEFLOE_T0 carries the start to sub-scripts)
export ICEFLOE_T0="${ICEFLOE_T0:-$(date +%s)}"
step() { local t=$(( $(date +%s) - ICEFLOE_T0 )); printf '==> [%d:%02d] %s\n' $((t / 60)) $((t % 60)) "$*"; }
if ! command -v cargo >/dev/null 2>&1 && [ -f "$HOME/.cargo/env" ]; then . "$HOME/.cargo/env"; fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PIP_FLAGS=(--quiet --disable-pip-version-check)

fresh_venv() {  # fresh_venv NAME -> path of its python
  python3 -m venv "$WORK/$1"
  echo "$WORK/$1/bin/python"
}

# The declared floors (`pkg>=X` in [project].dependencies) as `pkg==X` constraints.
floors() {
  python3 - <<'PY'
import re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
for dep in deps:
    m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*>=\s*([0-9][^,;\s]*).*", dep)
    if not m:
        raise SystemExit(f"dependency without a '>=' floor: {dep!r}")
    print(f"{m[1]}=={m[3]}")
PY
}

run_smoke() {  # run_smoke PYTHON SCRIPT: from outside the tree, with the virtualenv activated
  # (on PATH, as a user has it: Spark starts its Python workers as `python3` from PATH)
  (cd "$WORK" && PATH="$(dirname "$1"):$PATH" "$1" "$ROOT/scripts/smoke/$2")
}

want=("${@:-core spark floor}")
for what in ${want[*]}; do
  case "$what" in
    core)
      step "smoke: pip install . in a fresh virtualenv"
      py=$(fresh_venv core)
      "$py" -m pip install "${PIP_FLAGS[@]}" .
      run_smoke "$py" core.py ;;
    spark)
      if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
        echo "error: the Spark smoke test needs Java 17+" >&2; exit 1
      fi
      step "smoke: pip install '.[spark]' in a fresh virtualenv"
      py=$(fresh_venv spark)
      "$py" -m pip install "${PIP_FLAGS[@]}" ".[spark]"
      run_smoke "$py" spark.py ;;
    floor)
      step "smoke: pip install . at the declared minimum versions"
      floors >"$WORK/floors.txt"
      echo "    $(tr '\n' ' ' <"$WORK/floors.txt")"
      py=$(fresh_venv floor)
      "$py" -m pip install "${PIP_FLAGS[@]}" . -c "$WORK/floors.txt"
      run_smoke "$py" core.py ;;
    *) echo "error: unknown smoke test '$what' (core, spark, floor)" >&2; exit 2 ;;
  esac
done
