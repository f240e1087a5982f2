#!/usr/bin/env bash
# Remote workers end to end, on loopback: a server with no local workers
# (--workers 0) and the demo job every second, listening with a worker
# secret; two `kairos worker` processes run its jobs. Checks: the runs happen
# on the remote workers; after kill -9 of one, the other keeps running them;
# a worker with the wrong secret is refused with a message naming the
# reason; garbage on the worker port leaves the server serving; a listener
# beyond loopback without a secret, and bad worker flags, exit 2 naming the
# flag; SIGTERM stops worker and server cleanly (exit 0).
set -uo pipefail
KAIROS="$1"
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
# Successful runs of the demo job in a worker's log.
runs() { grep -c ' process\.exited job=demo-hello .* status=succeeded ' "$work/$1.log"; }
at_least() { [ "$(runs "$1")" -ge "$2" ]; }

printf 'e2e-secret-0123456789abcdef\n' >"$work/secret"
printf 'the-wrong-secret-0123456789\n' >"$work/wrong"
chmod 600 "$work/secret" "$work/wrong"

# A listener beyond loopback needs a secret; the server says so and exits 2.
timeout 30 "$KAIROS" server --data-dir "$work/d0" --listen 0.0.0.0:0 >"$work/refuse.log" 2>&1
rc=$?
[ "$rc" -eq 2 ] || fail "--listen 0.0.0.0 without a secret: exit $rc, expected 2"
grep -q "flag --listen: .*--worker-secret-file" "$work/refuse.log" || fail "no reason for refusing --listen"
timeout 30 "$KAIROS" server --data-dir "$work/d0" --listen nowhere >"$work/refuse.log" 2>&1
[ $? -eq 2 ] && grep -q "flag --listen" "$work/refuse.log" || fail "a bad --listen is not refused naming the flag"

# Bad worker flags exit 2 naming the flag.
check_flag() {
  local flag="$1"
  shift
  timeout 10 "$KAIROS" worker "$@" >"$work/flag.log" 2>&1
  local rc=$?
  [ "$rc" -eq 2 ] || fail "worker $*: exit $rc, expected 2"
  grep -q -- "$flag" "$work/flag.log" || fail "worker $*: error does not name $flag"
}
check_flag --connect --state-dir "$work/x"
check_flag --connect --connect "h" --state-dir "$work/x"
check_flag --state-dir --connect 127.0.0.1:1
check_flag --concurrency --connect 127.0.0.1:1 --state-dir "$work/x" --concurrency 0
check_flag --runners --connect 127.0.0.1:1 --state-dir "$work/x" --runners command,ftp
check_flag --lease-ttl --connect 127.0.0.1:1 --state-dir "$work/x" --lease-ttl forever
check_flag --id --connect 127.0.0.1:1 --state-dir "$work/x" --id "a b"
check_flag --worker-secret-file --connect 127.0.0.1:1 --state-dir "$work/x" --worker-secret-file "$work/missing"
"$KAIROS" worker --help >"$work/help.log" || fail "worker --help failed"
for flag in --connect --state-dir --concurrency --id --runners --worker-secret-file --lease-ttl; do
  grep -q -- "  $flag " "$work/help.log" || fail "worker --help does not list $flag"
done

# The server: no local workers, the demo job every second, a free port.
"$KAIROS" server --data-dir "$work/data" --workers 0 --demo --demo-every 1 \
  --listen 127.0.0.1:0 --worker-secret-file "$work/secret" >"$work/server.log" 2>&1 &
server=$!
pids+=("$server")
wait_for 60 grep -q "kairos server: ready" "$work/server.log" || fail "server not ready within 60 s"
port=$(sed -n 's/.* net\.listening address=127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$work/server.log" | head -n 1)
[ -n "$port" ] || fail "no net.listening line with the port"

start_worker() {  # name, extra flags...
  local name="$1"
  shift
  "$KAIROS" worker --connect "127.0.0.1:$port" --state-dir "$work/$name" --id "$name" "$@" \
    >"$work/$name.log" 2>&1 &
  pids+=("$!")
  last_worker=$!
}
start_worker w1 --worker-secret-file "$work/secret"
w1=$last_worker
start_worker w2 --worker-secret-file "$work/secret"
w2=$last_worker

wait_for 60 grep -q "net.connected" "$work/w1.log" || fail "w1 did not connect"
wait_for 60 grep -q "net.connected" "$work/w2.log" || fail "w2 did not connect"
wait_for 60 at_least w1 1 || fail "no demo run on w1"
wait_for 60 at_least w2 1 || fail "no demo run on w2"
grep -q ' process\.started ' "$work/server.log" && fail "a job ran on the server, which has no workers"

# A worker with the wrong secret is refused, and says why.
start_worker bad --worker-secret-file "$work/wrong"
bad=$last_worker
wait_for 60 grep -q "net.refused .*bad worker secret" "$work/bad.log" || fail "wrong secret: no refusal naming the reason"
grep -q "net.refused .*bad worker secret" "$work/server.log" || fail "the server did not log the refusal"
kill -TERM "$bad"
wait "$bad"

# Without a secret the worker is told to configure one.
start_worker nosecret
nosecret=$last_worker
wait_for 60 grep -q "net.refused .*--worker-secret-file" "$work/nosecret.log" || fail "no secret: no refusal naming the flag"
kill -TERM "$nosecret"
wait "$nosecret"

# Garbage on the worker port: that connection is closed, the server serves on.
# (In a subshell that ignores SIGPIPE: the server may close before the
# last byte is written.)
(
  trap '' PIPE
  exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'GET / HTTP/1.1\r\nHost: kairos\r\n\r\n' >&3
) 2>/dev/null
wait_for 30 grep -q "net.refused .*garbage frame" "$work/server.log" || fail "garbage not logged"
kill -0 "$server" 2>/dev/null || fail "the server died on garbage"

# kill -9 one worker: the runs continue on the other.
kill -9 "$w1"
wait "$w1" 2>/dev/null
before=$(runs w2)
wait_for 90 at_least w2 $((before + 3)) || fail "runs did not continue on w2 after w1 was killed"

# Clean stops.
kill -TERM "$w2"
wait "$w2"
rc=$?
[ "$rc" -eq 0 ] || fail "worker SIGTERM exit $rc, expected 0"
grep -q "kairos worker: stopped" "$work/w2.log" || fail "no worker 'stopped' line"
kill -TERM "$server"
wait "$server"
rc=$?
[ "$rc" -eq 0 ] || fail "server SIGTERM exit $rc, expected 0"
echo "PASS: remote workers ran $(($(runs w1) + $(runs w2))) demo runs"
