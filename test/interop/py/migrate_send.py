"""Sends N proj.add tasks with Celery 5.2.6 to TSQ_INTEROP_QUEUE on TSQ_INTEROP_BROKER.

Every 10th has a priority, every 50th a 3-second countdown (an ETA). Prints
the ids as one JSON list, for `tsq migrate` tests and bench/migrate.
"""
import json
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
print(json.dumps(ids))
