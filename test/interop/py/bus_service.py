"""A service built on celery-amqp-events (the Python library, from its git
snapshot on PYTHONPATH), shaped by its environment as tsq's fixture
test/fixtures/bus/service.js is:

  BUS_SERVICE      the service name
  BUS_BROKER       the broker URL
  BUS_EVENTS       comma-separated events it handles
  BUS_LOG          a file each handler run appends one JSON line to
  BUS_FAIL_TIMES   a run fails while the event's retries are below this
  BUS_ALWAYS_FAIL  1: every run fails
  BUS_FAIL_MODULO  N: a first run fails when its first argument is a multiple of N
"""
import json
import os
import time

from amqp_events.celery import events_app

SERVICE = os.environ['BUS_SERVICE']
app = events_app(SERVICE, broker_url=os.environ['BUS_BROKER'])

LOG = os.environ.get('BUS_LOG')
FAIL_TIMES = int(os.environ.get('BUS_FAIL_TIMES', '0'))
ALWAYS_FAIL = os.environ.get('BUS_ALWAYS_FAIL') == '1'
FAIL_MODULO = int(os.environ.get('BUS_FAIL_MODULO', '0'))


def record(entry):
    if LOG:
        with open(LOG, 'a') as f:
            f.write(json.dumps(entry) + '\n')


def make_handler(event):
    def handler(self, *args, **kwargs):
        retries = self.request.retries
        fail = ALWAYS_FAIL or retries < FAIL_TIMES or (
            FAIL_MODULO > 0 and retries == 0 and args and isinstance(args[0], int) and args[0] % FAIL_MODULO == 0)
        record({'service': SERVICE, 'lang': 'py', 'pid': os.getpid(), 'at': int(time.time() * 1000),
                'event': event, 'id': self.request.id, 'retries': retries, 'args': list(args),
                'kwargs': kwargs, 'ok': not fail})
        if fail:
            raise ValueError(f'python handler of {event} failed on purpose (retries={retries})')
        return 'done'
    handler.__name__ = 'on_' + event.replace('.', '_').replace('-', '_')
    handler.__qualname__ = handler.__name__
    return handler


for _event in filter(None, os.environ.get('BUS_EVENTS', '').split(',')):
    app.handler(_event, bind=True)(make_handler(_event))
