#!/usr/bin/env bash
# Starts moto's EC2/S3/DynamoDB server on 127.0.0.1 for the tests.
#
#   scripts/moto.sh [PORT]        (default 5555)
#
# Idempotent: creates .venv-moto in the repo root with a pinned moto once,
# reuses a server already answering on PORT, otherwise starts one in the
# background (log in .venv-moto/moto-PORT.log, pid in .venv-moto/moto-PORT.pid),
# waits until it is ready and prints its URL on stdout, e.g.
#
#   export GPUFORM_TEST_MOTO_URL=$(scripts/moto.sh 5555)
#
# Stop it with: kill "$(cat .venv-moto/moto-5555.pid)"
set -euo pipefail

MOTO_VERSION="5.2.5"
PORT="${1:-5555}"
HOST="127.0.0.1"
URL="http://${HOST}:${PORT}"

case "$PORT" in
  ''|*[!0-9]*) echo "moto.sh: port must be a number, got '$PORT'" >&2; exit 2 ;;
esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-moto"
PYTHON="${PYTHON:-python3}"

log() { echo "moto.sh: $*" >&2; }

ready() { curl -fsS -o /dev/null --max-time 2 "$URL/moto-api/" 2>/dev/null; }

if ! command -v curl >/dev/null 2>&1; then
  log "curl is needed to check that the server is ready"; exit 1
fi

# 1. The venv, with the pinned moto (skipped when already there).
if [ ! -x "$VENV/bin/moto_server" ] \
   || [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("moto"))' 2>/dev/null || true)" != "$MOTO_VERSION" ]; then
  log "installing moto $MOTO_VERSION into $VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "moto[server,ec2,s3,dynamodb]==$MOTO_VERSION" >&2
fi

# 2. A server already answering on that port is reused.
if ready; then
  log "moto already answers on $URL"
  echo "$URL"
  exit 0
fi

# 3. Start it, detached from this shell, with validation on so that bad
#    instance types and AMI ids are errors as on AWS.
LOGFILE="$VENV/moto-$PORT.log"
PIDFILE="$VENV/moto-$PORT.pid"
MOTO_EC2_ENABLE_INSTANCE_TYPE_VALIDATION=true \
MOTO_ENABLE_AMI_VALIDATION=true \
  nohup "$VENV/bin/moto_server" -H "$HOST" -p "$PORT" >"$LOGFILE" 2>&1 </dev/null &
echo $! >"$PIDFILE"

# 4. Wait until it is ready (at most ~30 s).
for _ in $(seq 1 150); do
  if ready; then
    log "moto $MOTO_VERSION ready on $URL (pid $(cat "$PIDFILE"), log $LOGFILE)"
    echo "$URL"
    exit 0
  fi
  if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
    log "moto_server exited; its log:"; cat "$LOGFILE" >&2; exit 1
  fi
  sleep 0.2
done
log "moto did not become ready on $URL within 30 s; log: $LOGFILE"
exit 1
