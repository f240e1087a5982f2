#!/usr/bin/env bash
# A private, throw-away PostgreSQL server for the tests (and for developers):
#   scripts/pg-server.sh start DIR   initdb in DIR/data, start it listening only
#                                    on a Unix socket in DIR (no TCP), create
#                                    the database "kairos_test", print the
#                                    conninfo (host=DIR dbname=kairos_test
#                                    user=postgres) on stdout
#   scripts/pg-server.sh stop DIR    stop it (fast shutdown); DIR stays
# DIR must be writable by the postgres user (initdb and pg_ctl refuse to run
# as root, so as root they run as postgres through runuser). The binaries come
# from Debian's /usr/lib/postgresql/VERSION/bin (the newest installed);
# fsync and every durability setting stay at their defaults.
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
dir=$(realpath -m "$2")

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "$0: no PostgreSQL server under /usr/lib/postgresql/*/bin (apt-get install postgresql)" >&2
  exit 1
fi

# Runs a server binary as the postgres user when we are root.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_pg "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --no-instructions \
        -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c max_connections=200" \
      start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
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
  *) usage ;;
esac
