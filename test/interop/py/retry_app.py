"""Celery 5.2.6 app for the dashboard's retry test: result_extended on, so the
backend keeps each task's args and kwargs as the message carried them, and a
task that returns the repr of what it was called with."""
import os

from celery import Celery

app = Celery(
    'proj',
    broker=os.environ['TSQ_INTEROP_BROKER'],
    backend=os.environ['TSQ_INTEROP_BACKEND'],
)
app.conf.task_default_queue = os.environ['TSQ_INTEROP_QUEUE']
app.conf.result_extended = True


@app.task(name='proj.echo_repr')
def echo_repr(*args, **kwargs):
    return repr((args, kwargs))
