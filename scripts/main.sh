#!/usr/bin/env bash
# Sets up everything and runs the main job (see README).
. "$(dirname "${BASH_SOURCE[0]}")/_env.sh"
python -m icefloe.demo "$@"
