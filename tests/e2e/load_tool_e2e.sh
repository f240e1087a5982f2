#!/usr/bin/env bash
# kairos-load against a real server, end to end (a smoke test, no figure
# thresholds: the machine's speed is not under test):
#   1. --spawn with an API token and a worker secret: a few hundred one-off
#      jobs due at one instant run through the in-process workers over TCP,
#      the tool exits 0 and its JSON says every job ran exactly once, with
#      every run completed and its figures present;
#   2. the same against a server started separately (--server, --listen),
#      with a steady --rate;
#   3. bad flags exit 2 with a message naming the flag;
#   4. a job that runs twice (a manual trigger before its instant, then its
#      scheduled run) fails the check: exit 1, the job named with its 2 runs;
#   5. recurring jobs (--every, --for) beside a stored backlog (--stored),
#      with an idle window and a restart of the spawned server before the
#      first due instant: every occurrence once, the figures present.
KAIROS="$1"
LOAD="$2"
SINK=""
source "$(dirname "$0")/e2e_lib.sh"

# --- 3. flags ----------------------------------------------------------------
expect_usage() {  # expect_usage TEXT ARGS...: exit 2 and TEXT in the message
  local text="$1"
  shift
  timeout 30 "$LOAD" "$@" >"$work/flag.out" 2>&1
  rc=$?
  [ "$rc" -eq 2 ] || fail "kairos-load $*: exit $rc, expected 2: $(cat "$work/flag.out")"
  grep -q -- "$text" "$work/flag.out" || fail "kairos-load $*: no '$text' in: $(cat "$work/flag.out")"
}
expect_usage "spawn" --jobs 10
expect_usage "spawn" --spawn "$KAIROS" --server http://127.0.0.1:1
expect_usage "--jobs" --spawn "$KAIROS" --jobs 0
expect_usage "--concurrency" --spawn "$KAIROS" --concurrency lots
expect_usage "--lead" --spawn "$KAIROS" --lead 2h
expect_usage "--listen" --spawn "$KAIROS" --listen 127.0.0.1:7070
expect_usage "--bogus" --spawn "$KAIROS" --bogus
expect_usage "--every and --for" --spawn "$KAIROS" --every 1s
expect_usage "--for" --spawn "$KAIROS" --every 1s --for 2h
expect_usage "--stored" --spawn "$KAIROS" --stored 30000000
expect_usage "--idle and --restart" --server http://127.0.0.1:1 --restart
"$LOAD" --help >"$work/help.out" 2>&1 || fail "--help failed"
for flag in --spawn --server --listen --jobs --rate --concurrency --token-file --worker-secret-file --json \
  --every --for --stored --idle --restart; do
  grep -q -- "$flag" "$work/help.out" || fail "--help does not document $flag"
done

# --- 1. spawned server with a token and a worker secret -----------------------
echo "load-e2e-token-0123456789" >"$work/token"
head -c 32 /dev/urandom | base64 >"$work/secret"
chmod 600 "$work/token" "$work/secret"
timeout 240 "$LOAD" --spawn "$KAIROS" --jobs 300 --concurrency 16 --lead 3s --timeout 120s \
  --token-file "$work/token" --worker-secret-file "$work/secret" --json \
  >"$work/spawn.json" 2>"$work/spawn.log"
rc=$?
[ "$rc" -eq 0 ] || fail "kairos-load --spawn: exit $rc: $(cat "$work/spawn.json" "$work/spawn.log")"
jq -e '.exactly_once == true and .jobs_verified == 300 and .runs_completed == 300
       and .problems == [] and .runs_per_s > 0 and (.lateness_ms.p99 | type) == "number"
       and .server_cpu_seconds >= 0 and .store_bytes > 0' "$work/spawn.json" >/dev/null ||
  fail "kairos-load --spawn: unexpected report: $(cat "$work/spawn.json")"

# --- 2. a server started separately, jobs at a steady rate --------------------
start_server server --data-dir "$work/data" --workers 0
timeout 240 "$LOAD" --server "$KAIROS_SERVER" --listen "127.0.0.1:$listen_port" --jobs 200 \
  --rate 100 --concurrency 8 --slots 2 --lead 2s --timeout 120s >"$work/server.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || fail "kairos-load --server: exit $rc: $(cat "$work/server.out")"
grep -q "exactly once  yes: 200 of 200 jobs have their one scheduled run" "$work/server.out" ||
  fail "kairos-load --server: no exactly-once line: $(cat "$work/server.out")"
# Its jobs are really on that server, each with its one run.
job=$(curl -s --max-time 10 "$KAIROS_SERVER/v1/jobs?page_size=1" | jq -r '.jobs[0].id')
curl -s --max-time 10 "$KAIROS_SERVER/v1/jobs/$job/runs" |
  jq -e '[.runs[] | select(.outcome == "succeeded")] | length == 1' >/dev/null ||
  fail "job $job has not exactly one succeeded run"
kill -TERM "$server"
exited_within 60 "$server" || fail "the server did not stop within 60 s of SIGTERM"
[ "$rc" -eq 0 ] || fail "the server exited $rc after SIGTERM"

# --- 4. a second run of one job is caught -------------------------------------
start_server twice --data-dir "$work/data2" --workers 0
"$LOAD" --server "$KAIROS_SERVER" --listen "127.0.0.1:$listen_port" --jobs 50 --lead 10s \
  --timeout 60s >"$work/twice.out" 2>&1 &
load_pid=$!
first_job() { job=$(curl -s --max-time 5 "$KAIROS_SERVER/v1/jobs?page_size=1" | jq -r '.jobs[0].id // empty') && [ -n "$job" ]; }
wait_for 30 first_job || fail "kairos-load created no job within 30 s: $(cat "$work/twice.out")"
curl -s -f --max-time 10 -X POST "$KAIROS_SERVER/v1/jobs/$job:trigger" -d '{"force": true}' >/dev/null ||
  fail "cannot trigger $job"
exited_within 120 "$load_pid" || fail "kairos-load did not end within 120 s"
[ "$rc" -eq 1 ] || fail "kairos-load with a job run twice: exit $rc, expected 1: $(cat "$work/twice.out")"
grep -q "exactly once  NO" "$work/twice.out" && grep -q "$job: 2 runs" "$work/twice.out" ||
  fail "kairos-load did not name the job run twice: $(cat "$work/twice.out")"

# --- 5. recurring jobs, a stored backlog, an idle window, a restart -----------
timeout 240 "$LOAD" --spawn "$KAIROS" --jobs 40 --every 1s --for 3s --rate 40 --stored 3000 \
  --idle 1s --restart --concurrency 16 --lead 8s --timeout 120s --json \
  >"$work/recurring.json" 2>"$work/recurring.log"
rc=$?
[ "$rc" -eq 0 ] || fail "kairos-load --every --stored --restart: exit $rc: $(cat "$work/recurring.json" "$work/recurring.log")"
jq -e '.exactly_once == true and .jobs_verified == 40 and .occurrences_per_job == 3
       and .runs_expected == 120 and .runs_completed == 120 and .stored == 3000
       and (.server_idle_cpu_per_s | type) == "number"
       and .restart_ready_line_seconds > 0
       and .restart_readyz_seconds >= .restart_ready_line_seconds' "$work/recurring.json" >/dev/null ||
  fail "kairos-load --every --stored --restart: unexpected report: $(cat "$work/recurring.json")"
echo "PASS"
