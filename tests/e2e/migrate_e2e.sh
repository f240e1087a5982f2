#!/usr/bin/env bash
# `kairos migrate` end to end on a store a real server made: up to date at
# this binary's schema (exit 0, nothing written), --dry-run and --store
# lmdb:DIR the same; refused while the server runs (the directory lock, exit
# 1), for a missing directory or one without a store (exit 1, nothing
# created), for a store of a newer schema (set with lmdb-utils' mdb_load; the
# server refuses it too), and for bad flags or a malformed PostgreSQL URI (exit 2
# naming the flag). The steps of a real upgrade are unit tested
# (tests/prod/store/lmdb_migrate_test.cc): this binary's schema is the first.
set -uo pipefail
KAIROS="$1"
work=$(mktemp -d)
pid=0
trap 'kill -9 $pid 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; for f in out stdout err; do [ -f "$work/$f" ] && sed "s/^/  $f| /" "$work/$f" | tail -n 20; done; exit 1; }
data="$work/data"
# m ARGS...: runs kairos migrate; stdout in $work/stdout, stderr in $work/err, exit code in $rc.
m() { "$KAIROS" migrate "$@" >"$work/stdout" 2>"$work/err"; rc=$?; }
expect() {  # expect RC PATTERN-IN-OUTPUT WHAT
  [ "$rc" -eq "$1" ] || fail "$3: exit $rc, expected $1"
  cat "$work/stdout" "$work/err" | grep -q -- "$2" || fail "$3: output lacks '$2'"
}

"$KAIROS" server --data-dir "$data" --workers 0 --http 127.0.0.1:0 --listen none >"$work/out" 2>&1 &
pid=$!
for _ in $(seq 600); do
  grep -q "kairos server: ready" "$work/out" && break
  kill -0 "$pid" 2>/dev/null || fail "server exited before it was ready"
  sleep 0.1
done
grep -q "kairos server: ready" "$work/out" || fail "server not ready within 60 s"
version=$(sed -n 's/.*schema v\([0-9]*\)).*/\1/p' "$work/out" | head -n 1)
[ -n "$version" ] || fail "the ready line names no schema version"

m --data-dir "$data"; expect 1 "in use" "migrate while the server runs"
kill -TERM "$pid"; wait "$pid"; rc=$?
[ "$rc" -eq 0 ] || fail "server SIGTERM exit $rc"

cp "$data/data.mdb" "$work/before.mdb"
m --data-dir "$data"; expect 0 "schema v$version, up to date" "migrate"
m --data-dir "$data" --dry-run; expect 0 "up to date" "migrate --dry-run"
m --store "lmdb:$data"; expect 0 "up to date" "migrate --store lmdb:DIR"
cmp -s "$data/data.mdb" "$work/before.mdb" || fail "an up-to-date migrate wrote the store"

m --data-dir "$work/missing"; expect 1 "does not exist" "migrate a missing directory"
[ -e "$work/missing" ] && fail "migrate created a directory"
mkdir "$work/empty"
m --data-dir "$work/empty"; expect 1 "holds no Kairos store" "migrate an empty directory"
[ -z "$(ls -A "$work/empty")" ] || fail "migrate left files in an empty directory"
m; expect 2 "flag --data-dir is required" "migrate without a store"
m --store "postgresql://db/kairos?bogus=1"; expect 2 "flag --store: .*bogus" "migrate a malformed postgresql store"
m --data-dir "$data" --store "lmdb:$work/other"; expect 2 "different directories" "two stores"
m --data-dir "$data" --bogus; expect 2 "bogus" "an unknown flag"

# A store of a newer schema: the server and migrate refuse it, unchanged.
newer=$((version + 1))
printf 'schema_version\n%s\n' "$newer" | mdb_load -T -s kairos.meta "$data" || fail "mdb_load"
m --data-dir "$data"; expect 1 "schema version $newer, newer than this kairos binary" "migrate a newer store"
timeout 60 "$KAIROS" server --data-dir "$data" --workers 0 --http 127.0.0.1:0 --listen none \
  >"$work/out" 2>&1
rc=$?
[ "$rc" -eq 1 ] && grep -q "schema version $newer, newer" "$work/out" ||
  fail "the server on a newer store: exit $rc"
echo "PASS: kairos migrate"
