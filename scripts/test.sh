#!/usr/bin/env bash
# The one test command (README quick start; .ci/run calls it):
# installs what is missing, builds the release and the sanitizer flavours and
# runs every test suite in both, then the simulator's CI batch and the fuzz
# smoke runs. Ends with one line "kairos: N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."
export TZ=UTC

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
step() { printf '\n=== %s (%ss elapsed)\n' "$1" "$SECONDS"; }
total_passed=0
total_failed=0
# Adds ctest's "N% tests passed, F tests failed out of T" to the totals.
count_ctest() {
  local line t f
  line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$1" | tail -1)
  t=$(sed -E 's/.*out of ([0-9]+).*/\1/' <<<"$line")
  f=$(sed -E 's/.* ([0-9]+) tests? failed.*/\1/' <<<"$line")
  total_passed=$((total_passed + t - f))
  total_failed=$((total_failed + f))
}

step "setup"
scripts/setup.sh

step "house checks"
scripts/check-tree.sh 2>&1 | tee "$logs/tree.log" || true
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/tree.log" | tail -1)
total_passed=$((total_passed + $(cut -d' ' -f1 <<<"$line")))
total_failed=$((total_failed + $(cut -d' ' -f3 <<<"$line")))

step "release build"
scripts/build.sh release
step "release tests"
ctest --test-dir build/release --output-on-failure -j "$(nproc)" 2>&1 | tee "$logs/release.log"
count_ctest "$logs/release.log"

step "asan+ubsan build"
scripts/build.sh asan
step "asan+ubsan tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j "$(nproc)" 2>&1 | tee "$logs/asan.log"
count_ctest "$logs/asan.log"

if [ -x scripts/sim-ci.sh ]; then
  step "simulator batch"
  scripts/sim-ci.sh 2>&1 | tee "$logs/sim.log"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/sim.log" | tail -1)
  total_passed=$((total_passed + $(cut -d' ' -f1 <<<"$line")))
  total_failed=$((total_failed + $(cut -d' ' -f3 <<<"$line")))
fi

step "fuzz smoke"
scripts/fuzz.sh smoke

step "done"
echo "kairos: $total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
