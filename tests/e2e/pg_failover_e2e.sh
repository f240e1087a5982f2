#!/usr/bin/env bash
# PostgreSQL primary failover with synchronous replication, end to end: a
# private primary and a synchronous streaming standby of this test's own
# (scripts/pg-server.sh start / standby), two `kairos server` nodes with
# local workers connected with a multi-host conninfo
# (host=PRIMARY,STANDBY target_session_attrs=read-write), 40 one-off jobs due
# over the next 25 s, each applying one effect at the fencing sink. While
# they run, the primary is killed (kill -9 of its postmaster) and the standby
# promoted. Checks: the nodes stay up and go on on the promoted standby
# (dispatch resumes; the time from the kill is printed); every acknowledged
# job survived and ran, and the sink holds exactly one effect per job; no
# leader epoch of a shard was acquired twice and no run token granted twice
# (what a rolled-back commit would do: pg_async_loss_e2e.sh shows that an
# asynchronous standby loses them). Skipped (exit 77) when KAIROS_TEST_PG is
# unset, as the other PostgreSQL tests are. Real time with generous bounds;
# every wait polls a condition.
KAIROS="$1"
SINK="$2"
source "$(dirname "$0")/e2e_lib.sh"
source "$(dirname "$0")/pg_cluster_lib.sh"
primary_and_standby sync

jobs=40
start_sink
for n in 1 2; do start_node "$n" --workers 1; done
both_ready() { node_ready 1 && node_ready 2; }
wait_for 60 both_ready || fail "the nodes are not ready within 60 s"
add_effect_jobs pf "$jobs"

wait_for 60 at_least_done 8 || fail "no effects within 60 s"
"$pg_server" kill "$primary" || fail "could not kill the primary"
killed_at=$(date +%s.%N)
dispatched_before=$(node_log_count ' run\.dispatched ')
before=$(done_count)
[ "$before" -lt "$jobs" ] || fail "every job ran before the failover ($before); the test proves nothing"
"$pg_server" promote "$standby" || fail "could not promote the standby"
for n in 1 2; do kill -0 "${node_pid[$n]}" 2>/dev/null || fail "n$n exited at the failover"; done
# Dispatch resumed: a run dispatched (committed) after the kill; every
# commit after it is the promoted standby's.
resumed() { [ "$(node_log_count ' run\.dispatched ')" -gt "$dispatched_before" ]; }
wait_for 60 resumed || fail "no run dispatched within 60 s of the failover"
took=$(seconds_since "$killed_at")
exactly_once pf "$jobs"

# A commit the failover rolled back would be granted again: the same epoch
# of a shard acquired twice, or the same token of an occurrence granted twice.
twice=$(cat "$work"/n[0-9]*.log |
  sed -n 's/.* leader\.acquired shard=\([0-9]*\) epoch=\([0-9]*\) .*/shard \1 epoch \2/p' | sort | uniq -d)
[ -z "$twice" ] || fail "a leader epoch was acquired twice: $twice"
twice=$(cat "$work"/n[0-9]*.log |
  sed -n 's/.* worker\.run_started job=\([^ ]*\) incarnation=[0-9]* nominal=\([^ ]*\) .* token=\([0-9]*\) .*/\1 \2 token \3/p' |
  sort | uniq -d)
[ -z "$twice" ] || fail "a run token was granted twice: $twice"
stop_nodes 1 2
printf 'e2e postgres failover: ok (%d of %d effects before the kill of the primary; the first run dispatched on the promoted standby %.1f s after it)\n' \
  "$before" "$jobs" "$took"
