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
# its data directory, is ready again and leadership rebalances (three live
# nodes, none leading more than ceil(shards / 3)) within 3 x the leader
# lease; a node stopped with SIGTERM leaves gracefully (releases its shards,
# withdraws its node record), so the other two lead every shard sooner than
# one leader lease, with no lapse to wait out; SIGTERM stops every node
# with exit 0. Real time with generous bounds; every wait polls a condition.
KAIROS="$1"
SINK="$2"
source "$(dirname "$0")/e2e_lib.sh"
source "$(dirname "$0")/pg_cluster_lib.sh"
shared_database kairos_cluster

jobs=60
start_sink
for n in 1 2 3; do start_node "$n" --workers 0; done
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
add_effect_jobs cf "$jobs"

wait_for 60 at_least_done 5 || fail "no effects within 60 s"
kill -9 "${node_pid[$victim]}"
killed_at=$(date +%s.%N)
{ wait "${node_pid[$victim]}"; } 2>/dev/null
before=$(done_count)
[ "$before" -lt "$jobs" ] || fail "every job ran before the kill ($before); the test proves nothing"

# Failover: a survivor leads every shard, none by the victim.
wait_for 60 every_shard_led "$api" "$victim" ||
  fail "shards $led_by_victim of n$victim not taken over within 60 s: $(cluster "$api")"
took=$(seconds_since "$killed_at")
bound=$((2 * leader_ttl))
within "$took" "$bound" ||
  fail "took ${took}s to lead n$victim's shards $led_by_victim again, over 2 x the leader lease (${bound}s)"
exactly_once cf "$jobs"

# The killed node rejoins on its data directory, is ready, and gets its
# share back.
start_node "$victim" --workers 0
restarted_at=$(date +%s.%N)
wait_for 60 node_ready "$victim" || fail "n$victim restarted is not ready within 60 s"
wait_for 60 balanced "$api" 3 || fail "leadership not rebalanced over 3 nodes within 60 s: $(cluster "$api")"
rebalanced=$(seconds_since "$restarted_at")
within "$rebalanced" $((3 * leader_ttl)) ||
  fail "took ${rebalanced}s to rebalance after n$victim rejoined, over 3 x the leader lease"
cluster "$api" | jq -e --arg v "n$victim" '[.shards[] | select(.leader == $v)] | length >= 1' >/dev/null ||
  fail "the rejoined n$victim leads no shard: $(cluster "$api")"

# A graceful leave: SIGTERM the rejoined node; the other two lead its shards
# before one leader lease, as nothing of it has to lapse.
other=$((api % 3 + 1))
[ "$other" -ne "$victim" ] || other=$((other % 3 + 1))
kill -TERM "${node_pid[$victim]}"
left_at=$(date +%s.%N)
exited_within 60 "${node_pid[$victim]}" || fail "n$victim did not exit after SIGTERM"
[ "$rc" -eq 0 ] || fail "n$victim: exit $rc after SIGTERM"
grep -q "left: shards released" "$work/n$victim.log" || fail "n$victim did not leave gracefully: $(tail -5 "$work/n$victim.log")"
wait_for 60 balanced "$api" 2 || fail "n$victim's shards not taken over after it left: $(cluster "$api")"
handed=$(seconds_since "$left_at")
within "$handed" "$leader_ttl" ||
  fail "took ${handed}s to lead the shards of a node that left gracefully, over the leader lease (${leader_ttl}s)"
every_shard_led "$other" "$victim" || fail "n$other still sees n$victim leading: $(cluster "$other")"
stop_nodes "$api" "$other"
printf 'e2e cluster failover: ok (n%s led shards %s; taken over in %.1f s, bound %d s; %d of %d effects before the kill; rebalanced %.1f s after the rejoin; handed over %.1f s after a graceful leave)\n' \
  "$victim" "$led_by_victim" "$took" "$bound" "$before" "$jobs" "$rebalanced" "$handed"
