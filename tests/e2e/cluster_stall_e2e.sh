#!/usr/bin/env bash
# A stalled shard leader in a cluster, end to end, on one real PostgreSQL
# (KAIROS_TEST_PG; exit 77, skipped, when unset): two `kairos server` nodes
# with a local worker each share one database of their own; 40 one-off jobs
# due over the next 25 s each apply one effect at the fencing sink. The node
# leading shard 0 is stopped (SIGSTOP, a GC pause) for 2 x the leader lease
# and then resumed (SIGCONT). Checks: while it is stopped the other node
# leads every shard; once resumed, the stalled node gives up each shard it
# led without dispatching under its old epoch -- by its own clock
# (leader.lost "local lease deadline passed") or refused by the epoch check
# in the store (write.rejected_stale_epoch) -- and counts it in /metrics;
# every job succeeds exactly once at the sink, whatever attempt the stall
# cut off. Real time with generous bounds; every wait polls a condition.
KAIROS="$1"
SINK="$2"
source "$(dirname "$0")/e2e_lib.sh"
source "$(dirname "$0")/pg_cluster_lib.sh"
shared_database kairos_stall

jobs=40
start_sink
for n in 1 2; do start_node "$n" --workers 1; done
wait_for 60 every_shard_led 2 || fail "the shards are not all led within 60 s: $(cluster 2)"
victim=$(cluster 2 | jq -r '.shards[0].leader' | sed 's/^n//')
[[ $victim =~ ^[12]$ ]] || fail "no leader for shard 0: $(cluster 2)"
other=$((3 - victim))
export KAIROS_SERVER="http://127.0.0.1:${node_http[$other]}"
led_by_victim=$(cluster "$other" | jq -c --arg v "n$victim" '[.shards[] | select(.leader == $v) | .shard]')
add_effect_jobs cs "$jobs"

wait_for 60 at_least_done 5 || fail "no effects within 60 s"
kill -STOP "${node_pid[$victim]}"
stopped_at=$(date +%s)
wait_for 60 every_shard_led "$other" "$victim" ||
  fail "shards $led_by_victim of the stalled n$victim not taken over within 60 s: $(cluster "$other")"
resume_due() { [ "$(date +%s)" -ge $((stopped_at + 2 * leader_ttl)) ]; }
wait_for 60 resume_due || fail "clock"
before=$(done_count)
kill -CONT "${node_pid[$victim]}"

# The stalled node lets go of every shard it led under its old epoch.
gave_up() {
  local shard
  for shard in $(echo "$led_by_victim" | jq '.[]'); do
    grep -Eq " (leader\.lost|write\.rejected_stale_epoch) shard=$shard " "$work/n$victim.log" || return 1
  done
}
wait_for 60 gave_up || fail "n$victim did not give up shards $led_by_victim after the stall"
metric() { node_get "$victim" /metrics | awk -v m="$1" '$1 == m { print $2 }'; }
lost=$(metric kairos_leader_lost_total)
stale=$(metric kairos_write_rejected_stale_epoch_total)
[ "${lost:-0}" -gt 0 ] || [ "${stale:-0}" -gt 0 ] ||
  fail "n$victim's /metrics counts no lost leadership nor stale-epoch refusal"
exactly_once cs "$jobs"
stop_nodes 1 2
printf 'e2e cluster stall: ok (n%s led shards %s, stopped %d s; gave them up: %s leader.lost, %s stale-epoch refusals; %d of %d effects before it resumed)\n' \
  "$victim" "$led_by_victim" "$((2 * leader_ttl))" "${lost:-0}" "${stale:-0}" "$before" "$jobs"
