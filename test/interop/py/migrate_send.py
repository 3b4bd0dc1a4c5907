"""Sends N proj.add tasks with Celery 5.2.6 to TSQ_INTEROP_QUEUE on TSQ_INTEROP_BROKER.

Every 10th has a priority, every 50th a 3-second countdown (an ETA). Prints
the ids as one JSON list, for `tsq migrate` tests and bench/migrate.
"""
import json
import os
import sys

from tasks import add, app

n = int(sys.argv[1])
ids = []
with app.producer_or_acquire() as producer:
    for i in range(n):
        options = {}
        if i % 10 == 0:
            options['priority'] = 5
        if i % 50 == 0:
            options['countdown'] = 3
        ids.append(add.apply_async((i, i), producer=producer, **options).id)
    # Celery publishes without confirms, and a process that exits right after
    # its last publish can lose the tail of them on a busy RabbitMQ (9,867 of
    # 10,000 arrived once). A synchronous method on the same channel returns
    # only after the broker has handled every frame sent before it.
    producer.channel.queue_declare(queue=os.environ['TSQ_INTEROP_QUEUE'], passive=True)
print(json.dumps(ids))
