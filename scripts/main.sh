#!/usr/bin/env bash
# Sets up everything and runs the main job: the Spark pipeline (see README).
# Arguments go to `python -m icefloe.spark.pipeline` (e.g. --rows 500000, --warehouse DIR).
# The pipeline without Spark is `python -m icefloe.demo`.
. "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
if [ -z "${JAVA_HOME:-}" ] && ! command -v java >/dev/null 2>&1; then
  echo "error: Spark needs Java 17 or newer and none was found." >&2
  echo "  install one, e.g. 'sudo apt-get install openjdk-17-jre-headless' (Debian/Ubuntu)," >&2
  echo "  'brew install openjdk@17' (macOS) or from https://adoptium.net, then rerun;" >&2
  echo "  'python -m icefloe.demo' runs the same kind of pipeline without Spark." >&2
  exit 2
fi
python -m icefloe.spark.pipeline "$@"
