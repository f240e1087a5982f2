# Shared helpers of the PostgreSQL cluster e2e tests (cluster_failover,
# cluster_stall, pg_outage, pg_failover, pg_async_loss): sourced after
# e2e_lib.sh, not run. Skips the test (exit 77) when KAIROS_TEST_PG is unset,
# as every PostgreSQL test does.
if [ -z "${KAIROS_TEST_PG:-}" ]; then
  echo "SKIP: KAIROS_TEST_PG is not set (scripts/pg-server.sh start DIR prints one)"
  exit 77
fi
command -v curl >/dev/null || fail "curl is required (scripts/setup.sh installs it)"
pg_server="$(dirname "${BASH_SOURCE[0]}")/../../scripts/pg-server.sh"
pg_bindir=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
leader_ttl=10 # seconds: the node's leader lease (core/kernel/lease_config.h)
pg_dirs=()    # private servers: killed and removed on exit
pg_db=""      # a database of the shared server: dropped on exit
trap 'for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
  for d in "${pg_dirs[@]}"; do "$pg_server" kill "$d" >/dev/null 2>&1; "$pg_server" stop "$d" >/dev/null 2>&1; rm -rf "$d"; done
  [ -n "$pg_db" ] && pg_psql "$KAIROS_TEST_PG" -c "DROP DATABASE IF EXISTS $pg_db WITH (FORCE)" >/dev/null 2>&1
  [ -n "${KAIROS_E2E_KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT

pg_psql() { "$pg_bindir/psql" -X -q -tA -v ON_ERROR_STOP=1 "$@"; }

# migrate_store: `kairos migrate --store "$store"`, or the test fails.
migrate_store() {
  k migrate --store "$store"
  [ "$rc" -eq 0 ] || fail "migrate: exit $rc: $(cat "$work/stdout" "$work/err")"
}

# shared_database NAME: a database of its own on the shared test server,
# migrated; sets $store.
shared_database() {
  pg_db="$1_$$_$RANDOM"
  pg_psql "$KAIROS_TEST_PG" -c "CREATE DATABASE $pg_db" >/dev/null || fail "CREATE DATABASE $pg_db"
  store="$KAIROS_TEST_PG dbname=$pg_db" # the later dbname wins
  migrate_store
}

# private_dir: a directory for a private PostgreSQL server (the postgres user
# must reach it; $work is private); on stdout.
private_dir() {
  local d
  d=$(mktemp -d)
  chmod 755 "$d"
  echo "$d"
}

# primary_and_standby sync|async: a private primary and a streaming standby
# of it, migrated; sets $primary, $standby and $store (a multi-host conninfo
# that follows the read-write one).
primary_and_standby() {
  primary=$(private_dir)
  standby=$(private_dir)
  pg_dirs+=("$primary" "$standby")
  "$pg_server" start "$primary" >/dev/null || fail "could not start the primary"
  "$pg_server" standby "$primary" "$standby" "$1" >/dev/null || fail "could not start the standby"
  store="host=$primary,$standby dbname=kairos_test user=postgres target_session_attrs=read-write"
  migrate_store
}

# start_node N ARGS...: server nN on $store (its own data directory and node
# id, 3 s run leases); sets node_pid[N], node_http[N], node_listen[N].
declare -A node_pid node_http node_listen
start_node() {
  local n="$1"
  shift
  start_server "n$n" --store "$store" --data-dir "$work/d$n" --node-id "n$n" --lease-ttl 3s "$@"
  node_pid[$n]=$server
  node_http[$n]=$http_port
  node_listen[$n]=$listen_port
}
node_get() { curl -s --max-time 5 "http://127.0.0.1:${node_http[$1]}$2"; } # node_get N PATH
node_ready() { curl -s -f -o /dev/null --max-time 5 "http://127.0.0.1:${node_http[$1]}/readyz"; }
cluster() { node_get "$1" /v1/cluster; }
# every_shard_led N [NOT]: node N's view has a live leader for every shard,
# none of them node NOT.
every_shard_led() {
  cluster "$1" | jq -e --arg not "n${2:-0}" \
    '[.shards[] | select(.leader == null or .leader == $not)] | length == 0' >/dev/null 2>&1
}
# balanced N LIVE: node N's view counts LIVE live nodes, every shard led by
# one of them, and none leading more than ceil(shards / LIVE).
balanced() {
  cluster "$1" | jq -e --argjson live "$2" '
    (.shards | length) as $n | (($n + $live - 1) / $live | floor) as $fair |
    .live_nodes == $live and ([.shards[] | select(.leader == null)] | length == 0) and
    ([.shards[] | .leader] | group_by(.) | map(length) | max) <= $fair' >/dev/null 2>&1
}
# node_log_count PATTERN: lines matching PATTERN (grep -E) in every node's log.
node_log_count() { cat "$work"/n[0-9]*.log | grep -Ec "$1"; }

# add_effect_jobs PREFIX N: N one-off jobs PREFIX-1..N due 3..24 s from now,
# each applying one effect at the sink.
add_effect_jobs() {
  local effect i
  effect=$(sink_effect)
  for i in $(seq "$2"); do
    add_job --id "$1-$i" --in "$((3 + i % 22))s" --backoff 1s:1s --timeout 1m \
      --shell "sleep 0.2; $effect"
  done
}
# stop_nodes N...: SIGTERM each node; each exits 0 within 60 s.
stop_nodes() {
  local n
  for n in "$@"; do
    kill -TERM "${node_pid[$n]}"
    exited_within 60 "${node_pid[$n]}" || fail "n$n did not exit after SIGTERM"
    [ "$rc" -eq 0 ] || fail "n$n: exit $rc after SIGTERM"
  done
}

# seconds_since T: seconds (one decimal) from T (date +%s.%N) to now.
seconds_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
# within T BOUND: T <= BOUND (decimals allowed).
within() { awk -v t="$1" -v b="$2" 'BEGIN { exit !(t <= b) }'; }
