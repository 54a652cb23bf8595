#!/usr/bin/env bash
# Runs a command beside a throw-away PostgreSQL cluster on a loopback port, with
# COUNTERSIGN_TEST_POSTGRES naming it; the cluster and its data are gone afterwards.
# PostgreSQL refuses to run as root: as root, the cluster runs as the `postgres` system user
# that Debian's package makes.
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bin" ]; then
  echo "with-postgres: PostgreSQL is not installed (Debian: apt-get install postgresql)" >&2
  exit 1
fi
as_owner=()
if [ "$(id -u)" = 0 ]; then
  as_owner=(runuser -u postgres --)
fi
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
if [ "${#as_owner[@]}" -gt 0 ]; then
  chown postgres "$dir"
fi
stop() {
  "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT
"${as_owner[@]}" "$bin/initdb" -D "$dir/data" -A trust -U countersign --locale=C.UTF-8 >/dev/null
# Durability buys nothing in a cluster that is deleted at the end.
if ! "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -o "-p $port -k $dir \
    -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off \
    -c synchronous_commit=off -c full_page_writes=off" start >/dev/null; then
  echo "with-postgres: the cluster did not start:" >&2
  cat "$dir/log" >&2
  exit 1
fi
export COUNTERSIGN_TEST_POSTGRES="postgres://countersign@127.0.0.1:$port/postgres"
# A failure's cause may be the server's (a full disk, a crash): its log's end and the disk say so.
status=0
"$@" || status=$?
if [ "$status" != 0 ]; then
  echo "with-postgres: the command failed ($status); the server's log ends:" >&2
  tail -n 40 "$dir/log" >&2
  df -h "$dir" >&2
fi
exit "$status"
