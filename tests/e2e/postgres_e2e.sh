#!/usr/bin/env bash
# `kairos migrate` and `kairos server` on a real PostgreSQL (KAIROS_TEST_PG,
# a conninfo; scripts/test.sh starts a private server; skipped, exit 77, when
# unset), in a database of its own: the server refuses a database without
# the schema and names `kairos migrate --store`; migrate's dry run writes
# nothing, migrate creates the schema, a second one finds it up to date; the
# server then runs a job end to end on the store and stops cleanly on
# SIGTERM; a newer schema is refused by both.
set -uo pipefail
KAIROS="$1"
if [ -z "${KAIROS_TEST_PG:-}" ]; then
  echo "SKIP: KAIROS_TEST_PG is not set (scripts/pg-server.sh start DIR prints one)"
  exit 77
fi
bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
psql() { "$bindir/psql" -X -q -tA -v ON_ERROR_STOP=1 "$@"; }
work=$(mktemp -d)
db="kairos_e2e_$$_$RANDOM"
pid=0
trap '[ "$pid" -ne 0 ] && kill -9 "$pid" 2>/dev/null; psql "$KAIROS_TEST_PG" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; for f in out stdout err; do [ -f "$work/$f" ] && sed "s/^/  $f| /" "$work/$f" | tail -n 20; done; exit 1; }
psql "$KAIROS_TEST_PG" -c "CREATE DATABASE $db" || fail "CREATE DATABASE"
store="$KAIROS_TEST_PG dbname=$db"  # the later dbname wins
m() { "$KAIROS" migrate "$@" >"$work/stdout" 2>"$work/err"; rc=$?; }
expect() {  # expect RC PATTERN-IN-OUTPUT WHAT
  [ "$rc" -eq "$1" ] || fail "$3: exit $rc, expected $1"
  cat "$work/stdout" "$work/err" | grep -q -- "$2" || fail "$3: output lacks '$2'"
}
server() {
  timeout 60 "$KAIROS" server --store "$store" --data-dir "$work/data" --http 127.0.0.1:0 \
    --listen none "$@" >"$work/stdout" 2>"$work/err"
  rc=$?
}

server --workers 0; expect 1 "kairos migrate --store" "server before migrate"
m --store "$store" --dry-run; expect 0 "v0 -> v1 (dry run: nothing written)" "migrate --dry-run"
server --workers 0; expect 1 "holds no Kairos store yet" "server after a dry run"
m --store "$store"; expect 0 "schema v0 -> v1" "migrate"
m --store "$store"; expect 0 "schema v1, up to date" "migrate again"

"$KAIROS" server --store "$store" --data-dir "$work/data" --http 127.0.0.1:0 --listen none \
  --workers 1 --demo --demo-every 1 >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 300); do
  grep -q "run.completed" "$work/err" && break
  kill -0 "$pid" 2>/dev/null || fail "server exited"
  sleep 0.1
done
grep -q "kairos server: ready (store: postgresql at " "$work/out" || fail "no ready line"
grep -q "run.completed" "$work/err" || fail "no run completed within 30 s"
kill -TERM "$pid"
wait "$pid"; rc=$?
pid=0
[ "$rc" -eq 0 ] || fail "server exit $rc after SIGTERM"
n=$(psql "$store" -c "SELECT count(*) FROM kairos.kairos_data")
[ "$n" -gt 0 ] || fail "no records in kairos.kairos_data"

psql "$store" -c "UPDATE kairos.kairos_meta SET value = '99' WHERE key = 'schema_version'" ||
  fail "UPDATE"
server --workers 0; expect 1 "schema version 99, newer than this kairos binary" "server, newer"
m --store "$store"; expect 1 "newer than this kairos binary" "migrate, newer"
echo "postgres e2e: ok"
