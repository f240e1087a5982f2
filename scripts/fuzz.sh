#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each one.
#   scripts/fuzz.sh smoke        -> 30 s per target (CI)
#   scripts/fuzz.sh SECONDS      -> that long per target
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-smoke}"
[ "$secs" = smoke ] && secs=30
scripts/build.sh fuzz
shopt -s nullglob
targets=(build/fuzz/tests/fuzz/*_fuzz)
if [ ${#targets[@]} -eq 0 ]; then echo "fuzz: no targets"; exit 0; fi
for t in "${targets[@]}"; do
  name=$(basename "$t")
  corpus="tests/fuzz/corpus/$name"
  work=$(mktemp -d)
  [ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
  echo "fuzz: $name for ${secs}s"
  "$t" -max_total_time="$secs" -timeout=5 -rss_limit_mb=2048 -print_final_stats=0 "$work" 2>&1 | tail -n 3
  rm -rf "$work"
done
