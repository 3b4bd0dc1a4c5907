"""The Python worker of the interop chain: py.relay sends tsq.add to the tsq
worker's queue from inside the task and returns its id. Instrumented at import
(the worker runs -P solo, so the signals fire in this process)."""
import os

from celery import Celery

from otel_setup import setup

app = Celery('interop', broker=os.environ['OTEL_BROKER'], backend=os.environ['OTEL_BACKEND'])
app.conf.task_default_queue = os.environ['OTEL_PY_QUEUE']
setup()


# The instrumentation ends an apply_async span in after_task_publish only for a
# task it finds in the registry (utils.retrieve_task_from_sender): a send_task
# of a name this process does not have leaves its span open, never exported, and
# current for what follows. Stubs of the tsq tasks' names let it close them.
@app.task(name='tsq.relay')
def _tsq_relay(*args):
    raise NotImplementedError('runs on the tsq worker')


@app.task(name='tsq.add')
def _tsq_add(*args):
    raise NotImplementedError('runs on the tsq worker')


@app.task(name='py.relay')
def relay(x, y):
    return app.send_task('tsq.add', args=[x, y], queue=os.environ['OTEL_TSQ_QUEUE']).id
