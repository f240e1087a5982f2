#!/usr/bin/env bash
# `kairos server --demo` end to end: the real scheduler node, local workers and
# the process runner on a fresh LMDB store. The demo job (here every 2 s via
# the documented --demo-every) must complete successfully at least twice,
# each run passing its idempotency key and fencing token to the child process,
# with strictly increasing tokens. After SIGTERM (exit 0) and a restart on the
# same directory the job is found, not created again, and its runs continue
# with tokens above every earlier one. Bad flag values exit 2 naming the flag.
set -uo pipefail
KAIROS="$1"
work=$(mktemp -d)
pid=0
trap 'kill -9 $pid 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; [ -f "$work/out" ] && tail -n 40 "$work/out" | sed 's/^/  | /'; exit 1; }

# Lines of the current log, in order: "token" of each successful completion
# of the demo job.
succeeded_tokens() {
  grep ' run\.completed job=demo-hello ' "$work/out" | grep ' outcome=succeeded ' |
    sed -n 's/.* token=\([0-9]*\) .*/\1/p'
}

# Starts the server and waits (up to 60 s) for its ready line.
start() {
  : >"$work/out"
  "$KAIROS" server --data-dir "$work/data" --demo --demo-every 2 --workers 2 >"$work/out" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    grep -q "kairos server: ready (store: lmdb at $work/data, schema v1)" "$work/out" && return 0
    kill -0 "$pid" 2>/dev/null || fail "server exited before it was ready"
    sleep 0.1
  done
  fail "server not ready within 60 s"
}

# Waits (up to 60 s) until at least $1 successful demo runs are in the log.
wait_for_runs() {
  for _ in $(seq 600); do
    [ "$(succeeded_tokens | wc -l)" -ge "$1" ] && return 0
    kill -0 "$pid" 2>/dev/null || fail "server exited while waiting for runs"
    sleep 0.1
  done
  fail "fewer than $1 successful demo runs within 60 s"
}

# Checks that the tokens in the log strictly increase and are all above $1;
# prints the last one.
check_tokens() {
  local last="$1" t
  for t in $(succeeded_tokens); do
    [ "$t" -gt "$last" ] || fail "fencing token $t does not exceed the previous $last"
    last=$t
  done
  echo "$last"
}

stop() {
  kill -TERM "$pid"; wait "$pid"; local rc=$?
  [ "$rc" -eq 0 ] || fail "SIGTERM exit code $rc, expected 0"
  grep -q "kairos server: stopped" "$work/out" || fail "no 'stopped' line"
}

# --- first run: the job is created and runs -------------------------------
start
wait_for_runs 2
grep -q 'server\.demo_job job=demo-hello result=created incarnation=1' "$work/out" ||
  fail "demo job not reported as created (incarnation 1)"
[ "$(grep -c ' job\.created job=demo-hello ' "$work/out")" -eq 1 ] || fail "job.created not logged exactly once"
last=$(check_tokens 0) || exit 1
# The child process saw its identity: the output line carries key and token.
grep -q 'process\.exited job=demo-hello .* status=succeeded .*output="hello from kairos: key=demo-hello/1/[0-9]* token=[0-9]*"' \
  "$work/out" || fail "the demo job's output does not show its idempotency key and token"
for t in $(succeeded_tokens); do
  grep -q "output=\"hello from kairos: key=demo-hello/1/[0-9]* token=$t\"" "$work/out" ||
    fail "run with token $t did not see KAIROS_FENCING_TOKEN=$t"
done
stop
first_log=$(cat "$work/out")

# --- restart: the job is still there, not duplicated, and runs continue ---
start
wait_for_runs 2
grep -q 'server\.demo_job job=demo-hello result=exists incarnation=1' "$work/out" ||
  fail "after restart the demo job was not found as the same incarnation"
grep -q ' job\.created ' "$work/out" && fail "the demo job was created again after restart"
check_tokens "$last" >/dev/null || exit 1
# No occurrence ran twice across both runs of the server.
keys=$( (echo "$first_log"; cat "$work/out") | grep ' process\.exited job=demo-hello .* status=succeeded ' |
  sed -n 's/.*key=\(demo-hello\/[0-9]*\/[0-9]*\).*/\1/p')
[ -n "$keys" ] || fail "no idempotency keys found"
dupes=$(echo "$keys" | sort | uniq -d)
[ -z "$dupes" ] || fail "occurrences ran successfully more than once: $dupes"
stop

# --- flag validation ------------------------------------------------------
check_usage() {  # expected-flag args...
  local flag="$1"; shift
  "$KAIROS" server --data-dir "$work/data" "$@" >"$work/out" 2>&1; local rc=$?
  [ "$rc" -eq 2 ] || fail "$*: exit $rc, expected 2"
  grep -q -- "$flag" "$work/out" || fail "$*: message does not name $flag"
}
check_usage --shards --shards 0
check_usage --shards --shards many
check_usage --workers --workers 1000
check_usage --node-id --node-id ""
check_usage --demo-every --demo --demo-every 7
check_usage --demo-every --demo-every 2
# The shard count is fixed when the store is created.
check_usage --shards --shards 16
echo "e2e server demo: ok"
