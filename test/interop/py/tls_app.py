"""Celery 5.2.6 app for test/interop/tls.test.ts, configured for TLS as Celery documents it.

Redis: the rediss:// URL carries ssl_cert_reqs, ssl_ca_certs, ssl_certfile and
ssl_keyfile. RabbitMQ: broker_use_ssl holds ca_certs, certfile, keyfile and
cert_reqs. Broker, backend, queue and the broker_use_ssl paths come from the
environment, so each run has its own.
"""
import json
import os
import ssl

from celery import Celery

app = Celery('tlsproj', broker=os.environ['TSQ_TLS_BROKER'], backend=os.environ['TSQ_TLS_BACKEND'])
app.conf.task_default_queue = os.environ['TSQ_TLS_QUEUE']

_use_ssl = os.environ.get('TSQ_TLS_BROKER_USE_SSL')
if _use_ssl:
    settings = json.loads(_use_ssl)
    settings['cert_reqs'] = {'required': ssl.CERT_REQUIRED, 'optional': ssl.CERT_OPTIONAL, 'none': ssl.CERT_NONE}[settings.get('cert_reqs', 'required')]
    app.conf.broker_use_ssl = settings


@app.task(name='tls.add')
def add(x, y):
    return x + y


@app.task(name='tls.who')
def who():
    return 'python'
