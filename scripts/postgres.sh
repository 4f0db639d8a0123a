#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server on 127.0.0.1 for the tests (the
# PostgreSQL state backend is tested against a real server, never a fake).
#
#   scripts/postgres.sh [PORT]      (default: a free port)
#
# Installs Debian's `postgresql` package when its binaries are missing,
# runs `initdb` into a fresh temp directory and `pg_ctl start` as the
# `postgres` user (the server refuses to run as root), with password
# authentication for a `gpuform` role, and prints a URL on stdout:
#
#   export GPUFORM_TEST_PG_URL=$(scripts/postgres.sh)
#
# The password is in the URL (a test server only). With GPUFORM_PG_DATADIR_FILE
# set, the data directory is written to that file; stop the server with
#   runuser -u postgres -- "$(pg_bin)/pg_ctl" -D DIR stop -m fast
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }

if [ -z "$(pg_bin)" ] || [ ! -x "$(pg_bin)/initdb" ]; then
  log "installing Debian's postgresql package"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
BIN="$(pg_bin)"
[ -x "$BIN/initdb" ] || { log "no initdb under /usr/lib/postgresql/*/bin"; exit 1; }
id postgres >/dev/null 2>&1 || { log "no postgres user (the package creates it)"; exit 1; }

PORT="${1:-}"
if [ -z "$PORT" ]; then
  PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
fi
case "$PORT" in ''|*[!0-9]*) log "port must be a number, got '$PORT'"; exit 2 ;; esac

DIR="$(mktemp -d /tmp/gpuform-pg.XXXXXX)"
chown postgres:postgres "$DIR"
chmod 700 "$DIR"
PASSWORD="gpuform-test-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
PWFILE="$DIR/.pw"
printf '%s\n' "$PASSWORD" >"$PWFILE"
chown postgres:postgres "$PWFILE"

runuser -u postgres -- "$BIN/initdb" -D "$DIR/data" -U postgres --auth-local=trust \
  --auth-host=scram-sha-256 --pwfile="$PWFILE" -E UTF8 >"$DIR/initdb.log" 2>&1 \
  || { log "initdb failed:"; cat "$DIR/initdb.log" >&2; exit 1; }
rm -f "$PWFILE"

# In postgresql.conf rather than on the command line, so that a plain
# `pg_ctl -D DIR/data start` brings it back the same (tests stop and restart it).
cat >>"$DIR/data/postgresql.conf" <<CONF
port = $PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DIR'
fsync = off
max_connections = 200
CONF
runuser -u postgres -- "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 30 start >&2 \
  || { log "pg_ctl start failed:"; cat "$DIR/server.log" >&2; exit 1; }

runuser -u postgres -- "$BIN/psql" -q -h "$DIR" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 \
  -c "CREATE ROLE gpuform LOGIN PASSWORD '$PASSWORD'" \
  -c "CREATE DATABASE gpuform OWNER gpuform" >&2

log "PostgreSQL ready on 127.0.0.1:$PORT (data $DIR/data ; stop: runuser -u postgres -- $BIN/pg_ctl -D $DIR/data stop -m fast)"
if [ -n "${GPUFORM_PG_DATADIR_FILE:-}" ]; then echo "$DIR/data" >"$GPUFORM_PG_DATADIR_FILE"; fi
echo "postgres://gpuform:${PASSWORD}@127.0.0.1:${PORT}/gpuform"
