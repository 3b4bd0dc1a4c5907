#!/usr/bin/env bash
# Runs Celery 5.2.6's own integration suite (t/integration: test_canvas.py,
# test_tasks.py, test_inspect.py) against Celery's in-process worker and against
# a tsq worker (`tsq worker -A test/celery-suite/tasks.js -c 1 -P prefork -E`),
# then prints a table of both and the tests whose outcomes differ.
#
#   CELERY_SRC=/tmp/celery-5.2.6 test/celery-suite/run.sh [celery|tsq|both] [pytest args...]
#
# CELERY_SRC is a checkout of Celery at v5.2.6 (only its t/ is read, never
# written: `git archive v5.2.6 t | tar -x -C /tmp/celery-5.2.6`). Without it
# this lane says so and exits 0. Brokers (each side its own vhost and Redis db):
#   CELERY_SUITE_AMQP_CELERY, CELERY_SUITE_AMQP_TSQ   amqp://user:pass@host:port/vhost
#   CELERY_SUITE_REDIS                                  redis://host:port (dbs 1-4 are used)
# Defaults: TSQ_TEST_AMQP_URL and TSQ_TEST_REDIS_URL for both; when both sides
# share a vhost they run one after the other, else side by side.
# CELERY_SUITE_TSQ_ARGS adds tsq worker flags (--early-ack: Celery's default
# acks, which test_inspect's active/query_task read).
# The tsq app's conf has Celery's test settings, broker_heartbeat 0 among them
# (test_conf reads the key); CELERY_SUITE_BROKER_HEARTBEAT=N gives another
# value, CELERY_SUITE_BROKER_HEARTBEAT= (empty) leaves it out.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PYTHON="${CELERY_SUITE_PYTHON:-/usr/bin/python3}"

if [[ -z "${CELERY_SRC:-}" ]]; then
  echo "celery-suite: CELERY_SRC is not set (a Celery 5.2.6 checkout); skipped"
  exit 0
fi
if [[ ! -f "$CELERY_SRC/t/integration/test_canvas.py" ]]; then
  echo "celery-suite: $CELERY_SRC/t/integration/test_canvas.py not found; CELERY_SRC must be a Celery 5.2.6 checkout" >&2
  exit 2
fi

SIDES="${1:-both}"
shift || true
FILES=(t/integration/test_canvas.py t/integration/test_tasks.py t/integration/test_inspect.py)
[[ -n "${CELERY_SUITE_FILES:-}" ]] && read -r -a FILES <<<"$CELERY_SUITE_FILES"

AMQP_DEFAULT="${TSQ_TEST_AMQP_URL:-amqp://guest:guest@127.0.0.1:5672//}"
AMQP_CELERY="${CELERY_SUITE_AMQP_CELERY:-$AMQP_DEFAULT}"
AMQP_TSQ="${CELERY_SUITE_AMQP_TSQ:-$AMQP_DEFAULT}"
REDIS_BASE="$(sed -E 's#/[0-9]*$##' <<<"${CELERY_SUITE_REDIS:-${TSQ_TEST_REDIS_URL:-redis://127.0.0.1:6379/0}}")"
OUT="${CELERY_SUITE_OUT:-$(mktemp -d /tmp/celery-suite.XXXXXX)}"
mkdir -p "$OUT"

if [[ ! -d "$REPO/dist" ]]; then
  echo "celery-suite: build tsq first (npm run build)" >&2
  exit 2
fi

# One side: its broker (Python's pyamqp:// spelling for Celery's client), its
# result backend db and the db the suite's tasks write to.
run_side() {
  local side="$1" amqp="$2" backend_db="$3" redis_db="$4"
  shift 4
  local pyamqp="py${amqp}"
  "$PYTHON" - "$amqp" "$REDIS_BASE/$backend_db" "$REDIS_BASE/$redis_db" <<'PY'
import sys
from kombu import Connection
import redis
with Connection(sys.argv[1]) as conn:
    ch = conn.channel()
    for q in ('celery',):
        try:
            ch.queue_purge(q)
        except Exception:
            ch = conn.channel()
for url in sys.argv[2:]:
    redis.StrictRedis.from_url(url).flushdb()
PY
  (
    cd "$CELERY_SRC"
    env PYTHONPATH="$HERE:$CELERY_SRC" PYTHONDONTWRITEBYTECODE=1 \
      TEST_BROKER="$pyamqp" TEST_BACKEND="$REDIS_BASE/$backend_db" \
      CELERY_SUITE_REDIS_URL="$REDIS_BASE/$redis_db" \
      CELERY_SUITE_WORKER="$side" \
      CELERY_SUITE_TSQ_BIN="$REPO/bin/run.js" CELERY_SUITE_TSQ_BROKER="$amqp" \
      CELERY_SUITE_WORKER_LOG="$OUT/$side-worker.log" \
      "$PYTHON" -m pytest -p celery.contrib.pytest -p tsq_suite_plugin -p no:cacheprovider \
        -o python_classes='test_*' -o addopts='' --timeout=300 -q -rfE \
        --junitxml="$OUT/$side.xml" "${FILES[@]}" "$@" >"$OUT/$side.log" 2>&1 || true
  )
  echo "celery-suite: $side side done ($OUT/$side.log, worker log $OUT/$side-worker.log)"
}

case "$SIDES" in
  celery) run_side celery "$AMQP_CELERY" 1 2 "$@" ;;
  tsq) run_side tsq "$AMQP_TSQ" 3 4 "$@" ;;
  both)
    if [[ "$AMQP_CELERY" == "$AMQP_TSQ" ]]; then
      run_side celery "$AMQP_CELERY" 1 2 "$@"
      run_side tsq "$AMQP_TSQ" 3 4 "$@"
    else
      run_side celery "$AMQP_CELERY" 1 2 "$@" &
      first=$!
      run_side tsq "$AMQP_TSQ" 3 4 "$@"
      wait "$first"
    fi ;;
  *) echo "celery-suite: the first argument is celery, tsq or both, not $SIDES" >&2; exit 2 ;;
esac

"$PYTHON" "$HERE/table.py" "$OUT"
