#!/usr/bin/env bash
# Jobs die with their worker, end to end with the real `kairos` binary.
#  1. A job started through the job shim (`kairos __job-shim`, what the
#     server's process runner runs) by a stand-in worker process: kill -9 the
#     worker, and within a few seconds the shim, the job and the job's
#     grandchild are gone.
#  2. `kairos server` restarted on a data directory whose running/ records
#     name a leaderless orphan group (worker and shim killed together, the
#     grandchild left), a recycled pid, and malformed records: before it is
#     ready the server kills the orphan (and only it), reports every record
#     and removes them. A server killed with kill -9 while its demo job runs
#     leaves nothing behind that the next start cannot clean up.
#  3. The real server killed with kill -9 while its demo job is alive (caught
#     in flight and held blocked on its output): the job is gone within a few
#     seconds.
#  4. The server restarted after 3: the run it held is handed back to the
#     scheduler at startup (its group proven gone, fenced by its token) and
#     runs again within seconds, not after its 30 s lease.
set -uo pipefail
KAIROS="$1"
work=$(mktemp -d)
pid=0
victims=()
trap 'kill -9 $pid "${victims[@]}" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; [ -f "$work/out" ] && tail -n 40 "$work/out" | sed 's/^/  | /'; exit 1; }

# True while $1 runs (a zombie or a missing process does not).
alive() {
  local state
  state=$(sed -n 's/^.*) \(.\) .*/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}
start_time() { sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f20; }
pgrp_of() { sed 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f3; }

# Waits (up to 10 s) until none of the pids runs.
wait_gone() {
  local p
  for _ in $(seq 100); do
    local any=0
    for p in "$@"; do alive "$p" && any=1; done
    [ "$any" -eq 0 ] && return 0
    sleep 0.1
  done
  return 1
}

# Waits (up to 30 s) for the file $1 to hold a line; prints it.
wait_line() {
  for _ in $(seq 300); do
    [ -s "$1" ] && { cat "$1"; return 0; }
    sleep 0.1
  done
  fail "no line in $1 within 30 s"
}

# Starts a stand-in worker (a bash that runs the shim and stays its parent)
# whose job starts a grandchild and reports "main grandchild" into $2.
# $1: records directory ("" for none). Sets $worker.
start_worker() {
  KAIROS_FENCING_TOKEN=777 bash -c '
    "$0" __job-shim --parent $$ --records "$1" --path "$PATH" -- \
      /bin/sh -c "sleep 300 & echo \$\$ \$! > $2.tmp; mv $2.tmp $2; wait"
    sleep 300' "$KAIROS" "$1" "$2" >/dev/null 2>&1 &
  worker=$!
}

# --- 1. kill -9 the worker: the job and its grandchild go with it ---------
start_worker "" "$work/pids1"
read -r main grandchild < <(wait_line "$work/pids1")
shim=$(pgrp_of "$main")
alive "$shim" && alive "$main" && alive "$grandchild" || fail "job not running"
[ "$shim" != "$worker" ] || fail "the job is not in its own process group"
kill -9 "$worker"; wait "$worker" 2>/dev/null
wait_gone "$shim" "$main" "$grandchild" ||
  fail "job processes survived their worker (shim $shim, main $main, grandchild $grandchild)"

# --- 2. a server restart cleans up what a dead incarnation left -----------
start() {
  : >"$work/out"
  "$KAIROS" server --data-dir "$work/data" "$@" >"$work/out" 2>&1 &
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

# A server killed with kill -9 while its demo job runs every second.
start --demo --demo-every 1 --workers 1
for _ in $(seq 300); do
  grep -q ' process\.started job=demo-hello ' "$work/out" && break
  sleep 0.1
done
kill -9 "$pid"; wait "$pid" 2>/dev/null
[ -d "$work/data/running" ] || fail "no job records directory in the data directory"

# A leaderless orphan: worker and shim killed together (shim first, the worker
# stopped so it cannot react); the job dies with the shim, its grandchild stays.
records="$work/data/running"
start_worker "$records" "$work/pids2"
read -r main grandchild < <(wait_line "$work/pids2")
shim=$(pgrp_of "$main")
[ -f "$records/$shim" ] || fail "no record for the job's group $shim"
kill -STOP "$worker"; kill -9 "$shim"; kill -9 "$worker"; wait "$worker" 2>/dev/null
wait_gone "$main" || fail "the job's main process survived its shim"
alive "$grandchild" || fail "scenario: the grandchild should still run before the restart"
victims+=("$grandchild")

# A recycled pid: a live process of someone else that a record names with
# another start time. It must survive.
setsid sleep 300 2>/dev/null &
other=$!
disown
victims+=("$other")
for _ in $(seq 50); do [ "$(pgrp_of "$other")" = "$other" ] && break; sleep 0.1; done
printf 'kairos-job-group v1\npgid=%s\nstart=%s\nowner=%s\nowner_start=1\ntoken=1\n' \
  "$other" "$(($(start_time "$other") + 1))" "$worker" >"$records/$other"
# Malformed records.
echo "pgid=$grandchild" >"$records/not-a-record"
printf 'kairos-job-group v1\npgid=%s\n' "$grandchild" >"$records/$grandchild"

start --workers 0
grep -q "server\.orphan_group record=$shim action=killed pgid=$shim killed=1 " "$work/out" ||
  fail "the orphan group $shim was not reported killed"
grep -q "server\.orphan_group record=$other action=recycled " "$work/out" ||
  fail "the recycled pid $other was not reported"
[ "$(grep -c 'server\.orphan_group record=.* action=invalid ' "$work/out")" -ge 2 ] ||
  fail "malformed records were not reported"
wait_gone "$grandchild" || fail "the orphaned grandchild $grandchild survived the restart"
alive "$other" || fail "a process behind a recycled pid was killed"
[ -z "$(ls -A "$records")" ] || fail "records left after startup: $(ls -A "$records")"
stop

# --- 3. the real server: kill -9 while its job runs -------------------------
# The demo job lives a few milliseconds, so it is caught in flight and kept
# alive: its group is frozen (SIGSTOP) and so is the server, the job's output
# pipe is filled (a read end held open here, so the pipe never breaks) and the
# group resumes, so the job's shell blocks writing its line. Nothing is
# stopped any more (a stopped member would make the kernel send SIGHUP to the
# orphaned group), so the only thing that can end the job after kill -9 of the
# server is the shim reacting to its parent's death.
start --workers 1  # the demo job (every second) is in the store since part 2
# First child of process $1 (its main thread's children list), or nothing.
first_child() {
  local kids=""
  read -r kids 2>/dev/null <"/proc/$1/task/$1/children" || true
  echo "${kids%% *}"
}
caught=0
SECONDS=0
while [ "$caught" -eq 0 ] && [ "$SECONDS" -lt 120 ]; do
  shim=$(first_child "$pid")
  if [ -z "$shim" ]; then sleep 0.002; continue; fi
  job=""
  while [ -z "$job" ] && [ -e "/proc/$shim" ]; do job=$(first_child "$shim"); done
  [ -n "$job" ] || continue
  kill -STOP -- "-$shim" 2>/dev/null || continue
  kill -STOP "$pid"
  if exec 7<"/proc/$shim/fd/1"; then
    dd if=/dev/zero of="/proc/$shim/fd/1" bs=1 count=1048576 oflag=nonblock status=none 2>/dev/null
    kill -CONT -- "-$shim"
    sleep 0.5
    if alive "$job" && [ "$(pgrp_of "$job")" = "$shim" ]; then caught=1; break; fi
    exec 7<&-
  fi
  kill -CONT -- "-$shim" 2>/dev/null
  kill -CONT "$pid"
done
[ "$caught" -eq 1 ] || fail "no demo run caught in flight within the bound"
victims+=("$job" "$shim")
kill -9 "$pid"; wait "$pid" 2>/dev/null
wait_gone "$job" "$shim" ||
  fail "the server's job survived kill -9 of the server (shim $shim, job $job)"
exec 7<&-

# --- 4. the restarted server hands the held run back at once ---------------
# The run the killed server held is leased for 30 s. Its group is proven
# gone at startup, so the run is handed back (fenced by its token) before the
# workers start and runs again as the next attempt within seconds, not after
# the lease.
start --workers 1
line=$(grep -m1 'server\.run_handed_back job=demo-hello ' "$work/out") ||
  fail "the held demo run was not handed back at startup"
case "$line" in
  *" result=released state=ready"*) ;;
  *) fail "the held demo run was not released: $line" ;;
esac
nominal=$(echo "$line" | sed -n 's/.* nominal=\([^ ]*\) .*/\1/p')
attempt=$(echo "$line" | sed -n 's/.* attempt=\([0-9]*\) .*/\1/p')
[ -n "$nominal" ] && [ -n "$attempt" ] || fail "cannot read the handed-back run: $line"
grep -q "run\.lease_lapsed .*reason=worker_restart" "$work/out" ||
  fail "no run.lease_lapsed event with reason=worker_restart"
SECONDS=0
rerun=0
while [ "$SECONDS" -lt 10 ]; do
  grep -q "process\.started job=demo-hello nominal=$nominal attempt=$((attempt + 1)) " \
    "$work/out" && { rerun=1; break; }
  sleep 0.1
done
[ "$rerun" -eq 1 ] ||
  fail "the handed-back run ($nominal) did not run again within 10 s (its lease is 30 s)"
stop
echo "e2e orphan: ok"
