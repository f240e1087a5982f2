#!/usr/bin/env bash
# Cluster failover, end to end, on one real PostgreSQL (KAIROS_TEST_PG, a
# conninfo; exit 77, skipped, when unset): three `kairos server` nodes with
# no local workers share one database of their own; two remote
# `kairos worker`s are connected to all three (--connect with the list).
# 60 one-off jobs due over the next 25 s each apply one effect at the
# fencing sink. While they run, the node that leads shard 0 is killed
# (kill -9). Checks: the shards it led are led by the surviving nodes within
# 2 x the leader lease (the time is measured and printed); every job
# succeeds and the sink holds exactly one effect per job (none lost, none
# twice, whatever attempt the kill cut off); the killed node, restarted on
# its data directory, is ready again; SIGTERM stops every process with exit 0.
# Real time with generous bounds; every wait polls a condition.
KAIROS="$1"
SINK="$2"
if [ -z "${KAIROS_TEST_PG:-}" ]; then
  echo "SKIP: KAIROS_TEST_PG is not set (scripts/pg-server.sh start DIR prints one)"
  exit 77
fi
source "$(dirname "$0")/e2e_lib.sh"
command -v curl >/dev/null || fail "curl is required (scripts/setup.sh installs it)"
bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
psql() { "$bindir/psql" -X -q -tA -v ON_ERROR_STOP=1 "$@"; }
db="kairos_cluster_$$_$RANDOM"
trap 'for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
  psql "$KAIROS_TEST_PG" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
  [ -n "${KAIROS_E2E_KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT
psql "$KAIROS_TEST_PG" -c "CREATE DATABASE $db" >/dev/null || fail "CREATE DATABASE $db"
store="$KAIROS_TEST_PG dbname=$db" # the later dbname wins
k migrate --store "$store"
[ "$rc" -eq 0 ] || fail "migrate: exit $rc: $(cat "$work/stdout" "$work/err")"

jobs=60
leader_ttl=10 # seconds: the node's leader lease (core/kernel/lease_config.h)
start_sink
effect=$(sink_effect)
declare -A node_pid node_http node_listen
start_node() { # start_node N: node nN on the shared store
  start_server "n$1" --store "$store" --data-dir "$work/d$1" --node-id "n$1" --workers 0 \
    --lease-ttl 3s
  node_pid[$1]=$server
  node_http[$1]=$http_port
  node_listen[$1]=$listen_port
}
for n in 1 2 3; do start_node "$n"; done
cluster() { curl -s --max-time 5 "http://127.0.0.1:${node_http[$1]}/v1/cluster"; }
# every_shard_led N [NOT]: node N's view has a live leader for every shard
# (other than node NOT).
every_shard_led() {
  cluster "$1" | jq -e --arg not "n${2:-0}" \
    '[.shards[] | select(.leader == null or .leader == $not)] | length == 0' >/dev/null 2>&1
}
wait_for 60 every_shard_led 2 || fail "the shards are not all led within 60 s: $(cluster 2)"

listens="127.0.0.1:${node_listen[1]},127.0.0.1:${node_listen[2]},127.0.0.1:${node_listen[3]}"
for w in 1 2; do
  "$KAIROS" worker --connect "$listens" --state-dir "$work/w$w" --id "w$w" --concurrency 8 \
    --lease-ttl 3s >"$work/w$w.log" 2>&1 &
  pids+=("$!")
  disown "$!" # killed on exit without a job notice
done

# The victim: the node leading shard 0; the API is asked on another node.
victim=$(cluster 2 | jq -r '.shards[0].leader' | sed 's/^n//')
[[ $victim =~ ^[123]$ ]] || fail "no leader for shard 0: $(cluster 2)"
api=$((victim % 3 + 1))
export KAIROS_SERVER="http://127.0.0.1:${node_http[$api]}"
led_by_victim=$(cluster "$api" | jq -c --arg v "n$victim" '[.shards[] | select(.leader == $v) | .shard]')
for i in $(seq "$jobs"); do
  add_job --id "cf-$i" --in "$((3 + i % 22))s" --backoff 1s:1s --timeout 1m \
    --shell "sleep 0.3; $effect"
done

done_count() { sink_json | jq '.effects | length' 2>/dev/null || echo 0; }
some_done() { [ "$(done_count)" -ge 5 ]; }
wait_for 60 some_done || fail "no effects within 60 s"
kill -9 "${node_pid[$victim]}"
killed_at=$(date +%s.%N)
{ wait "${node_pid[$victim]}"; } 2>/dev/null
before=$(done_count)
[ "$before" -lt "$jobs" ] || fail "every job ran before the kill ($before); the test proves nothing"

# Failover: a survivor leads every shard, none by the victim.
wait_for 60 every_shard_led "$api" "$victim" ||
  fail "shards $led_by_victim of n$victim not taken over within 60 s: $(cluster "$api")"
took=$(awk -v a="$killed_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
bound=$((2 * leader_ttl))
awk -v t="$took" -v b="$bound" 'BEGIN { exit !(t <= b) }' ||
  fail "took ${took}s to lead n$victim's shards $led_by_victim again, over 2 x the leader lease (${bound}s)"

all_ran() {
  for i in $(seq "$jobs"); do has_succeeded "cf-$i" || return 1; done
}
wait_for 120 all_ran || fail "not every job succeeded after the failover ($before effects before it)"
sink_json >"$work/sink_final.json"
jq -e --argjson n "$jobs" '
  ([.effects[].key] | length == (unique | length)) and
  ([.keys[]] | length) == $n and (.effects | length) == $n' "$work/sink_final.json" >/dev/null ||
  fail "the sink does not hold exactly one effect per job: $(jq -c '[.effects[].key] | group_by(.) | map(select(length > 1))' "$work/sink_final.json")"
for i in $(seq "$jobs"); do
  runs_json "cf-$i" >"$work/runs.json"
  jq -e '[.runs[] | select(.outcome == "succeeded")] | length == 1' "$work/runs.json" >/dev/null ||
    fail "cf-$i: not exactly one succeeded run: $(cat "$work/runs.json")"
done

# The killed node rejoins on its data directory and is ready.
start_node "$victim"
ready() { curl -s -f -o /dev/null --max-time 5 "http://127.0.0.1:${node_http[$victim]}/readyz"; }
wait_for 60 ready || fail "n$victim restarted is not ready within 60 s"

for n in 1 2 3; do
  kill -TERM "${node_pid[$n]}"
  exited_within 60 "${node_pid[$n]}" || fail "n$n did not exit after SIGTERM"
  [ "$rc" -eq 0 ] || fail "n$n: exit $rc after SIGTERM"
done
printf 'e2e cluster failover: ok (n%s led shards %s; taken over in %.1f s, bound %d s; %d of %d effects before the kill)\n' \
  "$victim" "$led_by_victim" "$took" "$bound" "$before" "$jobs"
