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
# Two narrower figures come with the total (docs/SIMULATION.md, "Kernel
# branch coverage"): the scope -- the transaction bodies
# (job_store_*.cc but job_store_planted_bugs.cc, run_lifecycle.cc), the
# scheduler node (scheduler_node.cc) and the worker (worker.cc), the code
# that decides -- and each figure again without the branches on the lines of
# a KAIROS_CHECK statement (every line of it, from the line naming the macro
# to the one ending the statement): a check's failure edge is a bug, never
# taken by a correct kernel, so it can only lower the figure. Nothing else is
# left out; the totals stay as they were.
#
#   scripts/coverage.sh                 build, run, report
#   COV_SEEDS=6 COV_SWARM=500 scripts/coverage.sh      the full CI batch
#   scripts/coverage.sh --report-only   report the counters already collected
#   COV_TOP=40 ...                      list more uncovered functions
#   COV_SKIP='a|b' ...                  leave out the scenarios whose path
#                                       matches this extended regex
#   COV_LINES=1 ...                     also list every untaken branch of the
#                                       scope outside checks, by file:line
#   COV_TOOL=llvm ...                   source-level branches instead: clang's
#                                       instrumentation (-fprofile-instr-generate
#                                       -fcoverage-mapping, default build
#                                       build/coverage-llvm), llvm-profdata and
#                                       llvm-cov export, each condition of the
#                                       source counted once with its two
#                                       outcomes (gcov counts the compiler's
#                                       edges: a destructor's cleanup on an
#                                       early return is an edge too)
# Exits non-zero when the build or the report fails (never for a low figure;
# a violation in the batch is reported but does not stop it: the planted
# bugs are meant to fail).
set -uo pipefail

# Compiler launcher mode (CMAKE_CXX_COMPILER_LAUNCHER): instrument the
# kernel's sources, compile everything else as given.
if [[ ${1:-} == --compile || ${1:-} == --compile-llvm ]]; then
  mode=$1
  shift
  for arg in "$@"; do
    if [[ $arg == */core/kernel/*.cc ]]; then
      if [[ $mode == --compile ]]; then exec "$@" --coverage -O0; fi
      exec "$@" -fprofile-instr-generate -fcoverage-mapping -O0
    fi
  done
  exec "$@"
fi

cd "$(dirname "$0")/.."
export TZ=UTC
ROOT=$PWD
TOOL=${COV_TOOL:-gcov}
[[ $TOOL == gcov || $TOOL == llvm ]] || { echo "coverage: COV_TOOL must be gcov or llvm, got $TOOL"; exit 2; }
if [[ $TOOL == llvm ]]; then BUILD=${COV_BUILD:-build/coverage-llvm}; else BUILD=${COV_BUILD:-build/coverage}; fi
SEEDS=${COV_SEEDS:-2}
SWARM=${COV_SWARM:-100}
JOBS=${COV_JOBS:-2}
TOP=${COV_TOP:-15}
LINES=${COV_LINES:-0}
SIM=$BUILD/sim/kairos-sim
OBJ=$BUILD/core/CMakeFiles/kairos_core.dir/kernel

if [[ ${1:-} != --report-only ]]; then
  if [[ $TOOL == llvm ]]; then
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKAIROS_BENCH=OFF \
      -DCMAKE_CXX_COMPILER=clang++ \
      "-DCMAKE_CXX_COMPILER_LAUNCHER=$ROOT/scripts/coverage.sh;--compile-llvm" \
      -DCMAKE_EXE_LINKER_FLAGS=-fprofile-instr-generate > "$BUILD.cmake.log" 2>&1 ||
      { echo "coverage: cmake failed (see $BUILD.cmake.log)"; exit 1; }
  else
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKAIROS_BENCH=OFF \
      "-DCMAKE_CXX_COMPILER_LAUNCHER=$ROOT/scripts/coverage.sh;--compile" \
      -DCMAKE_EXE_LINKER_FLAGS=--coverage > "$BUILD.cmake.log" 2>&1 ||
      { echo "coverage: cmake failed (see $BUILD.cmake.log)"; exit 1; }
  fi
  nice ninja -C "$BUILD" -j "$JOBS" kairos-sim || { echo "coverage: build failed"; exit 1; }
  find "$OBJ" -name '*.gcda' -delete
  rm -rf "$BUILD/prof"
  # (llvm) one raw profile per process, merged for the report.
  export LLVM_PROFILE_FILE=$ROOT/$BUILD/prof/%p.profraw
  OUT=$(mktemp -d /tmp/coverage.XXXXXX)
  echo "coverage: running the batch (seeds 1..$SEEDS, swarm $SWARM, planted bugs); logs in $OUT"
  mapfile -t scenarios < <(find scenarios -name '*.scenario' ! -name 'day-in-the-life.scenario' |
    sort | grep -Ev "${COV_SKIP:-^$}")
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

if [[ $TOOL == llvm ]]; then
  ls "$BUILD"/prof/*.profraw > /dev/null 2>&1 ||
    { echo "coverage: no profiles in $BUILD/prof (run without --report-only)"; exit 1; }
  llvm-profdata merge -sparse "$BUILD"/prof/*.profraw -o "$BUILD/kernel.profdata" ||
    { echo "coverage: llvm-profdata failed"; exit 1; }
  llvm-cov export -instr-profile="$BUILD/kernel.profdata" "$SIM" > "$BUILD/kernel-coverage.json" ||
    { echo "coverage: llvm-cov export failed"; exit 1; }
  python3 "$ROOT/scripts/coverage_llvm.py" "$BUILD/kernel-coverage.json" "$TOP" "$LINES"
  exit $?
fi

ls "$OBJ"/*.gcda > /dev/null 2>&1 || { echo "coverage: no counters in $OBJ (run without --report-only)"; exit 1; }
GCOV_DIR=$(mktemp -d /tmp/coverage-gcov.XXXXXX)
(cd "$GCOV_DIR" && gcov -b -c -m -p "$ROOT/$OBJ"/*.gcda > gcov.log 2>&1) ||
  { echo "coverage: gcov failed (see $GCOV_DIR/gcov.log)"; exit 1; }

# Each .gcov file names its source on its "Source:" line; only the kernel's
# own .cc files count (their headers' inline code is counted where it is
# instantiated, in every file, so it is left out). A branch line reads
# "branch N taken K [(fallthrough)|(throw)]" or "branch N never executed".
awk -v top="$TOP" -v lines="$LINES" '
  function pct(a, b) { return b > 0 ? 100.0 * a / b : 0 }
  FNR == 1 { keep = 0; fn = ""; chk = 0; chk_open = 0 }
  /^ *-: *0:Source:/ {
    src = $0; sub(/^.*Source:/, "", src)
    keep = src ~ /core\/kernel\/[^\/]*\.cc$/
    if (keep) {
      file = src; sub(/^.*core\/kernel\//, "", file); files[file] = 1
      # The scope: the transaction bodies, the node and the worker.
      scoped = (file ~ /^job_store_.*\.cc$/ && file != "job_store_planted_bugs.cc") ||
               file == "run_lifecycle.cc" || file == "scheduler_node.cc" || file == "worker.cc"
    }
  }
  !keep { next }
  # A source line, "COUNT:LINE:TEXT": is it part of a KAIROS_CHECK statement
  # (from the line naming the macro through the line ending the statement)?
  /^ *[^ :]+: *[0-9]+:/ && !/^(branch|call|function) / {
    text = $0; sub(/^ *[^ :]+: *[0-9]+:/, "", text)
    lineno = $0; sub(/^ *[^ :]+: */, "", lineno); sub(/:.*$/, "", lineno)
    ends = text ~ /;[ \t]*(\/\/.*)?$/
    if (text ~ /KAIROS_CHECK/) { chk = 1; chk_open = !ends }
    else if (chk_open) { chk = 1; if (ends) chk_open = 0 }
    else chk = 0
  }
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
    hit = $3 == "taken" && $4 + 0 > 0
    total++; ftotal[file]++
    if (hit) { taken++; ftaken[file]++ }
    else { key = file ": " fn; miss[key]++ }
    if (!chk) { ntotal++; if (hit) ntaken++ }
    if (scoped) {
      stotal++; if (hit) staken++
      if (!chk) {
        sntotal++
        if (hit) sntaken++
        else { smiss[file ": " fn]++; if (lines) sline[file ":" lineno]++ }
      }
    }
  }
  END {
    if (total == 0) { print "coverage: no kernel branches found"; exit 1 }
    printf "kernel branch coverage: %d of %d branches taken (%.1f%%)\n", taken, total, 100.0 * taken / total
    printf "  without KAIROS_CHECK lines: %d of %d (%.1f%%)\n", ntaken, ntotal, pct(ntaken, ntotal)
    printf "scope (job_store_*.cc but planted bugs, run_lifecycle.cc, scheduler_node.cc, worker.cc): %d of %d (%.1f%%)\n", staken, stotal, pct(staken, stotal)
    printf "  without KAIROS_CHECK lines: %d of %d (%.1f%%)\n", sntaken, sntotal, pct(sntaken, sntotal)
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
    print "in the scope, outside KAIROS_CHECK lines:"
    m = 0
    for (k in smiss) { skeys[++m] = k }
    for (i = 2; i <= m; ++i) { v = skeys[i]; for (j = i - 1; j >= 1 && smiss[skeys[j]] < smiss[v]; --j) skeys[j + 1] = skeys[j]; skeys[j + 1] = v }
    for (i = 1; i <= m && i <= top; ++i) printf "  %4d  %s\n", smiss[skeys[i]], skeys[i]
    if (lines) {
      print "untaken branches of the scope outside KAIROS_CHECK lines, by line (count):"
      for (k in sline) printf "  %s %d\n", k, sline[k] | "sort -t: -k1,1 -k2,2n"
      close("sort -t: -k1,1 -k2,2n")
    }
  }
' "$GCOV_DIR"/*.gcov
rc=$?
echo "coverage: annotated sources in $GCOV_DIR (grep -n 'never executed\\|taken 0' FILE.gcov)"
exit $rc
