"""Sends `dedup.run` tasks from Celery 5.2.6 with the `tsq_dedup` header, for
tsq workers to deduplicate on receipt (test/interop/dedup-python-header.test.ts).

usage (env TSQ_INTEROP_BROKER, TSQ_INTEROP_QUEUE):
  dedup_send.py LIST RUN_MS HEADER_JSON PLAN_JSON -> {"label": task id, ...}

PLAN_JSON is [[label, at_ms], ...]: each send is made at_ms after the start,
with app.send_task(headers={'tsq_dedup': HEADER}).
"""
import json
import os
import sys
import time

from celery import Celery

app = Celery('dedup_send', broker=os.environ['TSQ_INTEROP_BROKER'])


def main():
    lst, run_ms, header, plan = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
    start = time.monotonic()
    ids = {}
    for label, at_ms in plan:
        wait = start + at_ms / 1000.0 - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        result = app.send_task(
            'dedup.run',
            args=[lst, label, run_ms],
            queue=os.environ['TSQ_INTEROP_QUEUE'],
            headers={'tsq_dedup': header},
        )
        ids[label] = result.id
    print(json.dumps(ids))


if __name__ == '__main__':
    main()
