#!/usr/bin/env bash
# A stalled worker, end to end (docs/FENCING.md): a server with no local
# workers and a 3 s lease, and a `kairos worker` w1 running a job that applies
# one effect at the fencing sink and then sleeps. w1 is stopped (SIGSTOP)
# past its lease while its job sleeps on; a second worker w2 takes the run
# over with a higher fencing token, and its attempt's effect is a duplicate
# at the sink (answered with the first result, nothing applied twice). Then
# w1 resumes (SIGCONT) with the old token: the server rejects its late
# renewal as stale (write.rejected_stale_token, counted in a kairos_*stale*
# metric), w1 stops its attempt at its lease deadline and drops its report,
# so nothing of the stale attempt is recorded. The sink ends with exactly one
# effect for the occurrence, and the run is recorded succeeded under w2's
# token. Finally SIGTERM drains both workers (exit 0).
KAIROS="$1"
SINK="$2"
source "$(dirname "$0")/e2e_lib.sh"

start_sink
start_server server --data-dir "$work/data" --workers 0 --lease-ttl 3s
[ -n "$listen_port" ] || fail "no net.listening line with the port"

start_worker() {  # NAME
  "$KAIROS" worker --connect "127.0.0.1:$listen_port" --state-dir "$work/$1" --id "$1" \
    --lease-ttl 3s >"$work/$1.log" 2>&1 &
  pids+=("$!")
  last_worker=$!
  wait_for 60 grep -q "net.connected" "$work/$1.log" || fail "$1 did not connect"
}

# Each attempt writes "TOKEN PID", applies the effect, then sleeps.
script='echo "$KAIROS_FENCING_TOKEN $$" >>'"$work"'/attempts; '"$(sink_effect)"'; sleep 6'
effects() { sink_json | jq '.effects | length' 2>/dev/null || echo 0; }
one_effect() { [ "$(effects)" -ge 1 ]; }
start_worker w1
w1=$last_worker
add_job --id stall --in 1s --backoff 1s:1s --timeout 1m -- /bin/sh -c "$script"
wait_for 60 one_effect || fail "the job's effect did not reach the sink"
# The stall: early in the lease, so w1's next heartbeat is due before its
# lease deadline and goes out first when it wakes.
kill -STOP "$w1"
read -r t1 job1 <"$work/attempts"
grep -q " process\.started job=stall .*token=$t1 " "$work/w1.log" || fail "the first attempt is not w1's"

start_worker w2
w2=$last_worker
second_attempt() { [ "$(wc -l <"$work/attempts")" -ge 2 ]; }
wait_for 60 second_attempt || fail "no second attempt after w1's lease lapsed"
read -r t2 _ < <(sed -n 2p "$work/attempts")
[ -n "$t2" ] && [ "$t2" -gt "$t1" ] || fail "the second token $t2 is not above the first $t1"
grep -q " process\.started job=stall .*token=$t2 " "$work/w2.log" || fail "the takeover is not w2's"
duplicate_at_sink() { sink_json | jq -e '[.keys[] | select(.duplicates >= 1)] | length == 1' >/dev/null; }
wait_for 30 duplicate_at_sink || fail "w2's effect is not answered as a duplicate: $(sink_json)"
kill -0 "$job1" 2>/dev/null || fail "w1's attempt ended while w1 was stopped"

# w1 wakes with the old token.
kill -CONT "$w1"
wait_for 30 grep -q " write\.rejected_stale_token .*job=stall .*stale_token=$t1" "$work/server.log" ||
  fail "the server did not reject w1's late renewal as stale"
curl -s --max-time 5 "$KAIROS_SERVER/metrics" >"$work/metrics.txt"
grep -q '^kairos_[a-z_]*stale[a-z_]*\({[^}]*}\)\? [1-9]' "$work/metrics.txt" ||
  fail "no kairos_*stale* metric counts the rejection: $(grep stale "$work/metrics.txt")"
wait_for 30 grep -q " worker\.report_dropped job=stall .*token=$t1 " "$work/w1.log" ||
  fail "w1 did not drop the report of its stale attempt"
wait_for 30 gone "$job1" || fail "w1 did not stop its stale attempt"
wait_for 60 grep -q " process\.exited job=stall .*token=$t2 .*status=succeeded " "$work/w2.log" ||
  fail "w2's attempt did not succeed"

# Exactly one effect for the occurrence, under w2's token; the run succeeded.
sink_json >"$work/sink_final.json"
jq -e --argjson t1 "$t1" --argjson t2 "$t2" '
  (.effects | length) == 1 and .effects[0].token == $t1 and
  ([.keys[]] | length == 1 and .[0].highest_token == $t2)' "$work/sink_final.json" >/dev/null ||
  fail "the sink does not hold exactly one effect: $(cat "$work/sink_final.json")"
runs_json stall >"$work/runs.json"
jq -e --argjson t "$t2" '(.runs | length) == 1 and .runs[0].outcome == "succeeded" and .runs[0].token == $t' \
  "$work/runs.json" >/dev/null || fail "the run history: $(cat "$work/runs.json")"

# Both workers stop cleanly on SIGTERM (a drain with nothing running).
for w in "$w1" "$w2"; do
  kill -TERM "$w"
  exited_within 30 "$w" || fail "worker $w did not exit within 30 s of SIGTERM"
  [ "$rc" -eq 0 ] || fail "worker SIGTERM: exit $rc"
done
grep -q " drain\.done .*process=worker" "$work/w2.log" || fail "w2 logged no drain.done"
kill -TERM "$server"
exited_within 60 "$server" || fail "the server did not exit"
[ "$rc" -eq 0 ] || fail "server SIGTERM: exit $rc"
echo "e2e stall: ok (tokens $t1 -> $t2)"
