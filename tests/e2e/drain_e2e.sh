#!/usr/bin/env bash
# Graceful drain of `kairos server` on SIGTERM, end to end:
#   1. a job running ~3 s when SIGTERM arrives finishes: /readyz answers 503
#      "draining" meanwhile, the server logs drain.done and exits 0, and the
#      run is recorded succeeded with exit code 0;
#   2. with --drain-timeout 1s a 20 s job is terminated, the server exits 0
#      within a bound, and after a restart on the same data directory the
#      occurrence is retried with a higher fencing token and succeeds;
#   3. a second SIGTERM during a drain stops the server promptly (exit 0);
#   4. --drain-timeout is validated naming the flag (server and worker), is a
#      --config key, and --help shows it with its default;
#   5. a remote `kairos worker` drains the same way: a running job finishes
#      and is reported over the connection (exit 0); with --drain-timeout 1s
#      a long job is stopped and its run handed back to the server; a run due
#      after a drained worker left is never granted to it.
KAIROS="$1"
SINK=""
source "$(dirname "$0")/e2e_lib.sh"

readyz_draining() {
  curl -s --max-time 5 "$KAIROS_SERVER/readyz" -o "$work/readyz" -w '%{http_code}' >"$work/readyz.code"
  [ "$(cat "$work/readyz.code")" = 503 ] && jq -e '.reason == "draining" and .ready == false' "$work/readyz" >/dev/null
}
# started JOB LOG: the job's process has started (a runner log line).
started() { grep -q " process\.started job=$1 " "$work/$2.log"; }

# --- 4. flags --------------------------------------------------------------
for bad in forever -1s 25h 1.5s; do
  timeout 30 "$KAIROS" server --data-dir "$work/flags" --drain-timeout "$bad" >"$work/flag.out" 2>&1
  rc=$?
  [ "$rc" -eq 2 ] || fail "--drain-timeout $bad: exit $rc, expected 2"
  grep -q -- "--drain-timeout" "$work/flag.out" || fail "--drain-timeout $bad: the flag is not named"
  timeout 30 "$KAIROS" worker --connect 127.0.0.1:1 --state-dir "$work/x" --drain-timeout "$bad" >"$work/flag.out" 2>&1
  rc=$?
  [ "$rc" -eq 2 ] || fail "worker --drain-timeout $bad: exit $rc, expected 2"
  grep -q -- "--drain-timeout" "$work/flag.out" || fail "worker --drain-timeout $bad: the flag is not named"
done
"$KAIROS" server --help >"$work/help.out" 2>&1
grep -A4 -- "--drain-timeout DURATION" "$work/help.out" | grep -q "default: 30s" || fail "server --help: no --drain-timeout with its default"
"$KAIROS" worker --help >"$work/help.out" 2>&1
grep -q -- "--drain-timeout DURATION" "$work/help.out" || fail "worker --help: no --drain-timeout"
echo '{"drain-timeout": "2x"}' >"$work/bad.json"
timeout 30 "$KAIROS" server --data-dir "$work/flags" --config "$work/bad.json" >"$work/flag.out" 2>&1
rc=$?
[ "$rc" -eq 2 ] && grep -q "drain-timeout" "$work/flag.out" || fail "config drain-timeout 2x: exit $rc, key not named"

# --- 1. a running job finishes during the drain ----------------------------
echo '{"drain-timeout": "60s"}' >"$work/config.json"
start_server s1 --data-dir "$work/data" --workers 1 --config "$work/config.json"
add_job --id drain-ok --in 1s --timeout 1m -- /bin/sh -c 'sleep 3; echo finished'
wait_for 60 started drain-ok s1 || fail "drain-ok did not start"
t0=$(date +%s)
kill -TERM "$server"
wait_for 10 readyz_draining || fail "/readyz during the drain: $(cat "$work/readyz.code") $(cat "$work/readyz" 2>/dev/null)"
exited_within 60 "$server" || fail "the server did not exit within 60 s of SIGTERM"
[ "$rc" -eq 0 ] || fail "drain: exit $rc, expected 0"
grep -q " drain\.started .*process=server .*running=1" "$work/s1.log" || fail "no drain.started line with running=1"
grep -q " drain\.done .*process=server" "$work/s1.log" || fail "no drain.done line"
grep -q "kairos server: drained" "$work/s1.log" || fail "no 'drained' line"
grep -q " process\.exited job=drain-ok .*status=succeeded " "$work/s1.log" || fail "drain-ok did not end succeeded"
t1=$(date +%s)
[ $((t1 - t0)) -ge 1 ] || fail "the server exited before the job could finish"

# --- 2. a drain timeout terminates the job; a restart retries it -----------
# The first attempt runs 20 s (exec: the attempt's pid is the sleep's); later
# attempts succeed at once. Each attempt notes its fencing token.
slow='echo "$KAIROS_FENCING_TOKEN $$" >>'"$work"'/slow.tokens; [ "$(wc -l <'"$work"'/slow.tokens)" -gt 1 ] && exit 0; exec sleep 20'
start_server s2 --data-dir "$work/data" --workers 1 --drain-timeout 1s
runs_json drain-ok | jq -e '.runs[0].outcome == "succeeded" and .runs[0].exit_code == 0 and (.runs[0].attempts | length) == 1' >/dev/null ||
  fail "drain-ok is not recorded succeeded with exit 0 in one attempt: $(cat "$work/stdout")"
add_job --id drain-slow --in 1s --backoff 1s:1s --timeout 1m -- /bin/sh -c "$slow"
wait_for 60 started drain-slow s2 || fail "drain-slow did not start"
# "started" is logged when the process is spawned; its shell notes the token
# a moment later (slow under the sanitizers).
wait_for 30 test -s "$work/slow.tokens" || fail "drain-slow's first attempt noted no token"
first_pid=$(awk 'NR == 1 {print $2}' "$work/slow.tokens")
first_token=$(awk 'NR == 1 {print $1}' "$work/slow.tokens")
kill -TERM "$server"
exited_within 20 "$server" || fail "with --drain-timeout 1s the server did not exit within 20 s"
[ "$rc" -eq 0 ] || fail "drain timeout: exit $rc, expected 0"
grep -q " drain\.timeout .*process=server .*running=1" "$work/s2.log" || fail "no drain.timeout line with running=1"
grep -q "kairos server: drain timeout" "$work/s2.log" || fail "no 'drain timeout' line"
gone "$first_pid" || fail "the 20 s job outlived the server"
grep -q " process\.exited job=drain-slow .*status=stopped " "$work/s2.log" || fail "drain-slow was not stopped"

start_server s3 --data-dir "$work/data" --workers 1
wait_for 60 has_succeeded drain-slow || fail "drain-slow did not succeed after the restart: $(cat "$work/stdout")"
second_token=$(awk 'NR == 2 {print $1}' "$work/slow.tokens")
[ -n "$second_token" ] && [ "$second_token" -gt "$first_token" ] ||
  fail "the retry's fencing token $second_token is not above the first's $first_token"
runs_json drain-slow >"$work/slow.json"
jq -e --argjson t "$first_token" '
  (.runs | length) == 1 and .runs[0].outcome == "succeeded" and
  ([.runs[0].attempts[].token] | (min == $t) and (max > $t))' "$work/slow.json" >/dev/null ||
  fail "drain-slow's history: $(cat "$work/slow.json")"

# --- 3. a second signal stops at once ---------------------------------------
add_job --id drain-int --in 1s --timeout 1m -- /bin/sh -c 'exec sleep 30'
wait_for 60 started drain-int s3 || fail "drain-int did not start"
kill -TERM "$server"
wait_for 10 grep -q " drain\.started .*process=server" "$work/s3.log" || fail "no drain.started after SIGTERM"
kill -0 "$server" 2>/dev/null || fail "the server did not wait for drain-int (default --drain-timeout 30s)"
kill -INT "$server"
exited_within 15 "$server" || fail "a second signal did not stop the server within 15 s"
[ "$rc" -eq 0 ] || fail "second signal: exit $rc, expected 0"
grep -q " drain\.interrupted .*process=server" "$work/s3.log" || fail "no drain.interrupted line"
grep -q "kairos server: stopped" "$work/s3.log" || fail "no 'stopped' line"

# --- 5. a remote worker drains ----------------------------------------------
start_server s4 --data-dir "$work/data4" --workers 0
start_remote() {  # NAME DRAIN_TIMEOUT
  "$KAIROS" worker --connect "127.0.0.1:$listen_port" --state-dir "$work/$1" --id "$1" \
    --drain-timeout "$2" >"$work/$1.log" 2>&1 &
  worker=$!
  pids+=("$worker")
  wait_for 60 grep -q "net.connected" "$work/$1.log" || fail "$1 did not connect"
}
start_remote rw1 60s
add_job --id remote-ok --in 1s --timeout 1m -- /bin/sh -c 'sleep 3'
wait_for 60 started remote-ok rw1 || fail "remote-ok did not start on rw1"
kill -TERM "$worker"
exited_within 60 "$worker" || fail "rw1 did not exit within 60 s of SIGTERM"
[ "$rc" -eq 0 ] || fail "rw1 drain: exit $rc"
grep -q " drain\.done .*process=worker" "$work/rw1.log" || fail "rw1 logged no drain.done"
grep -q " worker\.report_accepted job=remote-ok " "$work/rw1.log" || fail "rw1's report was not accepted"
has_succeeded remote-ok || fail "remote-ok is not recorded succeeded: $(cat "$work/stdout")"

start_remote rw2 1s
add_job --id remote-slow --in 1s --timeout 1m -- /bin/sh -c 'exec sleep 30'
wait_for 60 started remote-slow rw2 || fail "remote-slow did not start on rw2"
kill -TERM "$worker"
exited_within 20 "$worker" || fail "rw2 (--drain-timeout 1s) did not exit within 20 s"
[ "$rc" -eq 0 ] || fail "rw2 drain timeout: exit $rc"
grep -q " drain\.timeout .*process=worker .*running=1" "$work/rw2.log" || fail "rw2 logged no drain.timeout"
wait_for 10 grep -q " run\.released job=remote-slow " "$work/s4.log" || fail "remote-slow was not handed back"
# rw1's long-poll was still parked at the server when it exited: the server
# forgot it with the connection, so nothing was granted to the gone rw1.
grep -q " run\.claimed job=remote-slow .*worker=rw1 " "$work/s4.log" &&
  fail "remote-slow was granted to rw1, which had drained and gone"
kill -TERM "$server"
exited_within 60 "$server" || fail "s4 did not exit"
[ "$rc" -eq 0 ] || fail "s4: exit $rc"
echo "e2e drain: ok"
