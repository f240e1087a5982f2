#!/usr/bin/env bash
# The one test command (README quick start; .ci/run calls it):
# installs what is missing, builds the release and the sanitizer flavours and
# runs every test suite in both, then the fuzz smoke runs.
set -euo pipefail
cd "$(dirname "$0")/.."
export TZ=UTC

step() { printf '\n=== %s (%ss elapsed)\n' "$1" "$SECONDS"; }

step "setup"
scripts/setup.sh

step "release build"
scripts/build.sh release
step "release tests"
ctest --test-dir build/release --output-on-failure -j "$(nproc)"

step "asan+ubsan build"
scripts/build.sh asan
step "asan+ubsan tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j "$(nproc)"

step "fuzz smoke"
scripts/fuzz.sh smoke

step "done"
