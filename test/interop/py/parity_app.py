"""Celery 5.2.6 app for test/interop/celery-parity.test.ts.

The same task names as test/fixtures/tasks/parity-tasks.js, so one client
(parity_client.py) can send a scenario to a Python worker and to a tsq worker
and compare: what a task reads of its request, Task.replace, the hooks a
result that cannot be encoded runs, setup_logging. Broker, backend and default
queue come from the environment (PARITY_BROKER, PARITY_BACKEND, PARITY_QUEUE).
"""
import copy
import json
import os

from celery import Celery, Task, chain, group
from celery import signals

app = Celery(
    'proj',
    broker=os.environ.get('PARITY_BROKER', 'redis://127.0.0.1:6379/0'),
    backend=os.environ.get('PARITY_BACKEND', 'redis://127.0.0.1:6379/1'),
)
if os.environ.get('PARITY_QUEUE'):
    app.conf.task_default_queue = os.environ['PARITY_QUEUE']


def record(path_env, entry):
    path = os.environ.get(path_env)
    if path:
        with open(path, 'a') as f:
            f.write(json.dumps(entry) + '\n')


@app.task(name='proj.ctx', bind=True)
def ctx(self, *args):
    r = self.request
    # A copy: the trace pops the chain's next step off request.chain before the result is stored.
    return copy.deepcopy({
        'delivery_info': r.delivery_info, 'eta': r.eta, 'expires': r.expires, 'reply_to': r.reply_to,
        'group': r.group, 'group_index': r.group_index, 'callbacks': r.callbacks, 'errbacks': r.errbacks,
        'chain': r.chain, 'chord': r.chord,
    })


@app.task(name='proj.add')
def add(x, y):
    return x + y


@app.task(name='proj.mul')
def mul(x, y):
    return x * y


@app.task(name='proj.tsum')
def tsum(numbers):
    return sum(numbers)


@app.task(name='proj.collect')
def collect(values):
    return values


@app.task(name='proj.noop')
def noop(*args):
    return None


@app.task(name='proj.echo')
def echo(value):
    # One argument: Celery sends an errback of at most one as a task (one of more
    # is called in the worker with the old (request, exc, traceback) signature).
    return value


@app.task(name='proj.fail')
def fail(message):
    raise ValueError(message)


def _to(sig, queue):
    return sig.set(queue=queue) if queue else sig


@app.task(name='proj.rep_add', bind=True)
def rep_add(self, x, y, queue=None):
    return self.replace(_to(add.s(x, y), queue))


@app.task(name='proj.rep_fail', bind=True)
def rep_fail(self, message, queue=None):
    return self.replace(_to(fail.s(message), queue))


@app.task(name='proj.rep_chain', bind=True)
def rep_chain(self, x, queue=None):
    return self.replace(chain(_to(add.s(x, 1), queue), _to(mul.s(10), queue)))


@app.task(name='proj.rep_group', bind=True)
def rep_group(self, n, queue=None):
    return self.replace(group(_to(add.s(i, i), queue) for i in range(n)))


class Hooked(Task):
    """Records Celery's handlers in the order the trace calls them."""

    def on_success(self, retval, task_id, args, kwargs):
        record('PARITY_HOOKS', 'on_success')

    def on_failure(self, exc, task_id, args, kwargs, einfo):
        record('PARITY_HOOKS', f'on_failure {type(exc).__name__}')

    def after_return(self, status, retval, task_id, args, kwargs, einfo):
        record('PARITY_HOOKS', f'after_return {status} {type(retval).__name__}')


@app.task(name='proj.unencodable', base=Hooked)
def unencodable():
    return {'f': object()}


@signals.task_success.connect
def _on_success(sender=None, **kwargs):
    if sender.name == 'proj.unencodable':
        record('PARITY_HOOKS', 'task_success')


@signals.task_failure.connect
def _on_failure(sender=None, exception=None, **kwargs):
    if sender.name == 'proj.unencodable':
        record('PARITY_HOOKS', f'task_failure {type(exception).__name__}')


@signals.task_postrun.connect
def _on_postrun(sender=None, state=None, **kwargs):
    if sender.name == 'proj.unencodable':
        record('PARITY_HOOKS', f'task_postrun {state}')


@app.task(name='proj.print')
def say(text):
    print(text, flush=True)
    return text


if os.environ.get('PARITY_SIGNALS'):
    # The worker's start-up signals in the order sent; a setup_logging
    # receiver says the app configures logging itself.
    @signals.celeryd_init.connect
    def _celeryd_init(sender=None, **kwargs):
        record('PARITY_SIGNALS', ['celeryd_init'])

    @signals.worker_init.connect
    def _worker_init(sender=None, **kwargs):
        record('PARITY_SIGNALS', ['worker_init'])

    @signals.setup_logging.connect
    def _setup_logging(sender=None, loglevel=None, logfile=None, format=None, colorize=None, **kwargs):
        record('PARITY_SIGNALS', ['setup_logging', {'sender': sender, 'loglevel': loglevel, 'logfile': logfile, 'format': format, 'colorize': colorize}])

    @signals.celeryd_after_setup.connect
    def _after_setup(sender=None, **kwargs):
        record('PARITY_SIGNALS', ['celeryd_after_setup'])

    @signals.worker_ready.connect
    def _ready(sender=None, **kwargs):
        record('PARITY_SIGNALS', ['worker_ready'])
