"""The Python twin of test/fixtures/tasks/global-options-tasks.js.

test/e2e/cli-global-options.test.ts runs `celery -A global_options_app ...`
beside `tsq -A <that module> ...`: the broker, backend, default queue and
task_routes come from the app (set from the environment the test gives), so
a command without -b must take them from here.
"""
import os

from celery import Celery

app = Celery(
    'proj',
    broker=os.environ.get('TSQ_GO_BROKER'),
    backend=os.environ.get('TSQ_GO_BACKEND') or None,
)
if os.environ.get('TSQ_GO_QUEUE'):
    app.conf.task_default_queue = os.environ['TSQ_GO_QUEUE']
if os.environ.get('TSQ_GO_ROUTED_QUEUE'):
    app.conf.task_routes = {'proj.routed': {'queue': os.environ['TSQ_GO_ROUTED_QUEUE']}}


@app.task(name='proj.add')
def add(x, y):
    return x + y


@app.task(name='proj.routed')
def routed():
    return 'routed'
