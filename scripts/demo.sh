#!/usr/bin/env bash
# README quick start, first command: installs what is missing, builds the
# release flavour and starts `kairos server` with the embedded LMDB store in
# ./data (Ctrl-C stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release --target kairos
exec build/release/prod/kairos server --data-dir ./data "$@"
