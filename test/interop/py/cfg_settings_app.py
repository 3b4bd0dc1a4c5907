"""Celery 5.2.6 twin of test/fixtures/tasks/cfg-settings-app.js (issue 30): the
same settings, as a Python shop writes them. Names carry CFG_ID.

cfg.record(tag) appends "<tag>:python" to the Redis list cfg-runs-<CFG_ID>.

Also a client: python3 cfg_settings_app.py send ITEM... sends cfg.record for
each, in order: <tag>:<priority> to the default queue with that priority
(<tag>:- for none: task_default_priority then applies, through
Task.apply_async), <tag>@<routing key> to the topic exchange with that key.
Prints {"sent": n}.
"""
import json
import os
import sys

import redis
from celery import Celery
from kombu import Exchange, Queue, binding

ID = os.environ.get('CFG_ID', 'local')
PRIO = 'cfg-prio-' + ID
TOPIC = 'cfg-topic-' + ID
BROKER = os.environ.get('CFG_BROKER', 'amqp://guest:guest@127.0.0.1:5672//')

app = Celery('cfg', broker=BROKER)
topic = Exchange(TOPIC, type='topic')
app.conf.task_default_queue = PRIO
app.conf.task_default_priority = 3
app.conf.task_queues = [
    Queue(PRIO, Exchange(PRIO), routing_key=PRIO, queue_arguments={'x-max-priority': 10}),
    Queue(TOPIC, [binding(topic, routing_key='a.*'), binding(topic, routing_key='b.*')]),
]
app.conf.task_annotations = {'cfg.record': {'rate_limit': '600/m'}}
if BROKER.startswith('redis'):
    # Every layout option kombu 5.2.4 reads, none at its default: a prefixed
    # Redis shared with other services, two priority steps, another separator,
    # queues served in the order given, fanout channels of the app's own prefix
    # without routing keys.
    app.conf.broker_transport_options = {
        'visibility_timeout': 300,
        'global_keyprefix': os.environ['CFG_KEYPREFIX'],
        'priority_steps': [0, 5],
        'sep': ':',
        'queue_order_strategy': 'priority',
        'fanout_prefix': '/cfg{db}.',
        'fanout_patterns': False,
    }

_client = None


@app.task(name='cfg.record')
def record(tag):
    global _client
    if _client is None:
        _client = redis.Redis.from_url(os.environ.get('CFG_REDIS', 'redis://127.0.0.1:6379/11'))
    _client.rpush('cfg-runs-' + ID, tag + ':python')
    return tag


if __name__ == '__main__':
    # send <tag>:<priority|-> (the default queue) or <tag>@<routing key> (the topic exchange), in order.
    for item in sys.argv[2:]:
        if '@' in item:
            tag, _, key = item.partition('@')
            # declare: kombu's Redis transport routes by the exchange type its own
            # client declared (an undeclared exchange counts as direct, and a topic
            # key then matches no binding), so the sender declares the queue, with
            # its bindings, as a Python shop sending there on Redis must.
            record.apply_async((tag,), exchange=TOPIC, routing_key=key, declare=[app.amqp.queues[TOPIC]])
        else:
            tag, _, prio = item.partition(':')
            if prio == '-':
                record.apply_async((tag,))
            else:
                record.apply_async((tag,), priority=int(prio))
    print(json.dumps({'sent': len(sys.argv) - 2}))
