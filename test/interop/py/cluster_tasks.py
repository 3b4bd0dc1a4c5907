"""Celery 5.2.6 twin of test/fixtures/tasks/cluster-tasks.js, for the RabbitMQ
cluster test: a Python worker and client on the same quorum queue as tsq's
workers, given the same failover list (TSQ_CLUSTER_BROKER, `url1;url2;url3`).

cluster.work(key, ms) records each run as the JS task does: the id in
`<key>:started`, then `<key>:runs` (hash id -> count) +1 and the id in
`<key>:done`.

Celery 5.2.6 predates quorum queues (5.5's task_default_queue_type and
worker_detect_quorum_queues), so the queue is declared with its
x-queue-type argument by hand, and RabbitMQ's refusal of global QoS on a
quorum queue is met the way users of 5.2 met it: kombu is told the broker
keeps AMQP's QoS semantics, so Celery asks for per-consumer QoS.

Also a client:  python3 cluster_tasks.py send <key> <ms> <id>...
"""
import os
import sys

import redis
from celery import Celery
from kombu import Queue
from kombu.transport import pyamqp

QUEUE = os.environ.get('TSQ_CLUSTER_QUEUE', 'tsq-cluster')

pyamqp.Transport.qos_semantics_matches_spec = lambda self, connection: True

app = Celery('cluster', broker=os.environ['TSQ_CLUSTER_BROKER'])
app.conf.task_default_queue = QUEUE
app.conf.task_queues = [Queue(QUEUE, routing_key=QUEUE, queue_arguments={'x-queue-type': 'quorum'})]
app.conf.broker_connection_retry_on_startup = True

_redis = None


def _client():
    global _redis
    if _redis is None:
        _redis = redis.Redis.from_url(os.environ['TSQ_LOSS_REDIS_URL'])
    return _redis


@app.task(name='cluster.work', bind=True)
def work(self, key, ms):
    r = _client()
    r.sadd(f'{key}:started', self.request.id)
    if ms > 0:
        import time
        time.sleep(ms / 1000)
    pipe = r.pipeline()
    pipe.hincrby(f'{key}:runs', self.request.id, 1)
    pipe.sadd(f'{key}:done', self.request.id)
    pipe.execute()


if __name__ == '__main__' and len(sys.argv) > 3 and sys.argv[1] == 'send':
    key, ms, ids = sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    with app.producer_or_acquire() as producer:
        for task_id in ids:
            app.send_task('cluster.work', args=[key, ms], task_id=task_id, queue=QUEUE, producer=producer)
    print(len(ids))
