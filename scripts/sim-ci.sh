#!/usr/bin/env bash
# The simulator's CI batch (docs/SIMULATION.md, "CI"). Runs, in about ten
# minutes on two cores:
#   1. every scenario under scenarios/ (regressions included) on several seeds
#      (the 24 h benchmark is replaced by its one-hour variant);
#   2. a swarm batch of random fault mixes;
#   3. the planted-bug checks: `--swarm --runs 50 --inject-bug=NAME` must
#      report a violation for every bug of `--list-bugs`;
#   4. the determinism checks: seeds run twice in one build, and the release
#      and sanitizer builds' trace hashes compared (first divergent record
#      named on a mismatch);
#   5. coverage: every mark of `--list-marks` hit somewhere in the batch;
#   6. the mutation sample: every mutant of sim/mutants/ci-sample.txt must be
#      killed by a short batch (scripts/mutate.sh; build/mutate, built on first
#      use; SIM_CI_MUTANTS=0 skips it).
# Exits non-zero on any failure; the last line is "N passed, M failed" over
# every run and check. Expects the release build in build/release and the
# sanitizer build in build/asan (scripts/test.sh builds both first); override
# with KAIROS_SIM / KAIROS_SIM_ASAN. SIM_CI_SEEDS and SIM_CI_SWARM scale it.
set -uo pipefail
cd "$(dirname "$0")/.."
export TZ=UTC

SIM=${KAIROS_SIM:-build/release/sim/kairos-sim}
SIM_ASAN=${KAIROS_SIM_ASAN:-build/asan/sim/kairos-sim}
SEEDS=${SIM_CI_SEEDS:-6}
SWARM=${SIM_CI_SWARM:-500}
JOBS=${SIM_CI_JOBS:-2}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

for bin in "$SIM" "$SIM_ASAN"; do
  [[ -x $bin ]] || { echo "sim-ci: $bin not built (run scripts/test.sh, or set KAIROS_SIM/KAIROS_SIM_ASAN)"; echo "0 passed, 1 failed"; exit 1; }
done

OUT=$(mktemp -d /tmp/sim-ci.XXXXXX)
passed=0
failed=0
pass() { passed=$((passed + $1)); }
fail() { failed=$((failed + $1)); printf 'FAILED: %s\n' "$2"; }
step() { printf '\n=== sim-ci: %s (%ss)\n' "$1" "$SECONDS"; }

# Counts the verdict lines of one kairos-sim output; a run that crashed
# (no verdict line for a seed it started) counts as failed.
tally() {  # file label
  local started p f
  started=$(grep -c '^seed=[0-9]* scenario=[^ ]*$' "$1")
  p=$(grep -c 'verdict=PASS' "$1")
  f=$(grep -c 'verdict=FAIL' "$1")
  pass "$p"
  if (( f > 0 )); then fail "$f" "$2 (see $1)"; grep -E '^(VIOLATION|replay:)' "$1" | head -20; fi
  if (( started > p + f )); then fail $((started - p - f)) "$2 crashed (see $1)"; tail -5 "$1"; fi
}

step "scenarios x $SEEDS seeds"
mapfile -t scenarios < <(find scenarios -name '*.scenario' ! -name 'day-in-the-life.scenario' | sort)
printf '%s\n' "${scenarios[@]}" | xargs -P "$JOBS" -I{} sh -c \
  'f={}; n=$(echo "$f" | tr / _); '"$SIM"' --scenario "$f" --seeds 1..'"$SEEDS"' --coverage > '"$OUT"'/"$n".out 2>&1; true'
for f in "${scenarios[@]}"; do tally "$OUT/$(echo "$f" | tr / _).out" "$f"; done

step "swarm batch of $SWARM runs"
half=$((SWARM / 2))
"$SIM" --swarm --runs "$half" --seed 1 --coverage > "$OUT/swarm-a.out" 2>&1 &
"$SIM" --swarm --runs $((SWARM - half)) --seed $((half + 1)) --coverage > "$OUT/swarm-b.out" 2>&1
wait
tally "$OUT/swarm-a.out" "swarm seeds 1..$half"
tally "$OUT/swarm-b.out" "swarm seeds $((half + 1))..$SWARM"

step "planted bugs (each must be caught within 50 swarm seeds)"
# Every bug of --list-bugs (sim/world/fault_plan.h, kCaughtBugs); a policy bug must
# be caught by the invariant written for it.
declare -A want=([unbounded-catch-up]=catch-up-bounded [overlap-ignored]=overlap-respected
                 [retry-without-backoff]=retry-backoff [handover-keeps-epoch]=epochs-increase)
for bug in $("$SIM" --list-bugs); do
  "$SIM" --swarm --runs 50 --inject-bug="$bug" --stop-on-failure > "$OUT/bug-$bug.out" 2>&1
  rc=$?
  inv=${want[$bug]:-}
  if [[ $rc -eq 1 ]] && grep -q "^VIOLATION ${inv}" "$OUT/bug-$bug.out"; then
    pass 1
    printf '%-22s caught: %s\n' "$bug" "$(grep '^replay:' "$OUT/bug-$bug.out" | head -1)"
  else
    fail 1 "planted bug $bug was not caught${inv:+ by $inv} in 50 swarm seeds (rc=$rc, see $OUT/bug-$bug.out)"
  fi
done

step "determinism: each seed twice, release build"
for spec in "scenarios/paused-worker-past-lease.scenario 3" "scenarios/everything-restarts.scenario 5" \
            "scenarios/lost-commit-replies.scenario 7"; do
  set -- $spec
  if "$SIM" --scenario "$1" --seed "$2" --check-determinism > "$OUT/det.out" 2>&1 && grep -q '^deterministic' "$OUT/det.out"; then
    pass 1
  else
    fail 1 "nondeterministic: $1 seed $2"; grep -A2 NONDETERMINISTIC "$OUT/det.out"
  fi
done
"$SIM" --swarm --runs 1 --seed 4242 --check-determinism > "$OUT/det-swarm.out" 2>&1 \
  && grep -q '^deterministic' "$OUT/det-swarm.out" && pass 1 || fail 1 "nondeterministic: swarm seed 4242"

step "determinism: release vs sanitizer build"
for spec in "scenarios/crash-during-dispatch.scenario 2" "scenarios/skewed-and-jumping-clocks.scenario 9" \
            "scenarios/dst-transition-day.scenario 1"; do
  set -- $spec
  "$SIM" --scenario "$1" --seed "$2" > "$OUT/rel.out" 2>&1
  "$SIM_ASAN" --scenario "$1" --seed "$2" > "$OUT/asan.out" 2>&1
  a=$(grep -o 'trace=[0-9a-f]*' "$OUT/rel.out"); b=$(grep -o 'trace=[0-9a-f]*' "$OUT/asan.out")
  if [[ -n $a && $a == "$b" ]]; then
    pass 1
  else
    fail 1 "release ($a) and sanitizer ($b) builds differ on $1 seed $2"
    "$SIM" --scenario "$1" --seed "$2" --trace "$OUT/rel.trace" > /dev/null 2>&1
    "$SIM_ASAN" --scenario "$1" --seed "$2" --trace "$OUT/asan.trace" > /dev/null 2>&1
    "$SIM" --compare-traces "$OUT/rel.trace" "$OUT/asan.trace"
  fi
done
"$SIM_ASAN" --swarm --runs 3 --seed 77 > "$OUT/asan-swarm.out" 2>&1
tally "$OUT/asan-swarm.out" "sanitizer build swarm"

step "coverage marks"
cat "$OUT"/*.out | awk '$1 == "mark" { hit[$2] += $3 } END { for (m in hit) print m, hit[m] }' | sort > "$OUT/marks"
missing=0
for m in $("$SIM" --list-marks); do
  if ! grep -q "^$m " "$OUT/marks"; then echo "coverage mark never hit: $m"; missing=1; fi
done
if [[ $missing -eq 0 ]]; then pass 1; echo "all $("$SIM" --list-marks | wc -l) required marks hit"; else fail 1 "coverage"; fi

if [[ ${SIM_CI_MUTANTS:-1} != 0 ]]; then
  step "mutation sample: every mutant of sim/mutants/ci-sample.txt killed"
  # Mutates the kernel in place while one mutant builds (restored at once and
  # on exit), in its own build directory; stops each batch at the first failure.
  if scripts/mutate.sh --sample sim/mutants/ci-sample.txt --jobs "$JOBS" --fail-on-survivor \
      --out "$OUT/mutate" > "$OUT/mutate.out" 2>&1; then
    pass 1; grep "^mutate: killed" "$OUT/mutate.out"
  else
    fail 1 "a sampled mutant survived or did not build (see $OUT/mutate.out)"
    grep -E "^(mutate:|  core/)" "$OUT/mutate.out" | tail -25
  fi
fi

step "done"
echo "outputs in $OUT"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
