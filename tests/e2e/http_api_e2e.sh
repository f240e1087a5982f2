#!/usr/bin/env bash
# The HTTP API end to end: `kairos server --http 127.0.0.1:0` serves the API;
# a job created with curl runs (its runs show a success); malformed JSON, an
# unknown field, a bad cron expression, an unknown zone, a 12 MB body and a
# wrong token are refused with the contract's status and error, and leave no
# job behind; a non-loopback address without tokens is refused at startup.
set -uo pipefail
KAIROS="$1"
work=$(mktemp -d)
pid=0
trap 'kill -9 $pid 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; [ -f "$work/out" ] && sed 's/^/  | /' "$work/out" | tail -40; exit 1; }
command -v curl >/dev/null || fail "curl is needed (scripts/setup.sh installs it)"

# Starts the server with extra flags; waits (up to 60 s) for the API line.
start() {
  : >"$work/out"
  "$KAIROS" server --data-dir "$work/data" --workers 1 --http 127.0.0.1:0 "$@" >"$work/out" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    port=$(sed -n 's/^kairos server: http api on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/out")
    [ -n "$port" ] && grep -q "ready" "$work/out" && return 0
    kill -0 "$pid" 2>/dev/null || fail "server exited before it was ready"
    sleep 0.1
  done
  fail "server not ready within 60 s"
}
stop() {
  kill -TERM "$pid"; wait "$pid"; local rc=$?
  [ "$rc" -eq 0 ] || fail "SIGTERM exit code $rc, expected 0"
}

# call METHOD PATH [curl args...]: the status in $status, the body in $work/body.
call() {
  local method="$1" path="$2"; shift 2
  status=$(curl -s -o "$work/body" -w '%{http_code}' -X "$method" --max-time 30 \
    -H 'Content-Type: application/json' "$@" "http://127.0.0.1:$port$path")
}
expect() {  # expect STATUS WHAT
  [ "$status" = "$1" ] || fail "$2: status $status, expected $1: $(head -c 400 "$work/body")"
}
expect_field() {  # expect_field FIELD WHAT
  grep -q "\"field\":\"$1\"" "$work/body" || fail "$2: error does not name $1: $(head -c 400 "$work/body")"
}

start
call GET /healthz; expect 200 "healthz"
for _ in $(seq 100); do
  call GET /readyz; [ "$status" = 200 ] && break; sleep 0.1
done
expect 200 "readyz"

call POST /v1/jobs --data '{"id": "e2e-every", "schedule": {"every": "1s"},
  "command": {"argv": ["/bin/echo", "hello from the api"]}, "policy": {"timeout": "30s"}}'
expect 201 "create"
grep -q '"state":"active"' "$work/body" || fail "create: no active status"
call GET /v1/jobs/e2e-every; expect 200 "get"
ran=0
for _ in $(seq 300); do
  call GET /v1/jobs/e2e-every/runs
  if [ "$status" = 200 ] && grep -q '"state":"succeeded"' "$work/body"; then ran=1; break; fi
  sleep 0.1
done
[ "$ran" = 1 ] || fail "no succeeded run within 30 s: $(head -c 400 "$work/body")"
grep -q '"outcome":"succeeded"' "$work/body" || fail "run without outcome"
call GET /v1/jobs/e2e-every/occurrences; expect 200 "occurrences"
call GET /metrics; expect 200 "metrics"
grep -q 'kairos_http_requests_total{route="/v1/jobs",status="201"} 1' "$work/body" ||
  fail "metrics do not count the create"

# Refused creates: each names what is wrong, and no job appears.
call POST /v1/jobs --data '{"id": "bad-json", "schedule": '
expect 400 "malformed JSON"; grep -q '"code":"invalid_argument"' "$work/body" || fail "malformed JSON code"
call GET /v1/jobs/bad-json; expect 404 "after malformed JSON"
call POST /v1/jobs --data '{"id": "bad-field", "schedule": {"every": "1m"}, "command": {"argv": ["x"]}, "colour": 1}'
expect 400 "unknown field"; expect_field colour "unknown field"
call GET /v1/jobs/bad-field; expect 404 "after unknown field"
call POST /v1/jobs --data '{"id": "bad-cron", "schedule": {"cron": "61 * * * *"}, "command": {"argv": ["x"]}}'
expect 400 "cron 61"; expect_field schedule.cron "cron 61"
call GET /v1/jobs/bad-cron; expect 404 "after bad cron"
call POST /v1/jobs --data '{"id": "bad-zone", "schedule": {"cron": "* * * * *", "zone": "Mars/Olympus"}, "command": {"argv": ["x"]}}'
expect 400 "zone Mars/Olympus"; expect_field schedule.zone "zone Mars/Olympus"
call GET /v1/jobs/bad-zone; expect 404 "after bad zone"
{
  printf '{"id": "too-big", "schedule": {"every": "1m"}, "command": {"argv": ["x"]}, "labels": {"a": "'
  head -c 12000000 /dev/zero | tr '\0' 'a'
  printf '"}}'
} >"$work/big.json"
call POST /v1/jobs --data-binary "@$work/big.json"
expect 413 "12 MB body"; grep -q '"code":"payload_too_large"' "$work/body" || fail "413 code"
call GET /v1/jobs/too-big; expect 404 "after 12 MB body"
kill -0 "$pid" 2>/dev/null || fail "server died"

call DELETE /v1/jobs/e2e-every; expect 200 "delete"
grep -q '"state":"cancelled"' "$work/body" || fail "delete: not cancelled"
stop

# With tokens: a wrong or missing token is 401 and creates nothing.
printf '# operators\nright-token\n' >"$work/tokens"
start --auth-token-file "$work/tokens"
call POST /v1/jobs -H 'Authorization: Bearer wrong-token' \
  --data '{"id": "tok", "schedule": {"every": "1m"}, "command": {"argv": ["x"]}}'
expect 401 "wrong token"; grep -q '"code":"unauthenticated"' "$work/body" || fail "401 code"
call GET /v1/jobs/tok; expect 401 "no token"
call GET /v1/jobs/tok -H 'Authorization: Bearer right-token'; expect 404 "after wrong token"
call GET /healthz; expect 200 "healthz needs no token"
stop

# A non-loopback address without tokens is refused, saying why.
"$KAIROS" server --data-dir "$work/data" --http 0.0.0.0:0 >"$work/out" 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "exposed without tokens: exit $rc, expected 2"
grep -q -- "--auth-token-file" "$work/out" || fail "exposed without tokens: no hint"
"$KAIROS" server --data-dir "$work/data" --http nonsense >"$work/out" 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "bad --http: exit $rc, expected 2"
grep -q -- "--http" "$work/out" || fail "bad --http not named"
"$KAIROS" server --data-dir "$work/data" --auth-token-file "$work/missing" >"$work/out" 2>&1; rc=$?
[ "$rc" -eq 2 ] || fail "missing token file: exit $rc, expected 2"
echo "http api e2e: ok"
