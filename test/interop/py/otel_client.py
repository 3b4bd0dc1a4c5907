"""Python Celery 5.2.6 as a traced client, writing the trace context exactly
where opentelemetry-instrumentation-celery writes it: its before_task_publish
receiver injects into the message's headers dict, which Celery sends as the
top-level protocol-2 headers; apply_async(headers=...) lands there too.

usage (env TSQ_WI_BROKER, TSQ_WI_BACKEND, TSQ_WI_QUEUE):
  otel_client.py send NAME ARGS_JSON TRACEPARENT BAGGAGE TIMEOUT -> {"id", "result"}
"""
import json
import os
import sys

from celery import Celery

app = Celery('proj', broker=os.environ['TSQ_WI_BROKER'], backend=os.environ['TSQ_WI_BACKEND'])
app.conf.task_default_queue = os.environ['TSQ_WI_QUEUE']


def main(argv):
    cmd = argv[0]
    if cmd != 'send':
        raise SystemExit('unknown command %r' % cmd)
    name, args, traceparent, baggage, timeout = argv[1], json.loads(argv[2]), argv[3], argv[4], float(argv[5])
    headers = {'traceparent': traceparent}
    if baggage:
        headers['baggage'] = baggage
    result = app.send_task(name, args=args, headers=headers)
    value = result.get(timeout=timeout)
    print(json.dumps({'id': result.id, 'result': value}))


if __name__ == '__main__':
    main(sys.argv[1:])
