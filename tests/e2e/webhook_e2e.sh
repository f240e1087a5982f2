#!/usr/bin/env bash
# Webhook jobs end to end through the server: `kairos server` runs HTTP jobs
# added with `kairos job add --http-url` against the fencing sink's scripted
# paths on loopback (tests/e2e/fencing_sink; the test decides each status).
# Checks: every request carries the method, the payload's header and body,
# the User-Agent and the documented headers (Idempotency-Key the same for
# every attempt of the run, Kairos-Fencing-Token rising, Kairos-Attempt
# 1, 2, 3, Kairos-Job-Id, Kairos-Run-Id, Kairos-Scheduled-At) and a payload
# header by a reserved name is dropped; a 5xx is retried with backoff (the
# attempts at least the backoff less its jitter apart) and the run succeeds
# when the target turns 2xx; a target that keeps answering 5xx gets exactly
# max_attempts attempts and the run fails; a 4xx is not retried (one attempt,
# the run fails permanently); `kairos job runs --json` shows each run with
# its attempts and their status codes.
set -uo pipefail
KAIROS="$1"
SINK="$2"
command -v jq >/dev/null || { echo "FAIL: jq is needed (scripts/setup.sh installs it)"; exit 1; }
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do
    [ -f "$f" ] || continue
    echo "== $(basename "$f")"
    tail -n 25 "$f" | cut -c1-300 | sed 's/^/  | /'
  done
  [ -f "$work/requests.jsonl" ] && { echo "== requests"; cut -c1-400 "$work/requests.jsonl"; }
  exit 1
}
# wait_for SECONDS COMMAND...: polls every 0.1 s.
wait_for() {
  local n=$(($1 * 10))
  shift
  for _ in $(seq "$n"); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}

# The target: /flaky fails twice, then succeeds; /down always fails with a
# 5xx; /gone answers 404 (permanent).
"$SINK" --state "$work/state.json" --port-file "$work/sink.port" \
  --requests "$work/requests.jsonl" --answer /flaky=503,502,200 --answer /down=500 \
  --answer /gone=404 >"$work/sink.log" 2>&1 &
sink=$!
pids+=("$sink")
wait_for 30 test -s "$work/sink.port" || fail "the sink did not write its port"
sp=$(cat "$work/sink.port")
"$SINK" --state "$work/s2" --answer /x=600 >"$work/bad-sink.out" 2>&1
[ $? -eq 2 ] && grep -q -- "--answer: status '600'" "$work/bad-sink.out" ||
  fail "the sink does not refuse a bad --answer: $(cat "$work/bad-sink.out")"

"$KAIROS" server --data-dir "$work/data" --workers 1 --http 127.0.0.1:0 --listen none \
  >"$work/server.log" 2>&1 &
server=$!
pids+=("$server")
port=
for _ in $(seq 600); do
  port=$(sed -n 's/^kairos server: http api on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/server.log")
  [ -n "$port" ] && grep -q "ready" "$work/server.log" && break
  kill -0 "$server" 2>/dev/null || fail "server exited before it was ready"
  sleep 0.1
done
[ -n "$port" ] || fail "server not ready within 60 s"
export KAIROS_SERVER="http://127.0.0.1:$port"
unset KAIROS_TOKEN

# k ARGS...: runs kairos, stdout in $work/stdout, stderr in $work/err, exit code in $rc.
k() { "$KAIROS" "$@" >"$work/stdout" 2>"$work/err"; rc=$?; }
# add ID ARGS...: adds a one-shot webhook job (retrying while the server
# takes its shard leases).
add() {
  local id="$1"
  shift
  for _ in $(seq 100); do
    k job add --id "$id" --in 1s --timeout 20s "$@"
    [ "$rc" -eq 5 ] || break
    sleep 0.2
  done
  [ "$rc" -eq 0 ] || fail "add $id: exit $rc: $(cat "$work/err")"
}
url="http://127.0.0.1:$sp"
add wh-flaky --http-url "$url/flaky?from=kairos" --http-method PUT --header X-E2e:flaky \
  --header 'Kairos-Attempt:99' --body 'payload-flaky' --retries 2 --backoff 2s:2s
add wh-down --http-url "$url/down" --body 'payload-down' --retries 1 --backoff 1s:1s
add wh-gone --http-url "$url/gone" --body 'payload-gone' --retries 3 --backoff 1s:1s

# requests PATH: the recorded requests to PATH, one JSON object a line.
requests() { jq -c --arg p "$1" 'select((.target | split("?")[0]) == $p)' "$work/requests.jsonl"; }
count() { requests "$1" | wc -l; }
at_least() { [ "$(count "$1")" -ge "$2" ]; }
# run_done ID: the job's run has an outcome; its JSON in $work/run.json.
run_done() {
  k job runs "$1" --json
  [ "$rc" -eq 0 ] && jq -e '.runs | length == 1 and .[0].outcome != null' "$work/stdout" \
    >/dev/null && jq '.runs[0]' "$work/stdout" >"$work/run.json"
}

wait_for 90 at_least /flaky 3 || fail "/flaky: $(count /flaky) requests within 90 s, expected 3"
wait_for 60 run_done wh-flaky || fail "wh-flaky: no finished run: $(cat "$work/stdout")"
cp "$work/run.json" "$work/flaky-run.json"
wait_for 60 at_least /down 2 || fail "/down: $(count /down) requests, expected 2"
wait_for 60 run_done wh-down || fail "wh-down: no finished run: $(cat "$work/stdout")"
cp "$work/run.json" "$work/down-run.json"
wait_for 60 at_least /gone 1 || fail "/gone: no request"
wait_for 60 run_done wh-gone || fail "wh-gone: no finished run: $(cat "$work/stdout")"
cp "$work/run.json" "$work/gone-run.json"
# Longer than any backoff: a retry that should not happen would have come.
sleep 3

# The documented headers, on every attempt of the flaky run.
requests /flaky >"$work/flaky.jsonl"
[ "$(wc -l <"$work/flaky.jsonl")" -eq 3 ] || fail "/flaky: $(wc -l <"$work/flaky.jsonl") requests, expected 3"
jq -e -s --arg sp "$sp" 'all(.[];
    .method == "PUT" and .target == "/flaky?from=kairos" and .body == "payload-flaky"
    and .headers["X-E2e"] == "flaky" and .headers["Kairos-Job-Id"] == "wh-flaky"
    and (.headers["Idempotency-Key"] | startswith("wh-flaky/"))
    and (.headers["Kairos-Run-Id"] | length > 0)
    and (.headers["Kairos-Scheduled-At"] | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$"))
    and (.headers["Kairos-Fencing-Token"] | test("^[0-9]+$"))
    and ((.headers["Kairos-Late-By"] // "0.000000") | test("^[0-9]+[.][0-9]{6}$"))
    and ((.headers["Kairos-Occurrences"] // "1") | test("^[1-9][0-9]*$"))
    and (.headers["User-Agent"] | startswith("kairos"))
    and .headers["Host"] == "127.0.0.1:\($sp)")' "$work/flaky.jsonl" >/dev/null ||
  fail "/flaky: a request lacks the method, payload or documented headers"
jq -e -s '[.[].headers["Kairos-Attempt"]] == ["1", "2", "3"]' "$work/flaky.jsonl" >/dev/null ||
  fail "/flaky: Kairos-Attempt is not 1, 2, 3 (a payload header by a reserved name must be dropped)"
jq -e -s '[.[].headers["Idempotency-Key"]] | unique | length == 1' "$work/flaky.jsonl" >/dev/null ||
  fail "/flaky: the Idempotency-Key differs between attempts of one run"
jq -e -s '[.[].headers["Kairos-Run-Id"]] | unique | length == 1' "$work/flaky.jsonl" >/dev/null ||
  fail "/flaky: the Kairos-Run-Id differs between attempts of one run"
jq -e -s '[.[].headers["Kairos-Fencing-Token"] | tonumber] | .[0] < .[1] and .[1] < .[2]' \
  "$work/flaky.jsonl" >/dev/null || fail "/flaky: the fencing tokens do not rise"
jq -e -s '[.[].status] == [503, 502, 200]' "$work/flaky.jsonl" >/dev/null ||
  fail "/flaky: the sink did not answer its script"
# Backoff 2s with the default 20% jitter, which only shortens a delay: the
# attempts are at least 1.6 s apart.
jq -e -s '[.[].at_ms] | (.[1] - .[0]) >= 1600 and (.[2] - .[1]) >= 1600' "$work/flaky.jsonl" \
  >/dev/null || fail "/flaky: attempts closer than the backoff: $(jq -s -c '[.[].at_ms]' "$work/flaky.jsonl")"
jq -e '.state == "succeeded" and .outcome == "succeeded" and .exit_code == 200 and .attempt == 3
    and ([.attempts[].exit_code] == [503, 502, 200])
    and ([.attempts[].end] == ["failed", "failed", "succeeded"])' "$work/flaky-run.json" >/dev/null ||
  fail "wh-flaky: run record: $(jq -c . "$work/flaky-run.json")"
key=$(jq -r '.headers["Idempotency-Key"]' <(head -n 1 "$work/flaky.jsonl"))
jq -e --arg key "$key" '.id == $key' "$work/flaky-run.json" >/dev/null ||
  fail "wh-flaky: the run's id is not the Idempotency-Key $key"
jq -e -s --slurpfile run "$work/flaky-run.json" \
  '[.[].headers["Kairos-Fencing-Token"] | tonumber] == [$run[0].attempts[].token]' \
  "$work/flaky.jsonl" >/dev/null || fail "wh-flaky: the tokens sent are not the attempts' tokens"

# Always 5xx: exactly max_attempts (2) attempts, a second after each other at least 0.8 s.
[ "$(count /down)" -eq 2 ] || fail "/down: $(count /down) requests, expected max_attempts = 2"
requests /down | jq -e -s '[.[].at_ms] | (.[1] - .[0]) >= 800' >/dev/null ||
  fail "/down: attempts closer than the backoff"
jq -e '.state == "failed" and .outcome == "failed" and .exit_code == 500
    and ([.attempts[].exit_code] == [500, 500])' "$work/down-run.json" >/dev/null ||
  fail "wh-down: run record: $(jq -c . "$work/down-run.json")"

# 4xx: one attempt, the run failed permanently, no retry.
[ "$(count /gone)" -eq 1 ] || fail "/gone: $(count /gone) requests, a 4xx must not be retried"
jq -e '.state == "failed" and .outcome == "failed_permanent" and .exit_code == 404
    and (.attempts | length == 1) and .attempts[0].end == "failed_permanent"' \
  "$work/gone-run.json" >/dev/null || fail "wh-gone: run record: $(jq -c . "$work/gone-run.json")"
jq -e '.detail | startswith("HTTP 404")' "$work/gone-run.json" >/dev/null ||
  fail "wh-gone: the run's detail does not name the status"

# The table view names the outcomes too.
k job runs wh-gone; [ "$rc" -eq 0 ] && grep -q 'failed_permanent' "$work/stdout" ||
  fail "job runs wh-gone: $(cat "$work/stdout")"

kill -0 "$server" 2>/dev/null || fail "server died"
kill -TERM "$server"
wait "$server"
rc=$?
[ "$rc" -eq 0 ] || fail "server SIGTERM exit $rc, expected 0"
kill -TERM "$sink"
wait "$sink"
rc=$?
[ "$rc" -eq 0 ] || fail "sink SIGTERM exit $rc, expected 0"
echo "PASS: webhook e2e: headers, 5xx retried with backoff, 4xx not retried, runs visible"
