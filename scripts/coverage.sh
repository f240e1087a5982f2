#!/usr/bin/env bash
# Kernel branch coverage of the simulator's CI batch (docs/SIMULATION.md,
# "Kernel branch coverage"). Builds kairos-sim in its own build directory
# (default build/coverage) with only core/kernel/*.cc instrumented
# (--coverage -O0, through a compiler launcher: everything else is the
# release build, so the batch runs at nearly release speed), runs the CI
# batch's subset -- every scenario on seeds 1..COV_SEEDS, a swarm of
# COV_SWARM runs, and each planted bug's swarm (the planted-bug switches are
# kernel branches too) -- and reports, with gcov and awk only, the branches
# of core/kernel/*.cc taken at least once: the total, per file, and the
# functions with the most branches never taken. Exceptional (throw) edges
# are not counted: the kernel reports errors with absl::Status.
#
#   scripts/coverage.sh                 build, run, report
#   COV_SEEDS=6 COV_SWARM=500 scripts/coverage.sh      the full CI batch
#   scripts/coverage.sh --report-only   report the counters already collected
#   COV_TOP=40 ...                      list more uncovered functions
# Exits non-zero when the build or the report fails (never for a low figure;
# a violation in the batch is reported but does not stop it: the planted
# bugs are meant to fail).
set -uo pipefail

# Compiler launcher mode (CMAKE_CXX_COMPILER_LAUNCHER): instrument the
# kernel's sources, compile everything else as given.
if [[ ${1:-} == --compile ]]; then
  shift
  for arg in "$@"; do
    if [[ $arg == */core/kernel/*.cc ]]; then exec "$@" --coverage -O0; fi
  done
  exec "$@"
fi

cd "$(dirname "$0")/.."
export TZ=UTC
ROOT=$PWD
BUILD=${COV_BUILD:-build/coverage}
SEEDS=${COV_SEEDS:-2}
SWARM=${COV_SWARM:-100}
JOBS=${COV_JOBS:-2}
TOP=${COV_TOP:-15}
SIM=$BUILD/sim/kairos-sim
OBJ=$BUILD/core/CMakeFiles/kairos_core.dir/kernel

if [[ ${1:-} != --report-only ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKAIROS_BENCH=OFF \
    "-DCMAKE_CXX_COMPILER_LAUNCHER=$ROOT/scripts/coverage.sh;--compile" \
    -DCMAKE_EXE_LINKER_FLAGS=--coverage > "$BUILD.cmake.log" 2>&1 ||
    { echo "coverage: cmake failed (see $BUILD.cmake.log)"; exit 1; }
  nice ninja -C "$BUILD" -j "$JOBS" kairos-sim || { echo "coverage: build failed"; exit 1; }
  find "$OBJ" -name '*.gcda' -delete
  OUT=$(mktemp -d /tmp/coverage.XXXXXX)
  echo "coverage: running the batch (seeds 1..$SEEDS, swarm $SWARM, planted bugs); logs in $OUT"
  mapfile -t scenarios < <(find scenarios -name '*.scenario' ! -name 'day-in-the-life.scenario' | sort)
  printf '%s\n' "${scenarios[@]}" | xargs -P "$JOBS" -I{} sh -c \
    'f={}; '"$SIM"' --scenario "$f" --seeds 1..'"$SEEDS"' > '"$OUT"'/$(echo "$f" | tr / _).out 2>&1; true'
  half=$((SWARM / 2))
  "$SIM" --swarm --runs "$half" --seed 1 > "$OUT/swarm-a.out" 2>&1 &
  "$SIM" --swarm --runs $((SWARM - half)) --seed $((half + 1)) > "$OUT/swarm-b.out" 2>&1
  wait
  for bug in $("$SIM" --list-bugs); do
    "$SIM" --swarm --runs 50 --inject-bug="$bug" --stop-on-failure > "$OUT/bug-$bug.out" 2>&1
  done
  failed=$(cat "$OUT"/*.scenario.out "$OUT"/swarm-*.out | grep -c 'verdict=FAIL')
  echo "coverage: batch done ($failed failing runs outside the planted bugs)"
fi

ls "$OBJ"/*.gcda > /dev/null 2>&1 || { echo "coverage: no counters in $OBJ (run without --report-only)"; exit 1; }
GCOV_DIR=$(mktemp -d /tmp/coverage-gcov.XXXXXX)
(cd "$GCOV_DIR" && gcov -b -c -m -p "$ROOT/$OBJ"/*.gcda > gcov.log 2>&1) ||
  { echo "coverage: gcov failed (see $GCOV_DIR/gcov.log)"; exit 1; }

# Each .gcov file names its source on its "Source:" line; only the kernel's
# own .cc files count (their headers' inline code is counted where it is
# instantiated, in every file, so it is left out). A branch line reads
# "branch N taken K [(fallthrough)|(throw)]" or "branch N never executed".
awk -v top="$TOP" '
  FNR == 1 { keep = 0; fn = "" }
  /^ *-: *0:Source:/ {
    src = $0; sub(/^.*Source:/, "", src)
    keep = src ~ /core\/kernel\/[^\/]*\.cc$/
    if (keep) { file = src; sub(/^.*core\/kernel\//, "", file); files[file] = 1 }
  }
  !keep { next }
  # A template instantiation opens with a dashed line and its name.
  /^-+$/ { inst = 1; next }
  inst && /^[^ ]/ && !/^(branch|call|function) / {
    inst = 0; fn = $0; sub(/:$/, "", fn); sub(/^[^ (]* /, "", fn)
    gsub(/\(anonymous namespace\)/, "{anon}", fn)
    lambda = fn ~ /::\{lambda/; sub(/\(.*$/, "", fn); if (lambda) fn = fn " (a lambda)"
    next
  }
  { inst = 0 }
  /^function / {
    fn = $2; for (i = 3; i <= NF && $i != "called"; ++i) fn = fn " " $i
    gsub(/\(anonymous namespace\)/, "{anon}", fn)
    lambda = fn ~ /::\{lambda/; sub(/\(.*$/, "", fn); if (lambda) fn = fn " (a lambda)"
    next
  }
  /^branch / && !/\(throw\)/ {
    total++; ftotal[file]++
    if ($3 == "taken" && $4 + 0 > 0) { taken++; ftaken[file]++ }
    else { key = file ": " fn; miss[key]++ }
  }
  END {
    if (total == 0) { print "coverage: no kernel branches found"; exit 1 }
    printf "kernel branch coverage: %d of %d branches taken (%.1f%%)\n", taken, total, 100.0 * taken / total
    print "per file (taken/total):"
    n = 0
    for (f in files) names[++n] = f
    for (i = 2; i <= n; ++i) { v = names[i]; for (j = i - 1; j >= 1 && names[j] > v; --j) names[j + 1] = names[j]; names[j + 1] = v }
    for (i = 1; i <= n; ++i) {
      f = names[i]
      if (ftotal[f] > 0) printf "  %-28s %5d/%-5d %5.1f%%\n", f, ftaken[f], ftotal[f], 100.0 * ftaken[f] / ftotal[f]
    }
    print "functions with the most branches never taken:"
    m = 0
    for (k in miss) { keys[++m] = k }
    for (i = 2; i <= m; ++i) { v = keys[i]; for (j = i - 1; j >= 1 && miss[keys[j]] < miss[v]; --j) keys[j + 1] = keys[j]; keys[j + 1] = v }
    for (i = 1; i <= m && i <= top; ++i) printf "  %4d  %s\n", miss[keys[i]], keys[i]
  }
' "$GCOV_DIR"/*.gcov
rc=$?
echo "coverage: annotated sources in $GCOV_DIR (grep -n 'never executed\\|taken 0' FILE.gcov)"
exit $rc
