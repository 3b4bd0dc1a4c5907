"""Celery 5.2.6 app used by tsq's interop tests and benches.

Broker, result backend and default queue come from the environment so that
each test run can use its own queue and never steal work from other runs
sharing the same brokers.
"""
import os
import time

from celery import Celery

app = Celery(
    'proj',
    broker=os.environ.get('TSQ_INTEROP_BROKER', 'redis://127.0.0.1:6379/0'),
    backend=os.environ.get('TSQ_INTEROP_BACKEND', 'redis://127.0.0.1:6379/1'),
)

_queue = os.environ.get('TSQ_INTEROP_QUEUE')
if _queue:
    app.conf.task_default_queue = _queue


@app.task(name='proj.add')
def add(x, y):
    return x + y


@app.task(name='proj.fail')
def fail(msg):
    raise ValueError(msg)


@app.task(name='proj.sleep')
def sleep(seconds):
    time.sleep(seconds)
    return seconds


@app.task(name='proj.tsum')
def tsum(numbers):
    return sum(numbers)


@app.task(name='proj.mul')
def mul(x, y):
    return x * y


@app.task(name='proj.collect')
def collect(values):
    """A chord body that shows the order its header's results came in."""
    return values
