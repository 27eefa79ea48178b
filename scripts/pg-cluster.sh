#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests and CI.
#
#   scripts/pg-cluster.sh start DIR [CERT KEY]
#                                        initdb in DIR (if new), start on a free 127.0.0.1 port,
#                                        print the superuser URL (postgres://postgres@127.0.0.1:PORT/postgres);
#                                        with a PEM certificate and key, TLS is on (ssl=on, both
#                                        plain and TLS connections accepted)
#   scripts/pg-cluster.sh restart DIR    `pg_ctl restart -m immediate` (a crash and recovery)
#   scripts/pg-cluster.sh stop DIR       stop it (immediate) and leave DIR for the caller to remove
#   scripts/pg-cluster.sh createdb URL NAME   on the server of superuser URL (…/postgres), create
#                                        database NAME and print its URL
#
# The server binaries come from $PG_BIN, else the newest /usr/lib/postgresql/*/bin, else
# `pg_config --bindir`. Missing binaries are exit 3 with a message (the caller decides whether
# that skips or fails; under CI=true the tests fail). PostgreSQL refuses to run as root, so as
# root the cluster runs as the `postgres` user (else `nobody`). Authentication is `trust` on
# 127.0.0.1 and the unix socket in DIR: a cluster for tests only.
set -euo pipefail

die() { echo "pg-cluster.sh: $*" >&2; exit "${2:-1}"; }

find_bin() {
  if [ -n "${PG_BIN:-}" ] && [ -x "$PG_BIN/initdb" ]; then echo "$PG_BIN"; return; fi
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ]; then echo "$d"; return; fi
  done
  if command -v pg_config >/dev/null 2>&1; then
    d=$(pg_config --bindir)
    if [ -x "$d/initdb" ]; then echo "$d"; return; fi
  fi
  die "no PostgreSQL server binaries (initdb, pg_ctl): set PG_BIN or install the postgresql package" 3
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    local user=postgres
    id "$user" >/dev/null 2>&1 || user=nobody
    runuser -u "$user" -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

cmd="${1:-}"
dir="${2:-}"
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: pg-cluster.sh start|restart|stop DIR, or createdb URL NAME" 2
bin=$(find_bin)

case "$cmd" in
  start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ "$(id -u)" = 0 ]; then
      user=postgres; id "$user" >/dev/null 2>&1 || user=nobody
      chown "$user" "$dir"
    fi
    extra=""
    if [ -n "${3:-}" ] && [ -n "${4:-}" ]; then
      cp "$3" "$dir/server.crt"
      cp "$4" "$dir/server.key"
      chmod 600 "$dir/server.key"
      if [ "$(id -u)" = 0 ]; then chown "$user" "$dir/server.crt" "$dir/server.key"; fi
      extra="-c ssl=on -c ssl_cert_file=$dir/server.crt -c ssl_key_file=$dir/server.key"
    fi
    echo "$extra" >"$dir/opts"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -N --no-instructions >"$dir/initdb.log" 2>&1 \
        || die "initdb failed in $dir (log: $dir/initdb.log)"
    fi
    for _ in 1 2 3 4 5; do
      port=$(free_port)
      echo "$port" >"$dir/port"
      if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
          -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200 $extra" start >/dev/null 2>&1; then
        echo "postgres://postgres@127.0.0.1:$port/postgres"
        exit 0
      fi
    done
    die "the server did not start in $dir (log: $dir/server.log)"
    ;;
  restart)
    dir=$(cd "$dir" && pwd)
    port=$(cat "$dir/port")
    extra=$(cat "$dir/opts" 2>/dev/null || true)
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 -m immediate \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200 $extra" restart >/dev/null \
      || die "restart failed in $dir (log: $dir/server.log)"
    ;;
  stop)
    [ -d "$dir/data" ] || exit 0
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    ;;
  createdb)
    url="$dir"
    name="${3:-}"
    [[ "$name" =~ ^[a-z_][a-z0-9_]*$ ]] || die "createdb needs a database name of [a-z0-9_], got '$name'" 2
    "$bin/psql" "$url" -qAt -v ON_ERROR_STOP=1 -c "CREATE DATABASE $name" >/dev/null \
      || die "CREATE DATABASE $name failed on ${url%%@*}@…"
    echo "${url%/*}/$name"
    ;;
  *)
    die "unknown command '$cmd' (expected start, restart, stop or createdb)" 2
    ;;
esac
