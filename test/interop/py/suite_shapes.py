"""Python Celery 5.2.6 as the client of Celery's integration-suite tasks
(test/celery-suite/tasks.js on a tsq worker, or the same names on a Python
worker): the canvas shapes, errbacks and inspect answers of Celery's
t/integration suite, one JSON object per shape.

usage (env SHAPES_BROKER, SHAPES_BACKEND, SHAPES_QUEUE, SHAPES_REDIS):
  suite_shapes.py SHAPE [SHAPE...]   -> {"SHAPE": {...}, ...}
"""
import json
import os
import sys
import time
import uuid

import redis
from celery import Celery, chain, chord, group

app = Celery('suite_shapes', broker=os.environ['SHAPES_BROKER'], backend=os.environ['SHAPES_BACKEND'])
app.conf.task_default_queue = os.environ.get('SHAPES_QUEUE', 'celery')
app.conf.broker_connection_retry_on_startup = False
TIMEOUT = 30
R = redis.StrictRedis.from_url(os.environ['SHAPES_REDIS'])


def t(name, *args, **kwargs):
    return app.signature('t.integration.tasks.' + name, args=args, kwargs=kwargs)


def ti(name, *args, **kwargs):
    return t(name, *args, **kwargs).set(immutable=True)


def outcome(res):
    try:
        return {'value': res.get(timeout=TIMEOUT)}
    except Exception as exc:  # the type and args are what is compared
        return {'exc_type': type(exc).__name__, 'exc_args': [repr(a) for a in exc.args]}


def wait_for(fn, expected, seconds=TIMEOUT):
    deadline = time.monotonic() + seconds
    got = fn()
    while got != expected and time.monotonic() < deadline:
        time.sleep(0.1)
        got = fn()
    return got


def echoes(key='redis-echo'):
    return sorted(v.decode() for v in R.lrange(key, 0, -1))


def count(key):
    v = R.get(key)
    return int(v) if v is not None else 0


def chain_of_chord_with_chain_body():
    c = ti('add', 1, 0) | group(t('add', 1), t('add', 1)) | t('tsum') | t('add', 1) | group(t('add', 1), t('add', 1))
    return outcome(c())


def nested_group_chain():
    """test_nested_group_chain: the worker that runs add(1, 0) starts a chord whose header holds a chain ending in a group."""
    c = chain(
        ti('add', 1, 0),
        group(ti('add', 1, 100), chain(ti('add', 1, 200), group(ti('add', 1, 1000), ti('add', 1, 2000)))),
        ti('add', 1, 10),
    )
    return outcome(c())


def nested_chord_group_chain_group_tail():
    """test_nested_chord_group_chain_group_tail: the client starts the chord; the body gets the group's results nested."""
    sig = chord(group(chain(t('identity', 42), group(t('identity'), t('identity')))), t('identity'))
    return outcome(sig.delay())


def chord_header_task_and_chain_group():
    """The client starts chord([task, chain ending in a group], identity): the group takes the chord's id.
    Celery 5.2.6's worker sets the chord's size again, to the group's, when it applies that group, and
    with one pool process then hangs in the join; a tsq worker keeps the size and gives [101, [1001, 2001]]."""
    sig = chord([ti('add', 1, 100), chain(ti('add', 1, 200), group(ti('add', 1, 1000), ti('add', 1, 2000)))], t('identity'))
    return outcome(sig.delay())


def replaced_chain_callback():
    R.delete('redis-echo')
    msg = 'Internal chain callback'
    res = chain(t('identity', 'Hello '), t('replace_with_chain', link_msg=msg), t('add', 'world')).delay()
    out = outcome(res)
    out['echo'] = wait_for(echoes, [msg])
    return out


def replaced_chain_errback():
    R.delete('redis-echo')
    msg = 'Internal chain errback'
    res = chain(t('identity', 'Hello '), t('replace_with_chain_which_raises', link_msg=msg), t('add', ' never')).delay()
    out = outcome(res)
    out['echo'] = wait_for(echoes, [msg])
    return out


def chord_errback(style, header_chain):
    """chord((fail,) or (chain(identity, fail, identity),), identity) with link_error(errback): the errback's count under the body's id."""
    header = chain(ti('identity', 42), t('fail'), ti('identity', 42)) if header_chain else t('fail')
    sig = chord((header,), t('identity'))
    sig.link_error(t(style))
    body_id = sig.body.freeze().id
    R.delete(body_id)
    out = outcome(sig.delay())
    out['count'] = wait_for(lambda: count(body_id), 1)
    return out


def body_chain_errback(style):
    """chord((identity,), chain(identity, fail, identity)) with link_error: counted under the failing step's id."""
    fail_sig = t('fail')
    fail_id = fail_sig.freeze().id
    sig = chord((ti('identity', 42),), chain(ti('identity', 42), fail_sig, ti('identity', 42)))
    sig.link_error(t(style))
    R.delete(fail_id)
    out = outcome(sig.delay())
    out['count'] = wait_for(lambda: count(fail_id), 1)
    return out


def add_to_chord():
    res = (group([t('add_to_all_to_chord', [1, 2, 3], 4)]) | t('identity'))()
    out = outcome(res)
    if 'value' in out:
        out['value'] = sorted(out['value'])
    return out


def add_chord_to_chord():
    res = (group([t('add_chord_to_chord', [1, 2, 3], 4)]) | t('identity'))()
    out = outcome(res)
    if 'value' in out:
        out['value'] = sorted(out['value'])
    return out


def properties():
    res = t('return_properties').apply_async(app_id='1234')
    out = outcome(res)
    if 'value' in out:
        out['value'] = {'app_id': out['value'].get('app_id')}
    return out


def inspect_answers():
    from datetime import datetime, timedelta
    node = os.environ['SHAPES_NODE']
    insp = app.control.inspect(destination=[node], timeout=5)
    registered = insp.registered('name').get(node, [])
    eta = datetime.utcnow() + timedelta(seconds=30)
    res = t('add', 1, 2).apply_async(eta=eta)
    sched = wait_for(lambda: [e for e in (insp.scheduled() or {}).get(node, []) if e['request']['id'] == res.id], [None], 10)
    res.revoke()
    return {
        'registered_add': [r for r in registered if r.startswith('t.integration.tasks.add ')],
        'scheduled_eta': sched[0]['eta'] if sched else None,
        'expected_eta': eta.strftime('%Y-%m-%dT%H:%M:%S.%f') + '+00:00',
    }


SHAPES = {
    'chain_of_chord_with_chain_body': chain_of_chord_with_chain_body,
    'nested_group_chain': nested_group_chain,
    'nested_chord_group_chain_group_tail': nested_chord_group_chain_group_tail,
    'chord_header_task_and_chain_group': chord_header_task_and_chain_group,
    'replaced_chain_callback': replaced_chain_callback,
    'replaced_chain_errback': replaced_chain_errback,
    'errback_new_style_simple': lambda: chord_errback('errback_new_style', False),
    'errback_old_style_header_chain': lambda: chord_errback('errback_old_style', True),
    'errback_new_style_header_chain': lambda: chord_errback('errback_new_style', True),
    'errback_old_style_body_chain': lambda: body_chain_errback('errback_old_style'),
    'add_to_chord': add_to_chord,
    'add_chord_to_chord': add_chord_to_chord,
    'properties': properties,
    'inspect': inspect_answers,
}


if __name__ == '__main__':
    print(json.dumps({name: SHAPES[name]() for name in sys.argv[1:]}))
