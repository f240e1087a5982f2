#!/usr/bin/env bash
# The one test command (README quick start; .ci/run calls it):
# installs what is missing, builds the release and the sanitizer flavours and
# runs every test suite in both, then the simulator's CI batch and the fuzz
# smoke runs. Ends with one line "kairos: N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."
export TZ=UTC

logs=$(mktemp -d)
build_groups=""
pg_dir=""
# Stops any build still running in the background and the private PostgreSQL
# server, then drops the logs.
trap 'for g in $build_groups; do kill -- "-$g" 2>/dev/null || true; done; if [ -n "$pg_dir" ]; then scripts/pg-server.sh stop "$pg_dir/pg" >/dev/null 2>&1 || true; rm -rf "$pg_dir" || true; fi; rm -rf "$logs"' EXIT
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

# Test phases leave CPU idle (processes start, e2e scripts wait on real
# servers): the next flavour's build runs meanwhile at the lowest priority, so
# it takes (almost) only the CPU the tests leave.
# background_build FLAVOUR starts it; finish_build FLAVOUR waits for it and
# shows its output (a failed build fails the run here).
background_build() {
  # setsid: the build is a process group of its own, so the trap can stop it.
  setsid nice -n 19 scripts/build.sh "$1" >"$logs/build-$1.log" 2>&1 &
  eval "build_pid_$1=$!"
  build_groups="$build_groups $!"
}
finish_build() {
  local pid rc=0
  eval "pid=\$build_pid_$1"
  wait "$pid" || rc=$?
  cat "$logs/build-$1.log"
  if [ "$rc" -ne 0 ]; then echo "$1 build failed (exit $rc)"; exit "$rc"; fi
}

step "release build"
scripts/build.sh release
background_build asan
# The PostgreSQL store's tests run against a private, throw-away server on
# a Unix socket (scripts/pg-server.sh), for both flavours.
step "private PostgreSQL server"
pg_dir=$(mktemp -d /tmp/kairos-pg-XXXXXX)
chmod 755 "$pg_dir"
KAIROS_TEST_PG=$(scripts/pg-server.sh start "$pg_dir/pg")
export KAIROS_TEST_PG
echo "KAIROS_TEST_PG=$KAIROS_TEST_PG"
step "release tests (asan+ubsan build in the background)"
ctest --test-dir build/release --output-on-failure -j "$(nproc)" 2>&1 | tee "$logs/release.log"
count_ctest "$logs/release.log"

step "asan+ubsan build"
finish_build asan
background_build fuzz
# The mutation sample's unmutated build (build/mutate) as well, so that the
# simulator batch only recompiles what each mutant changes.
setsid nice -n 19 scripts/mutate.sh --prepare --jobs 2 >"$logs/build-mutate.log" 2>&1 &
mutate_prep_pid=$!
build_groups="$build_groups $!"
step "asan+ubsan tests (fuzz build in the background)"
# The planted-bug searches (up to 50 swarm seeds per bug, twice) are left to
# the release flavour and the simulator batch, which both run them: under the
# sanitizers they took a third of this phase, and apart from the planted
# branches themselves they run the kernel code the other simulator tests here
# run.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j "$(nproc)" -E '^AllBugs/PlantedBug\.' 2>&1 | tee "$logs/asan.log"
count_ctest "$logs/asan.log"
step "fuzz build"
finish_build fuzz

# Before the simulator batch: its mutation sample edits kernel sources in
# place (restoring them after), which would make the fuzz targets rebuild.
step "fuzz smoke"
scripts/fuzz.sh smoke

if [ -x scripts/sim-ci.sh ]; then
  step "simulator batch"
  # The mutation build started beside the sanitizer tests; a failure here
  # only costs time (the batch builds it again and reports what fails).
  wait "$mutate_prep_pid" || { cat "$logs/build-mutate.log"; echo "mutation build failed; the batch retries it"; }
  scripts/sim-ci.sh 2>&1 | tee "$logs/sim.log"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logs/sim.log" | tail -1)
  total_passed=$((total_passed + $(cut -d' ' -f1 <<<"$line")))
  total_failed=$((total_failed + $(cut -d' ' -f3 <<<"$line")))
fi

step "done"
echo "kairos: $total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
