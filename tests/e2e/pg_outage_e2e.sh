#!/usr/bin/env bash
# PostgreSQL restarted under load, end to end: a private PostgreSQL server of
# this test's own (scripts/pg-server.sh in a throw-away directory, so the
# shared test server is never touched), two `kairos server` nodes with local
# workers on it, 40 one-off jobs due over the next 25 s, each applying one
# effect at the fencing sink. While they run, PostgreSQL is stopped (fast
# shutdown: every session, mid-transaction or mid-COMMIT, is cut), kept down
# a few seconds, and started again. Checks: both nodes stay up, report not
# ready (/readyz 503) while it is down and count the store's unavailability
# in /metrics; after it is back they are ready again and dispatch resumes
# within 2 x the leader lease (measured and printed); every job succeeds and
# the sink holds exactly one effect per job. Skipped (exit 77) when
# KAIROS_TEST_PG is unset, as the other PostgreSQL tests are. Real time with
# generous bounds; every wait polls a condition.
KAIROS="$1"
SINK="$2"
source "$(dirname "$0")/e2e_lib.sh"
source "$(dirname "$0")/pg_cluster_lib.sh"
pgdir=$(private_dir)
pg_dirs+=("$pgdir")
store=$("$pg_server" start "$pgdir") || fail "could not start a private PostgreSQL server"
migrate_store

jobs=40
start_sink
for n in 1 2; do start_node "$n" --workers 1; done
not_ready() { ! node_ready "$1" && node_get "$1" /readyz | jq -e '.ready == false' >/dev/null 2>&1; }
both_ready() { node_ready 1 && node_ready 2; }
both_not_ready() { not_ready 1 && not_ready 2; }
wait_for 60 both_ready || fail "the nodes are not ready within 60 s"
add_effect_jobs po "$jobs"

wait_for 60 at_least_done 5 || fail "no effects within 60 s"
"$pg_server" stop "$pgdir" || fail "could not stop PostgreSQL"
before=$(done_count)
[ "$before" -lt "$jobs" ] || fail "every job ran before the outage ($before); the test proves nothing"
wait_for 30 both_not_ready ||
  fail "a node still reports ready with PostgreSQL down: $(node_get 1 /readyz) $(node_get 2 /readyz)"
unavailable() { # the node's count of store transactions that found the store unavailable
  node_get "$1" /metrics | awk '/^kairos_txn_total\{.*outcome="unavailable"/ { n += $2 } END { print n + 0 }'
}
counted() { [ "$(unavailable 1)" -gt 0 ] && [ "$(unavailable 2)" -gt 0 ]; }
wait_for 30 counted || fail "the store's unavailability is not in /metrics: $(unavailable 1) $(unavailable 2)"
sleep 3 # an outage of a few seconds: jobs fall due meanwhile
for n in 1 2; do kill -0 "${node_pid[$n]}" 2>/dev/null || fail "n$n exited while PostgreSQL was down"; done

"$pg_server" start "$pgdir" >/dev/null || fail "could not start PostgreSQL again"
back_at=$(date +%s.%N)
dispatched_before=$(node_log_count ' run\.dispatched ')
resumed() { [ "$(node_log_count ' run\.dispatched ')" -gt "$dispatched_before" ]; }
wait_for 60 resumed || fail "no run dispatched within 60 s of PostgreSQL's return"
took=$(seconds_since "$back_at")
bound=$((2 * leader_ttl))
within "$took" "$bound" ||
  fail "dispatch resumed ${took}s after PostgreSQL's return, over 2 x the leader lease (${bound}s)"
wait_for 60 both_ready ||
  fail "the nodes are not ready again within 60 s: $(node_get 1 /readyz) $(node_get 2 /readyz)"
exactly_once po "$jobs"
stop_nodes 1 2
printf 'e2e postgres outage: ok (%d of %d effects before it; dispatch resumed %.1f s after PostgreSQL came back, bound %d s)\n' \
  "$before" "$jobs" "$took" "$bound"
