#!/usr/bin/env bash
# Prints one line per simulated run, "NAME seed=N trace=HASH verdict=V", for
# every scenario (the 24 h one excepted) on seeds 1..SEEDS and a swarm batch.
# A refactoring that keeps behaviour keeps this output byte for byte:
#   scripts/trace-hashes.sh > before.txt; ...change...; scripts/trace-hashes.sh | diff before.txt -
# SIM (default build/release/sim/kairos-sim), SEEDS (default 3), SWARM (default 40).
set -euo pipefail
cd "$(dirname "$0")/.."
export TZ=UTC
SIM=${SIM:-build/release/sim/kairos-sim}
SEEDS=${SEEDS:-3}
SWARM=${SWARM:-40}
[[ -x $SIM ]] || { echo "trace-hashes: $SIM not built" >&2; exit 1; }
summarise() {  # label
  grep 'verdict=' | sed -E "s|^(seed=[0-9]+) .*(trace=[0-9a-f]+) (verdict=[A-Z]+).*|$1 \1 \2 \3|"
}
find scenarios -name '*.scenario' ! -name 'day-in-the-life.scenario' | sort | while read -r f; do
  "$SIM" --scenario "$f" --seeds "1..$SEEDS" </dev/null 2>&1 | summarise "$f" || true
done
"$SIM" --swarm --runs "$SWARM" --seed 1 2>&1 | summarise swarm || true
