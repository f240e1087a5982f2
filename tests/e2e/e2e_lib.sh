# Shared helpers of the fault e2e tests (drain, stall, crash_restart): sourced,
# not run. Every server and sink here binds free ports (--http, --listen and
# the sink on port 0), so these tests need no port lock. Real time with
# generous bounds; no sleep decides anything: every wait polls a condition
# against a deadline.
#
# The caller sets KAIROS (the binary) and SINK (fencing_sink, or empty), then
# sources this file; it makes $work (removed on exit, with every process
# started through these helpers killed).
set -uo pipefail
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done; [ -n "${KAIROS_E2E_KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT
command -v jq >/dev/null || { echo "FAIL: jq is required (scripts/setup.sh installs it)"; exit 1; }

fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do
    [ -f "$f" ] || continue
    echo "== $(basename "$f")"
    tail -n 30 "$f" | cut -c1-300 | sed 's/^/  | /'
  done
  exit 1
}

# wait_for SECONDS COMMAND...: polls every 0.1 s until COMMAND succeeds.
wait_for() {
  local polls_=$(($1 * 10))
  shift
  for _ in $(seq "$polls_"); do
    "$@" && return 0
    sleep 0.1
  done
  return 1
}

gone() { ! kill -0 "$1" 2>/dev/null; }
# exited_within SECONDS PID: waits for PID (a child) to exit; its exit code in $rc.
exited_within() {
  wait_for "$1" gone "$2" || return 1
  wait "$2"
  rc=$?
  return 0
}

# start_server NAME ARGS...: a server logging to $work/NAME.log with the API
# and the worker listener on free ports; waits for its ready line. Sets
# $server (pid), $http_port, $listen_port and exports KAIROS_SERVER.
start_server() {
  local name="$1"
  shift
  # A restart on the same name keeps the earlier log as NAME.prev.log; the
  # log is emptied here, not by the background job's redirection, which may
  # happen after the first check below and let it read the old ready line.
  [ -e "$work/$name.log" ] && mv "$work/$name.log" "$work/$name.prev.log"
  : >"$work/$name.log"
  "$KAIROS" server --http 127.0.0.1:0 --listen 127.0.0.1:0 "$@" >>"$work/$name.log" 2>&1 &
  server=$!
  pids+=("$server")
  wait_for 60 grep -q "kairos server: ready" "$work/$name.log" || fail "$name: not ready within 60 s"
  http_port=$(sed -n 's/^kairos server: http api on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/$name.log" | head -n 1)
  listen_port=$(sed -n 's/.* net\.listening address=127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$work/$name.log" | head -n 1)
  [ -n "$http_port" ] || fail "$name: no http api line"
  export KAIROS_SERVER="http://127.0.0.1:$http_port"
  unset KAIROS_TOKEN
}

# start_sink: the fencing sink on a free port; sets $sink_port, $sink_state.
start_sink() {
  sink_state="$work/sink.json"
  "$SINK" --state "$sink_state" --port-file "$work/sink.port" >"$work/sink.log" 2>&1 &
  pids+=("$!")
  disown "$!"  # never waited for; killed on exit without a job notice
  wait_for 30 test -s "$work/sink.port" || fail "fencing sink did not start"
  sink_port=$(cat "$work/sink.port")
}

# The sink's ledger (docs/FENCING.md pattern), as JSON on stdout.
sink_json() { curl -s --max-time 5 "http://127.0.0.1:$sink_port/state"; }

# A shell command that applies one effect at the sink under this attempt's
# idempotency key and fencing token (fails on a refusal such as a stale token).
sink_effect() {
  printf 'curl -s -f -o /dev/null --max-time 10 -X POST -H "Idempotency-Key: $KAIROS_IDEMPOTENCY_KEY" -H "Kairos-Fencing-Token: $KAIROS_FENCING_TOKEN" --data "$KAIROS_IDEMPOTENCY_KEY" http://127.0.0.1:%s/effect' "$sink_port"
}

# k ARGS...: runs the kairos CLI; stdout in $work/stdout, stderr in $work/err, exit code in $rc.
k() {
  "$KAIROS" "$@" >"$work/stdout" 2>"$work/err"
  rc=$?
}

# add_job ARGS...: `kairos job add`, retried while the server is still taking
# its shard leases (exit 5).
add_job() {
  for _ in $(seq 100); do
    k job add "$@"
    [ "$rc" -eq 5 ] || break
    sleep 0.2
  done
  [ "$rc" -eq 0 ] || fail "job add $*: exit $rc: $(cat "$work/stdout" "$work/err")"
}

# runs_json JOB: the job's runs (`kairos job runs --json`) on stdout.
runs_json() {
  k job runs "$1" --json --limit 100
  [ "$rc" -eq 0 ] && cat "$work/stdout"
}

# has_succeeded JOB: the job has a run whose outcome is succeeded.
has_succeeded() {
  runs_json "$1" | jq -e '[.runs[]? | select(.outcome == "succeeded")] | length >= 1' >/dev/null 2>&1
}

# done_count: effects the sink holds; at_least_done N: at least N of them.
done_count() { sink_json | jq '.effects | length' 2>/dev/null || echo 0; }
at_least_done() { [ "$(done_count)" -ge "$1" ]; }

# exactly_once PREFIX N: every job PREFIX-1..N succeeds (waited for), has
# exactly one succeeded run, and the sink holds exactly one effect for each.
exactly_once() {
  local prefix="$1" n="$2" i
  all_ran() {
    for i in $(seq "$n"); do has_succeeded "$prefix-$i" || return 1; done
  }
  wait_for 120 all_ran || fail "not every $prefix job succeeded"
  sink_json >"$work/sink_final.json"
  jq -e --argjson n "$n" '
    ([.effects[].key] | length == (unique | length)) and
    ([.keys[]] | length) == $n and (.effects | length) == $n' "$work/sink_final.json" >/dev/null ||
    fail "the sink does not hold exactly one effect per job: $(jq -c '[.effects[].key] | group_by(.) | map(select(length > 1))' "$work/sink_final.json")"
  for i in $(seq "$n"); do
    runs_json "$prefix-$i" >"$work/runs.json"
    jq -e '[.runs[] | select(.outcome == "succeeded")] | length == 1' "$work/runs.json" >/dev/null ||
      fail "$prefix-$i: not exactly one succeeded run: $(cat "$work/runs.json")"
  done
}
