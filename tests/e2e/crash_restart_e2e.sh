#!/usr/bin/env bash
# Crash and restart, end to end: 40 one-off jobs (`kairos job add --in`) due
# over the next few seconds, each applying one effect at the fencing sink,
# plus 5 with misfire skip and a 1 s misfire threshold (`kairos apply`) due
# while the server will be down. The server is killed (kill -9) while it is
# dispatching and running them, and restarted on the same data directory
# after the skip jobs' due time is past their threshold. Then: every one of
# the 40 jobs has a succeeded run, the sink holds exactly one effect for each
# (none twice, whatever attempt was cut off by the crash), and each skip job
# is recorded in its ledger as skipped_misfire and never ran.
KAIROS="$1"
SINK="$2"
source "$(dirname "$0")/e2e_lib.sh"

jobs=40
start_sink
start_server s1 --data-dir "$work/data" --workers 2 --lease-ttl 3s
effect=$(sink_effect)
# Jobs due 2..6 s from now, each running about half a second.
for i in $(seq "$jobs"); do
  add_job --id "cr-$i" --in "$((2 + i % 5))s" --backoff 1s:1s --timeout 1m -- \
    /bin/sh -c "sleep 0.5; $effect"
done
# Skip jobs, due 8 s from now: past their 1 s threshold when the server is back.
skip_at=$(date -u -d '+8 seconds' +%Y-%m-%dT%H:%M:%SZ)
{
  echo '{"jobs": ['
  for i in 1 2 3 4 5; do
    [ "$i" -gt 1 ] && echo ','
    printf '{"id": "skip-%s", "schedule": {"at": "%s"}, "command": {"argv": ["/bin/sh", "-c", %s]},
      "policy": {"misfire": "skip", "misfire_threshold": "1s"}}' "$i" "$skip_at" "$(jq -Rn --arg e "$effect" '$e')"
  done
  echo ']}'
} >"$work/skip.json"
k apply -f "$work/skip.json"
[ "$rc" -eq 0 ] || fail "apply the skip jobs: exit $rc: $(cat "$work/stdout" "$work/err")"
skip_epoch=$(date -d "$skip_at" +%s)

# Mid-dispatch: some jobs done, others not yet.
some_done() { [ "$(done_count)" -ge 3 ]; }
wait_for 60 some_done || fail "no effects within 60 s"
kill -9 "$server"
wait "$server" 2>/dev/null
before=$(done_count)
[ "$before" -lt "$jobs" ] || fail "every job ran before the crash ($before); the test proves nothing"
[ "$(date +%s)" -lt "$skip_epoch" ] || fail "the crash came after the skip jobs were due"

# Down until the skip jobs are more than their threshold late.
past_skip() { [ "$(date +%s)" -ge $((skip_epoch + 3)) ]; }
wait_for 60 past_skip || fail "clock"
start_server s2 --data-dir "$work/data" --workers 2 --lease-ttl 3s

exactly_once cr "$jobs"
for i in 1 2 3 4 5; do
  k job ledger "skip-$i" --json
  [ "$rc" -eq 0 ] || fail "ledger skip-$i: exit $rc"
  jq -e '[.occurrences[] | select(.outcome == "skipped_misfire")] | length == 1' "$work/stdout" >/dev/null ||
    fail "skip-$i is not recorded skipped_misfire: $(cat "$work/stdout")"
  runs_json "skip-$i" | jq -e '(.runs | length) == 0' >/dev/null || fail "skip-$i ran: $(cat "$work/stdout")"
done
retried=$(grep -c " server\.run_handed_back .*result=released" "$work/s2.log")

kill -TERM "$server"
exited_within 60 "$server" || fail "the server did not exit"
[ "$rc" -eq 0 ] || fail "server SIGTERM: exit $rc"
echo "e2e crash restart: ok ($before of $jobs effects before the crash, $retried runs handed back at restart)"
