"""Celery 5.2.6 twin of test/fixtures/tasks/conn-loss-tasks.js, for interop tests
where a Python worker and a tsq worker share one queue (issue 32).

closs.work(key, ms) records in Redis exactly what the JS task records, under the
test's key: the id in `<key>:started` when it starts, then (after sleeping ms)
in one MULTI: `<key>:runs` (hash id -> count) +1, the end time in ms appended
to `<key>:at:<id>`, and the id in `<key>:done`. So a test can tell a task run
twice from one run once late, whichever worker ran it.

Broker from TSQ_CLOSS_BROKER, Redis from TSQ_LOSS_REDIS_URL (the JS fixture's
variable). No result backend: the Redis records are the outcome.

Also a client, so a test can send with Python's own send_task:
    python3 closs_tasks.py send <queue> <key> <ms> <countdown> <id>...
prints one JSON line {"sent": [{"id", "before", "after"}...]}, the times in ms
taken just before and after each publish (the ETA Celery wrote lies between
them plus the countdown).
"""
import json
import os
import sys
import time

import redis
from celery import Celery

app = Celery(
    'closs',
    broker=os.environ.get('TSQ_CLOSS_BROKER', 'amqp://guest:guest@127.0.0.1:5672//'),
)

_redis = None


def _client():
    # Made lazily, so each prefork child opens its own connection after the fork.
    global _redis
    if _redis is None:
        _redis = redis.Redis.from_url(os.environ.get('TSQ_LOSS_REDIS_URL', 'redis://127.0.0.1:6379/0'))
    return _redis


@app.task(name='closs.work', bind=True)
def work(self, key, ms):
    task_id = self.request.id
    r = _client()
    r.sadd('%s:started' % key, task_id)
    if ms > 0:
        time.sleep(ms / 1000.0)
    pipe = r.pipeline(transaction=True)
    pipe.hincrby('%s:runs' % key, task_id, 1)
    pipe.rpush('%s:at:%s' % (key, task_id), str(int(time.time() * 1000)))
    pipe.sadd('%s:done' % key, task_id)
    pipe.execute()
    return task_id


def _send(queue, key, ms, countdown, ids):
    sent = []
    with app.producer_or_acquire() as producer:
        for task_id in ids:
            before = int(time.time() * 1000)
            app.send_task('closs.work', args=[key, ms], task_id=task_id, countdown=countdown, queue=queue, producer=producer)
            sent.append({'id': task_id, 'before': before, 'after': int(time.time() * 1000)})
    print(json.dumps({'sent': sent}))


if __name__ == '__main__':
    if len(sys.argv) < 6 or sys.argv[1] != 'send':
        sys.exit('usage: closs_tasks.py send <queue> <key> <ms> <countdown> <id>...')
    _send(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), sys.argv[6:])
