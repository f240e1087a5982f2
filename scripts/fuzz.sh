#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each one.
#   scripts/fuzz.sh smoke        -> 30 s per target (CI)
#   scripts/fuzz.sh SECONDS      -> that long per target
# Targets run side by side, one per core (each fuzzer is single-threaded),
# and their reports are printed in target order; the run fails if any target
# found a crash, a leak or a timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-smoke}"
[ "$secs" = smoke ] && secs=30
scripts/build.sh fuzz
shopt -s nullglob
targets=(build/fuzz/tests/fuzz/*_fuzz)
if [ ${#targets[@]} -eq 0 ]; then echo "fuzz: no targets"; exit 0; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# fuzz_one TARGET: copies the target's seed corpus into a scratch directory,
# runs it for $secs seconds, leaves its output in $work/NAME.out and its exit
# status in $work/NAME.rc.
fuzz_one() {
  local t="$1" name corpus rc=0
  name=$(basename "$t")
  corpus="tests/fuzz/corpus/$name"
  mkdir -p "$work/$name.corpus"
  [ -d "$corpus" ] && cp -r "$corpus"/. "$work/$name.corpus"/
  "$t" -max_total_time="$secs" -timeout=5 -rss_limit_mb=2048 -print_final_stats=0 \
    -artifact_prefix="$work/$name." "$work/$name.corpus" >"$work/$name.out" 2>&1 || rc=$?
  echo "$rc" >"$work/$name.rc"
}
parallel=$(nproc)
running=0
for t in "${targets[@]}"; do
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
failed=0
for t in "${targets[@]}"; do
  name=$(basename "$t")
  rc=$(cat "$work/$name.rc")
  echo "fuzz: $name for ${secs}s (exit $rc)"
  tail -n 3 "$work/$name.out"
  if [ "$rc" -ne 0 ]; then
    failed=1
    echo "fuzz: $name failed; its output:"
    tail -n 60 "$work/$name.out"
    for a in "$work/$name".crash-* "$work/$name".leak-* "$work/$name".timeout-* "$work/$name".oom-*; do
      echo "fuzz: input that failed ($a):"
      od -c "$a" | head -20
    done
  fi
done
exit "$failed"
