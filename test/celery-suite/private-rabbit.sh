#!/usr/bin/env bash
# Runs run.sh on a RabbitMQ node of its own (a vhost per side, so Celery's
# worker and tsq's run side by side), then stops that node by its pid. For
# Celery's files beyond canvas/tasks/inspect, by default test_backend.py and
# test_security.py:
#
#   CELERY_SRC=/tmp/celery-5.2.6 test/celery-suite/private-rabbit.sh [run.sh args...]
#
# CELERY_SUITE_FILES picks other files; CELERY_SUITE_RABBIT_PORT (default 5697)
# and CELERY_SUITE_RABBIT_DIST_PORT (default 25697) are the node's ports; the
# node uses the machine's Erlang cookie (/var/lib/rabbitmq/.erlang.cookie) and
# keeps its data and logs in a temp dir that is removed afterwards.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ -z "${CELERY_SRC:-}" ]]; then
  echo "celery-suite: CELERY_SRC is not set (a Celery 5.2.6 checkout); skipped"
  exit 0
fi
SERVER=/usr/lib/rabbitmq/bin/rabbitmq-server
CTL=/usr/lib/rabbitmq/bin/rabbitmqctl
if [[ ! -x "$SERVER" ]]; then
  echo "celery-suite: $SERVER not found; a private node needs RabbitMQ installed" >&2
  exit 2
fi

PORT="${CELERY_SUITE_RABBIT_PORT:-5697}"
DIST="${CELERY_SUITE_RABBIT_DIST_PORT:-25697}"
BASE="$(mktemp -d /tmp/celery-suite-rabbit.XXXXXX)"
NODE="celery-suite-$$@localhost"
mkdir -p "$BASE/home"
ORIG_HOME="${HOME:-}"
COOKIE=/var/lib/rabbitmq/.erlang.cookie
if [[ -r "$COOKIE" ]]; then
  install -m 400 "$COOKIE" "$BASE/home/.erlang.cookie"
fi
printf 'listeners.tcp.default = 127.0.0.1:%s\nloopback_users = none\n' "$PORT" >"$BASE/rabbitmq.conf"
echo '[].' >"$BASE/enabled_plugins"
export HOME="$BASE/home" RABBITMQ_NODENAME="$NODE" RABBITMQ_NODE_PORT="$PORT" \
  RABBITMQ_DIST_PORT="$DIST" RABBITMQ_MNESIA_BASE="$BASE/mnesia" RABBITMQ_LOG_BASE="$BASE/log" \
  RABBITMQ_CONFIG_FILE="$BASE/rabbitmq.conf" RABBITMQ_ENABLED_PLUGINS_FILE="$BASE/enabled_plugins" \
  RABBITMQ_PLUGINS_EXPAND_DIR="$BASE/plugins-expand" RABBITMQ_PID_FILE="$BASE/pid"

setsid "$SERVER" >"$BASE/server.out" 2>&1 &
SERVER_PID=$!
stop_node() {
  "$CTL" -n "$NODE" stop >/dev/null 2>&1 || true
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM -- "-$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 1; done
    kill -KILL -- "-$SERVER_PID" 2>/dev/null || true
  fi
  wait "$SERVER_PID" 2>/dev/null || true
  rm -rf "$BASE"
}
trap stop_node EXIT

for _ in $(seq 1 240); do
  [[ -f "$BASE/pid" ]] && break
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "celery-suite: rabbitmq-server exited:" >&2
    tail -20 "$BASE/server.out" >&2
    exit 2
  fi
  sleep 0.5
done
"$CTL" -n "$NODE" wait --timeout 200 "$BASE/pid" >/dev/null
for vhost in celery-side tsq-side; do
  "$CTL" -n "$NODE" add_vhost "$vhost" >/dev/null
  "$CTL" -n "$NODE" set_permissions -p "$vhost" guest '.*' '.*' '.*' >/dev/null
done
echo "celery-suite: private RabbitMQ $NODE on 127.0.0.1:$PORT"

export CELERY_SUITE_AMQP_CELERY="amqp://guest:guest@127.0.0.1:$PORT/celery-side"
export CELERY_SUITE_AMQP_TSQ="amqp://guest:guest@127.0.0.1:$PORT/tsq-side"
export CELERY_SUITE_FILES="${CELERY_SUITE_FILES:-t/integration/test_backend.py t/integration/test_security.py}"
HOME="$ORIG_HOME" "$HERE/run.sh" "$@"
