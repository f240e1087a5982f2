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
# the sink holds exactly one effect per job. Needs PostgreSQL installed
# (scripts/setup.sh); skipped (exit 77) when KAIROS_TEST_PG is unset, as the
# other PostgreSQL tests are. Real time with generous bounds; every wait
# polls a condition.
KAIROS="$1"
SINK="$2"
if [ -z "${KAIROS_TEST_PG:-}" ]; then
  echo "SKIP: KAIROS_TEST_PG is not set (scripts/pg-server.sh start DIR prints one)"
  exit 77
fi
source "$(dirname "$0")/e2e_lib.sh"
pg_server="$(dirname "$0")/../../scripts/pg-server.sh"
# The server's directory must be the postgres user's; $work is private.
pgdir=$(mktemp -d)
chmod 755 "$pgdir"
trap 'for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
  "$pg_server" stop "$pgdir" >/dev/null 2>&1; rm -rf "$pgdir"
  [ -n "${KAIROS_E2E_KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT
store=$("$pg_server" start "$pgdir") || fail "could not start a private PostgreSQL server"
k migrate --store "$store"
[ "$rc" -eq 0 ] || fail "migrate: exit $rc: $(cat "$work/stdout" "$work/err")"

jobs=40
leader_ttl=10 # seconds: the node's leader lease (core/kernel/lease_config.h)
start_sink
effect=$(sink_effect)
declare -A node_pid node_http
for n in 1 2; do
  start_server "n$n" --store "$store" --data-dir "$work/d$n" --node-id "n$n" --workers 1 \
    --lease-ttl 3s
  node_pid[$n]=$server
  node_http[$n]=$http_port
done
api() { curl -s --max-time 5 "http://127.0.0.1:${node_http[$1]}$2"; }
ready() { curl -s -f -o /dev/null --max-time 5 "http://127.0.0.1:${node_http[$1]}/readyz"; }
not_ready() { ! ready "$1" && api "$1" /readyz | jq -e '.ready == false' >/dev/null 2>&1; }
both_ready() { ready 1 && ready 2; }
wait_for 60 both_ready || fail "the nodes are not ready within 60 s"
for i in $(seq "$jobs"); do
  add_job --id "po-$i" --in "$((3 + i % 22))s" --backoff 1s:1s --timeout 1m \
    --shell "sleep 0.2; $effect"
done

done_count() { sink_json | jq '.effects | length' 2>/dev/null || echo 0; }
some_done() { [ "$(done_count)" -ge 5 ]; }
wait_for 60 some_done || fail "no effects within 60 s"
"$pg_server" stop "$pgdir" || fail "could not stop PostgreSQL"
before=$(done_count)
[ "$before" -lt "$jobs" ] || fail "every job ran before the outage ($before); the test proves nothing"
both_not_ready() { not_ready 1 && not_ready 2; }
wait_for 30 both_not_ready || fail "a node still reports ready with PostgreSQL down: $(api 1 /readyz) $(api 2 /readyz)"
unavailable() { # the node's count of store transactions that found the store unavailable
  api "$1" /metrics | awk '/^kairos_txn_total\{.*outcome="unavailable"/ { n += $2 } END { print n + 0 }'
}
counted() { [ "$(unavailable 1)" -gt 0 ] && [ "$(unavailable 2)" -gt 0 ]; }
wait_for 30 counted || fail "the store's unavailability is not in /metrics: $(unavailable 1) $(unavailable 2)"
sleep 3 # an outage of a few seconds: jobs fall due meanwhile
for n in 1 2; do kill -0 "${node_pid[$n]}" 2>/dev/null || fail "n$n exited while PostgreSQL was down"; done

"$pg_server" start "$pgdir" >/dev/null || fail "could not start PostgreSQL again"
back_at=$(date +%s.%N)
during=$(done_count)
resumed() { [ "$(done_count)" -gt "$during" ]; }
wait_for 60 resumed || fail "no job ran within 60 s of PostgreSQL's return"
took=$(awk -v a="$back_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
bound=$((2 * leader_ttl))
awk -v t="$took" -v b="$bound" 'BEGIN { exit !(t <= b) }' ||
  fail "dispatch resumed ${took}s after PostgreSQL's return, over 2 x the leader lease (${bound}s)"
wait_for 60 both_ready || fail "the nodes are not ready again within 60 s: $(api 1 /readyz) $(api 2 /readyz)"

all_ran() {
  for i in $(seq "$jobs"); do has_succeeded "po-$i" || return 1; done
}
wait_for 120 all_ran || fail "not every job succeeded after the outage ($before effects before it)"
sink_json >"$work/sink_final.json"
jq -e --argjson n "$jobs" '
  ([.effects[].key] | length == (unique | length)) and
  ([.keys[]] | length) == $n and (.effects | length) == $n' "$work/sink_final.json" >/dev/null ||
  fail "the sink does not hold exactly one effect per job: $(jq -c '[.effects[].key] | group_by(.) | map(select(length > 1))' "$work/sink_final.json")"
for i in $(seq "$jobs"); do
  runs_json "po-$i" >"$work/runs.json"
  jq -e '[.runs[] | select(.outcome == "succeeded")] | length == 1' "$work/runs.json" >/dev/null ||
    fail "po-$i: not exactly one succeeded run: $(cat "$work/runs.json")"
done
for n in 1 2; do
  kill -TERM "${node_pid[$n]}"
  exited_within 60 "${node_pid[$n]}" || fail "n$n did not exit after SIGTERM"
  [ "$rc" -eq 0 ] || fail "n$n: exit $rc after SIGTERM"
done
printf 'e2e postgres outage: ok (%d of %d effects before it, %d during it; dispatch resumed %.1f s after PostgreSQL came back, bound %d s)\n' \
  "$before" "$jobs" "$((during - before))" "$took" "$bound"
