#!/usr/bin/env bash
# README quick start, first command: installs what is missing, builds the
# release flavour and starts `kairos server` with the embedded LMDB store in
# ./data, its local workers and the demo job `demo-hello` (a shell command
# every 10 seconds; docs/OPERATIONS.md). Ctrl-C stops it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release --target kairos
exec build/release/prod/kairos server --data-dir ./data --demo "$@"
