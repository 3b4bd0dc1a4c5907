"""Celery 5.2.6 app for the signing and serializer interop tests.

Settings come as JSON in TSQ_SEC_CONF (task_serializer, accept_content,
result_serializer, result_accept_content, security_*), so the Python side and
the tsq side (test/fixtures/tasks/security-tasks.js) read the same ones.
With task_serializer 'auth' the app calls setup_security(), as Celery's docs
say, with TSQ_SEC_INNER as the serializer inside the signed envelope.
"""
import json
import os

from celery import Celery

app = Celery('sec', broker=os.environ['TSQ_SEC_BROKER'], backend=os.environ['TSQ_SEC_BACKEND'])
app.conf.update(json.loads(os.environ.get('TSQ_SEC_CONF', '{}')))
app.conf.task_default_queue = os.environ['TSQ_SEC_QUEUE']
if app.conf.task_serializer == 'auth':
    app.setup_security(serializer=os.environ.get('TSQ_SEC_INNER', 'json'))


@app.task(name='sec.add')
def add(x, y):
    return x + y


@app.task(name='sec.echo')
def echo(value):
    return value
