#!/usr/bin/env bash
# `kairos server` and its data directory against a hostile user, end to end.
# A second server on a directory in use exits 1 naming the directory and the
# holder's pid. A backup taken with mdb_copy while the server runs restores
# the store (the demo job is found, not created again). An emptied, missing,
# truncated or overwritten data.mdb makes the server exit 1 with a message
# naming the file: never a new empty store in its place, never a death by
# signal, and the damaged file is left as it was. A --map-size below the
# minimum exits 2 naming the flag and creates nothing.
set -uo pipefail
KAIROS="$1"
work=$(mktemp -d)
pid=0
trap 'kill -9 $pid 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; [ -f "$work/out" ] && tail -n 30 "$work/out" | sed 's/^/  | /'; exit 1; }
data="$work/data"

# Starts the server on $data in the background; waits (up to 60 s) for ready.
start() {
  : >"$work/out"
  "$KAIROS" server --data-dir "$data" --demo --workers 0 "$@" >"$work/out" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    grep -q "kairos server: ready" "$work/out" && return 0
    kill -0 "$pid" 2>/dev/null || fail "server exited before it was ready"
    sleep 0.1
  done
  fail "server not ready within 60 s"
}
stop() {
  kill -TERM "$pid"; wait "$pid"; local rc=$?
  [ "$rc" -eq 0 ] || fail "SIGTERM exit code $rc, expected 0"
}
# Waits (up to 20 s) for the demo job line of the running server.
demo_result() {
  for _ in $(seq 200); do
    grep -q "server.demo_job" "$work/out" && { grep "server.demo_job" "$work/out"; return 0; }
    sleep 0.1
  done
  fail "no server.demo_job line within 20 s"
}
# Runs a server that must refuse $data: exit 1 (not a signal), a message
# containing $1, no ready line.
refused() {
  timeout 30 "$KAIROS" server --data-dir "$data" --demo --workers 0 >"$work/out" 2>&1; local rc=$?
  [ "$rc" -eq 1 ] || fail "$2: exit $rc, expected 1 (>128 is a death by signal)"
  grep -qF -- "$1" "$work/out" || fail "$2: message does not contain '$1'"
  grep -q "ready" "$work/out" && fail "$2: reached ready"
  grep -q "incarnation=1" "$work/out" && fail "$2: created a new demo job"
  return 0
}

# A new store, and a second server on it while it runs.
start
demo_result | grep -q "result=created" || fail "first start did not create the demo job"
holder=$pid
timeout 30 "$KAIROS" server --data-dir "$data" >"$work/out2" 2>&1; rc=$?
[ "$rc" -eq 1 ] || fail "second server on a directory in use: exit $rc, expected 1"
grep -qF "data directory $data is in use by another process (pid $holder" "$work/out2" ||
  { sed 's/^/  | /' "$work/out2"; fail "second server: message names neither the directory nor pid $holder"; }
kill -0 "$holder" 2>/dev/null || fail "the first server died when a second one tried the directory"

# A backup of the running server.
mkdir -p "$work/backup"
mdb_copy "$data" "$work/backup" || fail "mdb_copy of a running server failed"
stop

# An emptied data file.
truncate -s 0 "$data/data.mdb"
refused "data file $data/data.mdb is empty" "empty data.mdb"
[ "$(stat -c %s "$data/data.mdb")" -eq 0 ] || fail "the empty data.mdb was replaced"

# A missing data file.
rm "$data/data.mdb"
refused "its data file $data/data.mdb is missing" "missing data.mdb"
[ -e "$data/data.mdb" ] && fail "a new data.mdb was created in place of the missing one"

# Restore from the backup: the history is back.
cp "$work/backup/data.mdb" "$data/data.mdb"
start
demo_result | grep -q "result=exists" || fail "the restored store lost the demo job"
stop
cp "$data/data.mdb" "$work/good.mdb"

# Truncations, and garbage over the data pages.
size=$(stat -c %s "$work/good.mdb")
for cut in 1 4095 4096 8192 $((size / 2)) $((size - 1)); do
  cp "$work/good.mdb" "$data/data.mdb"
  truncate -s "$cut" "$data/data.mdb"
  refused "$data/data.mdb is truncated" "data.mdb truncated to $cut bytes"
  [ "$(stat -c %s "$data/data.mdb")" -eq "$cut" ] || fail "the truncated data.mdb was changed"
done
cp "$work/good.mdb" "$data/data.mdb"
yes 'kairos garbage' | head -c $((size - 8192)) |
  dd of="$data/data.mdb" bs=4096 seek=2 conv=notrunc status=none
refused "$data/data.mdb is damaged" "garbage over the data pages"
cp "$work/good.mdb" "$data/data.mdb"
head -c 4096 /dev/zero | dd of="$data/data.mdb" bs=4096 seek=0 conv=notrunc status=none
refused "$data/data.mdb is damaged" "meta page 0 zeroed"

# Map sizes.
"$KAIROS" server --data-dir "$work/tiny" --map-size 16K >"$work/out" 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "--map-size 16K: exit $rc, expected 2"
grep -q -- "--map-size: expected a byte count of at least 1M" "$work/out" || fail "--map-size 16K not explained"
[ -e "$work/tiny" ] && fail "--map-size 16K created the directory"
"$KAIROS" server --help | grep -q "at least 1048576 = 1M" || fail "--help does not name the minimum map size"
data="$work/small"
start --map-size 1M
stop
echo "e2e data dir: ok"
