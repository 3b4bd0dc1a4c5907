"""The peer side of bench/producer.ts: Celery 5.2.6's own send path,
app.send_task awaited one at a time (Celery's producer is synchronous), timed
in-process; prints {"sends": N, "seconds": s}.

  python3 bench/peers/producer_send.py BROKER_URL QUEUE N confirm|noconfirm
"""
import json
import sys
import time

from celery import Celery

broker, queue, n, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
app = Celery('bench', broker=broker)
app.conf.task_default_queue = queue
if mode == 'confirm':
    # kombu waits for RabbitMQ's publisher confirm on every publish.
    app.conf.broker_transport_options = {'confirm_publish': True}
# One untimed send: the connection, the channel and the queue's declaration.
app.send_task('proj.noop', args=[-1])
start = time.perf_counter()
for i in range(n):
    app.send_task('proj.noop', args=[i])
elapsed = time.perf_counter() - start
print(json.dumps({'sends': n, 'seconds': elapsed}))
