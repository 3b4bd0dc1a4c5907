"""Python (Celery 5.2.6, kombu 5.2.4, py-amqp 5.1.1) on the other side of
test/interop/amqp-int-headers.test.ts (issue 28); one JSON line per command.

Integers are compared here, in Python, or handed back tagged with their Python
type ('int:9223372036854775807', int_headers_tasks.tag), never as JSON
numbers, which JavaScript would round past 2**53.

usage (env TSQ_WI_BROKER, TSQ_WI_BACKEND, TSQ_WI_QUEUE as in worker_app.py):
  int_headers.py consume QUEUE N TIMEOUT   -> {"messages": [{"id", "headers"}]}: N messages as a plain kombu
                                              consumer reads them (headers tagged), acked
  int_headers.py send_tsq SPECS_JSON TIMEOUT -> {"items": [{"id", "got", "want", "types"} or {"id", "error"}]}:
                                              each spec {"headers", "retries", "group_index", "time_limit",
                                              "soft_time_limit"} sent as ih.echo with send_task(headers=...),
                                              its result compared with what was sent (both tagged); TIMEOUT
                                              bounds the wait for all of them
  int_headers.py send NAME ARGS_JSON HEADERS_JSON -> {"id"}: send_task(NAME, args, headers=...)
  int_headers.py dead QUEUE TIMEOUT        -> {"found", "id", "headers", "reason", "queue"}: the first message of a
                                              dead-letter queue, its x-death record's reason and queue
"""
import json
import socket
import sys
import time

from kombu import Consumer, Exchange, Queue

from int_headers_tasks import tag
from worker_app import app


def out(obj):
    print(json.dumps(obj), flush=True)


def cmd_consume(queue, n, timeout):
    got = []
    deadline = time.monotonic() + float(timeout)
    with app.connection_for_read() as conn:
        # The queue as Celery declares it, so the declare is a no-op.
        q = Queue(queue, Exchange(queue, 'direct'), queue)

        def on_message(message):
            got.append({'id': message.headers.get('id'), 'headers': tag(message.headers)})
            message.ack()

        with Consumer(conn, queues=[q], on_message=on_message, accept=['json']):
            while len(got) < int(n) and time.monotonic() < deadline:
                try:
                    conn.drain_events(timeout=max(0.1, deadline - time.monotonic()))
                except socket.timeout:
                    break
    out({'messages': got})


def cmd_send_tsq(specs_json, timeout):
    sent = []
    for spec in json.loads(specs_json):
        res = app.send_task('ih.echo', headers=spec['headers'], retries=spec.get('retries', 0),
                            group_index=spec.get('group_index'), time_limit=spec.get('time_limit'),
                            soft_time_limit=spec.get('soft_time_limit'))
        sent.append((res, spec))
    items = []
    deadline = time.monotonic() + float(timeout)
    for res, spec in sent:
        remaining = deadline - time.monotonic()
        # Past the deadline, only what is ready is read: a worker that lost them all fails fast.
        if remaining <= 0 and not res.ready():
            items.append({'id': res.id, 'error': 'no result within %s s (%s)' % (timeout, res.state)})
            continue
        try:
            result = res.get(timeout=max(0.1, remaining))
        except Exception as exc:  # the point: what went wrong, for the test's message
            items.append({'id': res.id, 'error': '%s: %s' % (type(exc).__name__, exc)})
            continue
        items.append({
            'id': res.id,
            'got': {'headers': tag(result['headers']), 'retries': tag(result['retries'])},
            'want': {'headers': tag(spec['headers']), 'retries': tag(spec.get('retries', 0))},
            'types': result['types'],
        })
    out({'items': items})


def cmd_send(name, args_json, headers_json):
    out({'id': app.send_task(name, args=json.loads(args_json), headers=json.loads(headers_json)).id})


def cmd_dead(queue, timeout):
    deadline = time.monotonic() + float(timeout)
    message = None
    with app.connection_for_read() as conn:
        channel = conn.default_channel
        while message is None and time.monotonic() < deadline:
            message = channel.basic_get(queue, no_ack=True)
            if message is None:
                time.sleep(0.1)
    if message is None:
        out({'found': False})
        return
    headers = message.headers or {}
    death = (headers.get('x-death') or [{}])[0]
    out({'found': True, 'id': headers.get('id'),
         'headers': {k: tag(v) for k, v in headers.items() if k.startswith('ih_')},
         'reason': death.get('reason'), 'queue': death.get('queue')})


COMMANDS = {'consume': cmd_consume, 'send_tsq': cmd_send_tsq, 'send': cmd_send, 'dead': cmd_dead}

if __name__ == '__main__':
    COMMANDS[sys.argv[1]](*sys.argv[2:])
