"""The Python worker of the interop chain: py.relay sends tsq.add to the tsq
worker's queue from inside the task and returns its id. Instrumented at import
(the worker runs -P solo, so the signals fire in this process)."""
import os

from celery import Celery

from otel_setup import setup

app = Celery('interop', broker=os.environ['OTEL_BROKER'], backend=os.environ['OTEL_BACKEND'])
app.conf.task_default_queue = os.environ['OTEL_PY_QUEUE']
setup()


@app.task(name='py.relay')
def relay(x, y):
    return app.send_task('tsq.add', args=[x, y], queue=os.environ['OTEL_TSQ_QUEUE']).id
