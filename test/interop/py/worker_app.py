"""Celery 5.2.6 app for the tsq-worker interop tests (test/interop/worker-*.test.ts).

The client side of the tests: Python sends these task names and a tsq worker
serves them (test/fixtures/tasks/interop-tasks.js registers the same names).
The bodies below only run on the Python worker of the mixed-cluster test.
Broker, backend and default queue come from the environment so each run has
its own queue and never takes work from other runs on the shared brokers.
"""
import os
import time

from celery import Celery

app = Celery(
    'proj',
    broker=os.environ.get('TSQ_WI_BROKER', 'redis://127.0.0.1:6379/0'),
    # An empty TSQ_WI_BACKEND means no result backend (the throughput bench).
    backend=os.environ.get('TSQ_WI_BACKEND', 'redis://127.0.0.1:6379/1') or None,
)

_queue = os.environ.get('TSQ_WI_QUEUE')
if _queue:
    app.conf.task_default_queue = _queue
app.conf.worker_direct = bool(os.environ.get('TSQ_WI_WORKER_DIRECT'))


@app.task(name='proj.add')
def add(x, y):
    return x + y


@app.task(name='proj.mul')
def mul(x, y):
    return x * y


@app.task(name='proj.fail')
def fail(msg):
    raise TypeError(msg)


@app.task(name='proj.sleep')
def sleep(seconds):
    time.sleep(seconds)
    return seconds


@app.task(name='proj.now')
def now():
    return time.time()


@app.task(name='proj.whoami', bind=True)
def whoami(self):
    return self.request.hostname


@app.task(name='proj.noop')
def noop():
    return None


@app.task(name='proj.tsum')
def tsum(numbers):
    return sum(numbers)


@app.task(name='proj.collect')
def collect(values):
    """A chord body that shows the order its header's results came in."""
    return values
