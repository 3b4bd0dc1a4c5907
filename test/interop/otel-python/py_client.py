"""The Python client of the interop chain: inside a span of its own, sends
tsq.relay to the tsq worker (which sends py.relay on to the Python worker, which
sends tsq.add back), and prints the ids of the chain as JSON."""
import json
import os
import sys

from celery import Celery

from otel_setup import setup

app = Celery('interop', broker=os.environ['OTEL_BROKER'], backend=os.environ['OTEL_BACKEND'])
tracer = setup()


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

with tracer.start_as_current_span('py-client'):
    first = app.send_task('tsq.relay', args=[2, 3], queue=os.environ['OTEL_TSQ_QUEUE'])
py_id = first.get(timeout=30)
tsq_id = app.AsyncResult(py_id).get(timeout=30)
print(json.dumps({'relay': first.id, 'py': py_id, 'add': tsq_id}))
sys.stdout.flush()
os._exit(0)
