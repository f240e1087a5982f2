#!/usr/bin/env bash
# `kairos server` end to end: starts on a fresh data directory and reports
# ready; stops cleanly on SIGTERM (exit 0); survives kill -9 and reopens the
# same store; refuses bad flags and a foreign directory with exit 2 or 1 and a
# message naming the problem.
set -uo pipefail
KAIROS="$1"
work=$(mktemp -d)
trap 'kill -9 $pid 2>/dev/null; rm -rf "$work"' EXIT
pid=0
fail() { echo "FAIL: $*"; [ -f "$work/out" ] && sed 's/^/  | /' "$work/out"; exit 1; }

# Starts the server in the background and waits (up to 60 s) for its ready line.
start() {
  : >"$work/out"
  "$KAIROS" server --data-dir "$work/data" >"$work/out" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    grep -q "ready" "$work/out" && return 0
    kill -0 "$pid" 2>/dev/null || fail "server exited before it was ready"
    sleep 0.1
  done
  fail "server not ready within 60 s"
}

start
grep -q "kairos server: ready (store: lmdb at $work/data, schema v1)" "$work/out" || fail "unexpected ready line"
kill -TERM "$pid"; wait "$pid"; rc=$?
[ "$rc" -eq 0 ] || fail "SIGTERM exit code $rc, expected 0"

start
kill -9 "$pid"; wait "$pid" 2>/dev/null
start
kill -INT "$pid"; wait "$pid"; rc=$?
[ "$rc" -eq 0 ] || fail "reopen after kill -9: SIGINT exit code $rc, expected 0"

"$KAIROS" server --data-dir "$work/data" --bogus >"$work/out" 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "unknown flag: exit $rc, expected 2"
grep -q -- "--bogus" "$work/out" || fail "unknown flag not named"

"$KAIROS" server >"$work/out" 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "missing --data-dir: exit $rc, expected 2"
grep -q -- "--data-dir" "$work/out" || fail "missing --data-dir not named"

# A node id is written into every log line: bytes outside printable ASCII are
# refused, and the error quotes them escaped, never raw.
timeout 20 "$KAIROS" server --data-dir "$work/data" --node-id $'node\xff\x1b[2J' >"$work/out" 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "non-ASCII --node-id: exit $rc, expected 2"
grep -q -- "--node-id: expected 1..200 printable ASCII" "$work/out" || fail "bad --node-id not named"
grep -qF 'node\xff\x1b[2J' "$work/out" || fail "bad --node-id not quoted escaped"
LC_ALL=C grep -q $'[\x80-\xff\x1b]' "$work/out" && fail "raw control or non-ASCII bytes echoed"

mkdir -p "$work/foreign"; echo "not a store" >"$work/foreign/notes.txt"
"$KAIROS" server --data-dir "$work/foreign" >"$work/out" 2>&1; rc=$?
[ "$rc" -ne 0 ] || fail "foreign directory accepted"
echo "e2e server lifecycle: ok"
