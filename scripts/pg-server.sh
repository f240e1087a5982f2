#!/usr/bin/env bash
# A private, throw-away PostgreSQL server for the tests (and for developers):
#   scripts/pg-server.sh start DIR   initdb in DIR/data, start it listening only
#                                    on a Unix socket in DIR (no TCP), create
#                                    the database "kairos_test", print the
#                                    conninfo (host=DIR dbname=kairos_test
#                                    user=postgres) on stdout
#   scripts/pg-server.sh stop DIR    stop it (fast shutdown); DIR stays
#   scripts/pg-server.sh standby PRIMARY DIR [sync|async]
#                                    a streaming-replication standby of the
#                                    server started in PRIMARY: a base backup
#                                    into DIR/data, started on a socket in
#                                    DIR; with sync (the default) the primary
#                                    then waits for it on every commit
#                                    (synchronous_standby_names); prints the
#                                    standby's conninfo (the base backup is
#                                    not fsynced: a throw-away test standby)
#   scripts/pg-server.sh kill DIR    kill -9 the server's postmaster (a crash)
#   scripts/pg-server.sh promote DIR make the standby in DIR the primary
# DIR must be writable by the postgres user (initdb and pg_ctl refuse to run
# as root, so as root they run as postgres through runuser). The binaries come
# from Debian's /usr/lib/postgresql/VERSION/bin (the newest installed);
# fsync and every durability setting stay at their defaults.
set -euo pipefail

usage() {
  echo "usage: $0 start|stop|kill|promote DIR | $0 standby PRIMARY DIR [sync|async]" >&2
  exit 2
}
[ $# -ge 2 ] || usage
cmd=$1
if [ "$cmd" = standby ]; then
  [ $# -eq 3 ] || [ $# -eq 4 ] || usage
  primary=$(realpath -m "$2")
  dir=$(realpath -m "$3")
  mode=${4:-sync}
  [ "$mode" = sync ] || [ "$mode" = async ] || usage
else
  [ $# -eq 2 ] || usage
  dir=$(realpath -m "$2")
fi

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "$0: no PostgreSQL server under /usr/lib/postgresql/*/bin (apt-get install postgresql)" >&2
  exit 1
fi

# Runs a server binary as the postgres user when we are root.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Starts the server of $dir/data on a socket in $dir only (no TCP).
start_server() {
  as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=200" \
    start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
}
psql_at() { as_pg "$bindir/psql" -h "$1" -U postgres -d postgres -tAq -v ON_ERROR_STOP=1 -c "$2"; }

case "$cmd" in
  start)
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_pg "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --no-instructions \
        -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    start_server
    if ! as_pg "$bindir/psql" -h "$dir" -U postgres -d postgres -tAq \
      -c "SELECT 1 FROM pg_database WHERE datname = 'kairos_test'" | grep -q 1; then
      as_pg "$bindir/createdb" -h "$dir" -U postgres kairos_test
    fi
    echo "host=$dir dbname=kairos_test user=postgres"
    ;;
  stop)
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null
    fi
    ;;
  standby)
    # The name the primary knows this standby by: its directory's name,
    # reduced to what an application_name may hold unquoted.
    name=$(basename "$dir" | tr -c 'a-zA-Z0-9_\n' '_')
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      # initdb's pg_hba.conf trusts local replication connections.
      as_pg "$bindir/pg_basebackup" -h "$primary" -U postgres -D "$dir/data" -X stream -R -c fast -N \
        -d "application_name=$name" >"$dir/basebackup.log" 2>&1 ||
        { cat "$dir/basebackup.log" >&2; exit 1; }
    fi
    start_server
    if [ "$mode" = sync ]; then
      psql_at "$primary" "ALTER SYSTEM SET synchronous_standby_names = '\"$name\"'" >/dev/null
    else
      psql_at "$primary" "ALTER SYSTEM RESET synchronous_standby_names" >/dev/null
    fi
    psql_at "$primary" "SELECT pg_reload_conf()" >/dev/null
    # Ready when the primary streams to it in the requested state.
    want=$([ "$mode" = sync ] && echo sync || echo async)
    for _ in $(seq 600); do
      state=$(psql_at "$primary" \
        "SELECT sync_state FROM pg_stat_replication WHERE application_name = '$name'" || true)
      [ "$state" = "$want" ] && break
      sleep 0.1
    done
    [ "$state" = "$want" ] || { echo "$0: the standby in $dir is not streaming ($want) after 60 s" >&2; exit 1; }
    echo "host=$dir dbname=kairos_test user=postgres"
    ;;
  kill)
    [ -f "$dir/data/postmaster.pid" ] || { echo "$0: no server running in $dir" >&2; exit 1; }
    kill -9 "$(head -n 1 "$dir/data/postmaster.pid")"
    ;;
  promote)
    as_pg "$bindir/pg_ctl" -D "$dir/data" -w -t 60 promote >/dev/null
    ;;
  *) usage ;;
esac
