#!/usr/bin/env bash
# `kairos job`, `kairos apply` end to end against a real server with the HTTP
# API: jobs added with --cron, --at, --in and --every run (job runs shows a
# success) and leave fired occurrences in the ledger; ls, get, pause, resume,
# trigger, edit and cancel work; a retried add with the same --id is
# idempotent and a different one is a conflict (exit 4); apply plans, creates,
# changes and prunes. Refused inputs exit 2 naming the flag and field
# (--cron '61 * * * *', --tz Mars/Olympus) and create nothing; an unknown id
# is exit 3, an unreachable server exit 5. Skipped (exit 77) while the server
# has no --http.
set -uo pipefail
KAIROS="$1"
SKIP=77
"$KAIROS" server --help 2>&1 | grep -q -- --http || { echo "SKIP: kairos server has no --http yet"; exit $SKIP; }
work=$(mktemp -d)
pid=0
trap 'kill -9 $pid 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; [ -f "$work/err" ] && sed 's/^/  err| /' "$work/err" | tail -20
  [ -f "$work/out" ] && tail -n 30 "$work/out" | sed 's/^/  log| /'; exit 1; }

"$KAIROS" server --data-dir "$work/data" --workers 2 --http 127.0.0.1:0 >"$work/out" 2>&1 &
pid=$!
port=
for _ in $(seq 600); do
  port=$(sed -n 's/^kairos server: http api on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/out")
  [ -n "$port" ] && grep -q "ready" "$work/out" && break
  kill -0 "$pid" 2>/dev/null || fail "server exited before it was ready"
  sleep 0.1
done
[ -n "$port" ] || fail "server not ready within 60 s"
export KAIROS_SERVER="http://127.0.0.1:$port"
unset KAIROS_TOKEN

# k ARGS...: runs kairos, stdout in $work/stdout, stderr in $work/err, exit code in $rc.
k() { "$KAIROS" "$@" >"$work/stdout" 2>"$work/err"; rc=$?; }
expect_rc() { [ "$rc" -eq "$1" ] || fail "$2: exit $rc, expected $1: $(cat "$work/stdout")"; }

# The server may need a moment to take its shard leases: retry the first add.
for _ in $(seq 100); do
  k job add --id e2e-every --every 1s --timeout 30s -- /bin/echo every
  [ "$rc" -eq 5 ] || break
  sleep 0.2
done
expect_rc 0 "add --every"
grep -q '^created job e2e-every$' "$work/stdout" || fail "add --every: $(cat "$work/stdout")"
k job add --id e2e-cron --cron '*/2 * * * * *' --tz Europe/Berlin --label team=e2e --label kind=cron -- /bin/echo cron
expect_rc 0 "add --cron"
at=$(date -u -d '+3 seconds' +%Y-%m-%dT%H:%M:%SZ)
k job add --id e2e-at --at "$at" --shell 'echo at' ; expect_rc 0 "add --at"
k job add --in 2s --priority 7 --env GREETING=hi -- /bin/sh -c 'echo "$GREETING"'
expect_rc 0 "add --in"
in_id=$(sed -n 's/^created job \(job-[0-9a-f]\{16\}\)$/\1/p' "$work/stdout")
[ -n "$in_id" ] || fail "add --in did not print a generated id: $(cat "$work/stdout")"

# Retried adds: identical is success, different is a conflict.
k job add --id e2e-every --every 1s --timeout 30s -- /bin/echo every; expect_rc 0 "identical re-add"
grep -q 'identical' "$work/stdout" || fail "identical re-add: $(cat "$work/stdout")"
k job add --id e2e-every --every 5s -- /bin/echo every; expect_rc 4 "different re-add"

# Each job runs: job runs shows a success within 60 s.
for id in e2e-every e2e-cron e2e-at "$in_id"; do
  ok=0
  for _ in $(seq 600); do
    k job runs "$id" --json
    if [ "$rc" -eq 0 ] && grep -q '"outcome":"succeeded"' "$work/stdout"; then ok=1; break; fi
    sleep 0.1
  done
  [ "$ok" = 1 ] || fail "job $id: no succeeded run within 60 s: $(head -c 400 "$work/stdout")"
done
k job runs e2e-every; expect_rc 0 "runs table"
grep -q '^NOMINAL  *KIND  *STATE  *OUTCOME' "$work/stdout" || fail "runs table header: $(head -3 "$work/stdout")"
grep -q 'succeeded' "$work/stdout" || fail "runs table shows no success"

# The ledger says what became of each occurrence.
k job ledger e2e-every; expect_rc 0 "ledger"
grep -q '^NOMINAL  *COUNT  *OUTCOME' "$work/stdout" || fail "ledger header: $(head -3 "$work/stdout")"
grep -q ' fired ' "$work/stdout" || fail "ledger shows no fired occurrence: $(head -5 "$work/stdout")"
k job ledger e2e-every --from 2000-01-01T00:00:00Z --to "$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)" --json
expect_rc 0 "ledger --from --to"; grep -q '"outcome":"fired"' "$work/stdout" || fail "ledger --json"

# ls, get, selectors.
k job ls; expect_rc 0 "ls"
[ "$(grep -c '^e2e-\|^job-' "$work/stdout")" -eq 4 ] || fail "ls does not list 4 jobs: $(cat "$work/stdout")"
k job ls --selector team=e2e --json; expect_rc 0 "ls --selector"
grep -q '"id":"e2e-cron"' "$work/stdout" && ! grep -q '"id":"e2e-every"' "$work/stdout" ||
  fail "ls --selector: $(cat "$work/stdout")"
k job get e2e-cron; expect_rc 0 "get"
grep -q '^schedule: *cron \*/2 \* \* \* \* \* Europe/Berlin$' "$work/stdout" || fail "get: $(cat "$work/stdout")"

# pause / resume with a generation precondition, trigger, edit, cancel.
k job pause e2e-every --if-generation 999; expect_rc 4 "pause with a stale generation"
k job pause e2e-every; expect_rc 0 "pause"
k job ls --paused --json; grep -q '"id":"e2e-every"' "$work/stdout" || fail "ls --paused"
k job resume e2e-every; expect_rc 0 "resume"
k job trigger e2e-cron --force; expect_rc 0 "trigger"
grep -q '^triggered job e2e-cron' "$work/stdout" || fail "trigger: $(cat "$work/stdout")"
EDITOR='sed -i s/\"priority\":\ 5/\"priority\":\ 8/' k job edit e2e-cron; expect_rc 0 "edit"
k job get e2e-cron --json; grep -q '"priority":8' "$work/stdout" || fail "edit did not save: $(cat "$work/stdout")"
EDITOR='sed -i s/\"priority\":\ 8/\"priority\":\ 12/' k job edit e2e-cron; expect_rc 2 "edit to a bad priority"
grep -q 'policy.priority' "$work/err" || fail "bad edit does not name policy.priority"
k job cancel e2e-at; expect_rc 0 "cancel"
k job get e2e-at --json; grep -q '"state":"cancelled"' "$work/stdout" || fail "cancel: not cancelled"

# Refused inputs: exit 2 naming the flag and field; nothing is created.
k job add --id bad-cron --cron '61 * * * *' -- /bin/true; expect_rc 2 "cron 61"
grep -q -- '--cron' "$work/err" && grep -q 'schedule.cron' "$work/err" || fail "cron 61 not named"
k job get bad-cron; expect_rc 3 "after a refused cron"
k job add --id bad-zone --cron '0 * * * *' --tz Mars/Olympus -- /bin/true; expect_rc 2 "zone Mars/Olympus"
grep -q -- '--tz' "$work/err" && grep -q 'schedule.zone' "$work/err" || fail "zone not named"
k job get bad-zone; expect_rc 3 "after a refused zone"
k job add --every 1m /bin/true; expect_rc 2 "program without --"
k job get no-such-job; expect_rc 3 "unknown id"
k job ls --json
[ "$(grep -o '"id":"' "$work/stdout" | wc -l)" -eq 4 ] ||
  fail "a refused add created a job: $(cat "$work/stdout")"
# https is spoken (tests/prod/cli/api_client_tls_test.cc covers TLS); a
# CA file with an http:// server is a usage error naming the flag.
k job get e2e-cron --server http://127.0.0.1:1 --ca-file /nonexistent.pem; expect_rc 2 "ca-file"
grep -q 'flag --ca-file: only for an https:// server' "$work/err" || fail "ca-file message"
k job get e2e-cron --server http://127.0.0.1:1 --timeout 5s; expect_rc 5 "unreachable server"

# apply: plan, create, unchanged, change with a diff, prune.
cat >"$work/jobs.json" <<JSON
{"jobs": [
  {"id": "app-a", "namespace": "apps", "schedule": {"every": "1m"}, "command": {"argv": ["/bin/true"]}},
  {"id": "app-b", "namespace": "apps", "schedule": {"cron": "0 3 * * *"}, "command": {"argv": ["/bin/true"]}}
]}
JSON
k apply -f "$work/jobs.json" --dry-run; expect_rc 0 "apply --dry-run"
grep -q '^2 to create, 0 to change, 0 unchanged, 0 to cancel$' "$work/stdout" || fail "plan: $(cat "$work/stdout")"
k job get app-a; expect_rc 3 "dry run wrote nothing"
k apply -f "$work/jobs.json"; expect_rc 0 "apply"
k apply -f "$work/jobs.json" --dry-run
grep -q '^0 to create, 0 to change, 2 unchanged, 0 to cancel$' "$work/stdout" || fail "re-plan: $(cat "$work/stdout")"
cat >"$work/jobs.json" <<JSON
[{"id": "app-a", "namespace": "apps", "schedule": {"every": "2m"}, "command": {"argv": ["/bin/true"]}}]
JSON
k apply -f "$work/jobs.json" --prune --dry-run; expect_rc 0 "prune plan"
grep -q 'schedule.every: "1m" -> "2m"' "$work/stdout" || fail "no field diff: $(cat "$work/stdout")"
grep -q '^cancel app-b' "$work/stdout" || fail "prune plan: $(cat "$work/stdout")"
k apply -f "$work/jobs.json" --prune; expect_rc 0 "apply --prune"
k job get app-b --json; grep -q '"state":"cancelled"' "$work/stdout" || fail "prune did not cancel app-b"
k job get e2e-cron --json; grep -q '"state":"active"' "$work/stdout" || fail "prune touched another namespace"
echo '[{"schedule": {"every": "1m"}, "command": {"argv": ["/bin/true"]}}]' >"$work/noid.json"
k apply -f "$work/noid.json"; expect_rc 2 "apply without ids"
grep -q 'jobs\[0\].id' "$work/err" || fail "apply without ids: field not named"

kill -0 "$pid" 2>/dev/null || fail "server died"
kill -TERM "$pid"; wait "$pid"; rc=$?
[ "$rc" -eq 0 ] || fail "SIGTERM exit code $rc"
echo "cli e2e: ok"
