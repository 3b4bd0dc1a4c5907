"""Python Celery as the client of a tsq worker; one JSON line per command.

usage (env TSQ_WI_BROKER, TSQ_WI_BACKEND, TSQ_WI_QUEUE as in worker_app.py):
  worker_client.py delay NAME ARGS_JSON TIMEOUT [COMPRESSION] -> {"result"} or {"exc_type","exc_message","exc_module"}
  worker_client.py send NAME ARGS_JSON [COUNTDOWN]   -> {"id", "eta"}   (eta: unix seconds or null)
  worker_client.py send_batch SPECS_JSON             -> {"ids"}; SPECS: [[name, args, countdown|null], ...]
  worker_client.py eta COUNTDOWN TIMEOUT            -> {"eta", "result"}: proj.now's clock when it ran
  worker_client.py get ID TIMEOUT                    -> {"state","result","exc_type","exc_message"}
  worker_client.py collect IDS_JSON TIMEOUT          -> {"items": [{"id","state","result"}]}
  worker_client.py chain TIMEOUT [plain]             -> {"result"} of add(1,2) | add(3) | mul(10); plain: no queue named
  worker_client.py canvas SHAPE TIMEOUT             -> {"result"} of a chain holding a group or chord; SHAPE one of
                                                        group: add(1,2) | group(add(10), add(20))            -> [13, 23]
                                                        group_body: add(1,2) | group(add(10), add(20)) | tsum -> 36
                                                        chord: add(1,2) | add(3) | chord([add(1), add(2)], tsum) -> 15
                                                        nested_chord: add(1,2) | chord([add(1), group(add(10), add(20)),
                                                          add(100) | mul(2), add(1000)], collect) -> Celery 5.2.6's order
                                                        chord_in_chord: add(1,2) | chord([chord([add(1), add(2)], tsum),
                                                          add(10)], collect) -> [9, 13]
  worker_client.py links TIMEOUT                     -> {"callback", "errback"}: add(2,2) link=mul(10), fail link_error=add.si(1,1)
  worker_client.py chord N TIMEOUT [FAIL_AT] [plain] -> {"result"} or {"exc_type",...}, and {"body": {"state","exc_type","exc_message"}}
                                                        of chord(add(i, i) for i < N)(tsum); FAIL_AT: that header task is proj.fail
                                                        (-1: none); plain: no queue named
  worker_client.py builtins TIMEOUT                  -> {"map", "starmap", "chunks"}: collect.map([1, 2, 3]), add.starmap([(1, 1), (2, 3)]),
                                                        add.chunks(zip(range(7), range(7)), 3), Celery's built-in tasks
  worker_client.py progress STEPS PAUSE TIMEOUT      -> {"result", "state", "progress": [info, ...]}: proj.progress's states as
                                                        AsyncResult.state / .info show them while it runs
  worker_client.py extended NAME ARGS_JSON TIMEOUT   -> {"result", "name", "args", "kwargs", "worker", "retries", "queue"}: what
                                                        AsyncResult reads from a result_extended meta
  worker_client.py headers TIMEOUT                   -> {"result"} of proj.headers sent with headers={'traceparent': 'py-trace'}
  worker_client.py direct NODE TIMEOUT               -> {"result"} of proj.whoami sent to NODE's worker_direct queue
  worker_client.py revoke ID SIGNAL                  -> {"ok": true}; app.control.revoke(terminate=True)
  worker_client.py many N NAME TIMEOUT               -> {"results": [...]} of N NAME() calls
  worker_client.py events NODE SECONDS               -> {"task_id", "events": [...]} seen from NODE
  worker_client.py ints NAME INTS_JSON TIMEOUT       -> {"result", "sent", "state", "id"}: NAME(ints), each item as [type, str]
  worker_client.py read_ints ID TIMEOUT              -> {"result"}: a stored list's items as [type, str]
"""
import json
import sys
import threading
import time
import uuid

from celery import chain, chord, group
from celery.utils.nodenames import worker_direct

from worker_app import app


def out(obj):
    print(json.dumps(obj), flush=True)


def outcome(res, timeout):
    try:
        return {'result': res.get(timeout=timeout)}
    except Exception as exc:  # the point: what Python raises for a JS error
        return {'exc_type': type(exc).__name__, 'exc_message': str(exc),
                'exc_module': type(exc).__module__}


def cmd_delay(name, args_json, timeout, compression=None):
    opts = {'compression': compression} if compression else {}
    res = app.send_task(name, args=json.loads(args_json), **opts)
    o = outcome(res, float(timeout))
    o['state'] = res.state
    out(o)


def cmd_send(name, args_json, countdown=None):
    eta = None
    opts = {}
    if countdown is not None:
        opts['countdown'] = float(countdown)
        eta = time.time() + float(countdown)
    res = app.send_task(name, args=json.loads(args_json), **opts)
    out({'id': res.id, 'eta': eta})


def cmd_send_batch(specs_json):
    """[[name, args, countdown|null], ...] sent in order, in one process."""
    ids = []
    for name, args, countdown in json.loads(specs_json):
        opts = {'countdown': countdown} if countdown else {}
        ids.append(app.send_task(name, args=args, **opts).id)
    out({'ids': ids})


def cmd_eta(countdown, timeout):
    """proj.now with a countdown, in one process (rpc:// replies go to the sender)."""
    eta = time.time() + float(countdown)
    res = app.send_task('proj.now', countdown=float(countdown))
    o = outcome(res, float(timeout))
    o['eta'] = eta
    out(o)


def cmd_get(task_id, timeout):
    res = app.AsyncResult(task_id)
    deadline = time.monotonic() + float(timeout)
    while not res.ready() and time.monotonic() < deadline:
        time.sleep(0.1)
    o = {'state': res.state, 'result': None, 'exc_type': None, 'exc_message': None}
    value = res.result
    if isinstance(value, BaseException):
        o['exc_type'] = type(value).__name__
        o['exc_message'] = str(value)
    else:
        o['result'] = value
    out(o)


def cmd_collect(ids_json, timeout):
    """States and results of many ids, waiting (bounded) until all are ready."""
    results = [app.AsyncResult(i) for i in json.loads(ids_json)]
    deadline = time.monotonic() + float(timeout)
    while not all(r.ready() for r in results) and time.monotonic() < deadline:
        time.sleep(0.1)
    out({'items': [{'id': r.id, 'state': r.state,
                    'result': r.result if r.state == 'SUCCESS' else None} for r in results]})


def cmd_chain(timeout, plain=None):
    # Celery sends each next link to the *worker's* default queue unless the
    # signature names one, so a chain on a non-default queue names it; `plain`
    # names none and relies on the worker's app having the same default queue.
    opts = {} if plain else {'queue': app.conf.task_default_queue}
    add = app.signature('proj.add', **opts)
    mul = app.signature('proj.mul', **opts)
    res = chain(add.clone(args=(1, 2)), add.clone(args=(3,)), mul.clone(args=(10,))).apply_async()
    out(outcome(res, float(timeout)))


def cmd_chord(n, timeout, fail_at=None, plain=None):
    """A chord whose header and body run on the test queue (named, as in
    cmd_chain: the body goes where the signature says). get() raises a
    failed header task's own error (Celery re-raises a parent's first); the
    body's stored outcome is reported separately."""
    opts = {} if plain else {'queue': app.conf.task_default_queue}
    fail = int(fail_at) if fail_at is not None else -1
    header = [app.signature('proj.fail', args=('chord part failed',), **opts) if i == fail
              else app.signature('proj.add', args=(i, i), **opts) for i in range(int(n))]
    res = chord(header)(app.signature('proj.tsum', **opts))
    o = outcome(res, float(timeout))
    body = app.AsyncResult(res.id)
    deadline = time.monotonic() + float(timeout)
    while not body.ready() and time.monotonic() < deadline:
        time.sleep(0.1)
    value = body.result
    o['body'] = {'state': body.state,
                 'exc_type': type(value).__name__ if isinstance(value, BaseException) else None,
                 'exc_message': str(value) if isinstance(value, BaseException) else None}
    out(o)


def cmd_canvas(shape, timeout):
    """A chain whose later step is a group or a chord: the worker that ends the
    step before it applies it (fans it out), as a Python worker does."""
    q = {'queue': app.conf.task_default_queue}
    add = lambda *a: app.signature('proj.add', args=a, **q)
    tsum = app.signature('proj.tsum', **q)
    if shape == 'group':
        res = chain(add(1, 2), group(add(10), add(20))).apply_async()
    elif shape == 'group_body':
        res = chain(add(1, 2), group(add(10), add(20)), tsum).apply_async()
    elif shape == 'nested_chord':
        mul = lambda *a: app.signature('proj.mul', args=a, **q)
        collect = app.signature('proj.collect', **q)
        header = [add(1), group(add(10), add(20)), chain(add(100), mul(2)), add(1000)]
        res = chain(add(1, 2), chord(header, collect)).apply_async()
    elif shape == 'chord_in_chord':
        collect = app.signature('proj.collect', **q)
        res = chain(add(1, 2), chord([chord([add(1), add(2)], tsum), add(10)], collect)).apply_async()
    else:
        res = chain(add(1, 2), add(3), chord([add(1), add(2)], tsum)).apply_async()
    out(outcome(res, float(timeout)))


def cmd_links(timeout):
    """A callback (link) and an errback (link_error) run by the worker, each
    with a task id chosen here so its result can be waited for."""
    queue = app.conf.task_default_queue
    mul = app.signature('proj.mul', args=(10,), queue=queue).set(task_id=str(uuid.uuid4()))
    recover = app.signature('proj.add', args=(1, 1), queue=queue, immutable=True).set(task_id=str(uuid.uuid4()))
    app.send_task('proj.add', args=[2, 2], link=mul)
    app.send_task('proj.fail', args=['errback wanted'], link_error=recover)
    out({'callback': outcome(app.AsyncResult(mul.id), float(timeout)),
         'errback': outcome(app.AsyncResult(recover.id), float(timeout))})


def cmd_builtins(timeout):
    """Canvases that the worker runs as Celery's built-in tasks (celery.map, celery.starmap)."""
    from worker_app import add, collect
    t = float(timeout)
    out({'map': outcome(collect.map([1, 2, 3]).apply_async(), t),
         'starmap': outcome(add.starmap([(1, 1), (2, 3)]).apply_async(), t),
         'chunks': outcome(add.chunks(zip(range(7), range(7)), 3).apply_async(), t)})


def cmd_direct(node, timeout):
    res = app.send_task('proj.whoami', queue=worker_direct(node))
    out(outcome(res, float(timeout)))


def cmd_progress(steps, pause, timeout):
    res = app.send_task('proj.progress', args=[int(steps), float(pause)])
    seen = []
    deadline = time.time() + float(timeout)
    while time.time() < deadline:
        # One read for both: state then info are two reads, and the task may end between them.
        meta = res._get_task_meta()
        state, info = meta['status'], meta['result']
        if state == 'PROGRESS' and info not in seen:
            seen.append(info)
        if res.ready():
            break
        time.sleep(0.05)
    o = outcome(res, 5)
    o['state'] = res.state
    o['progress'] = seen
    out(o)


def cmd_extended(name, args_json, timeout):
    res = app.send_task(name, args=json.loads(args_json))
    o = outcome(res, float(timeout))
    o.update(name=res.name, args=res.args, kwargs=res.kwargs, worker=res.worker, retries=res.retries, queue=res.queue)
    out(o)


def cmd_headers(timeout):
    out(outcome(app.send_task('proj.headers', headers={'traceparent': 'py-trace'}), float(timeout)))


def cmd_revoke(task_id, signal):
    app.control.revoke(task_id, terminate=True, signal=signal)
    out({'ok': True})


def cmd_many(n, name, timeout):
    results = [app.send_task(name) for _ in range(int(n))]
    out({'results': [r.get(timeout=float(timeout)) for r in results]})


def cmd_events(node, seconds):
    """Runs app.events.Receiver (what `celery events` and Flower use) until it has
    seen NODE's heartbeat and the full life of one task it sends, or time is up."""
    seen = []
    sent = {}
    wanted = {'task-received', 'task-started', 'task-succeeded'}

    def done():
        types = {e['type'] for e in seen if e.get('uuid') == sent.get('id')}
        # The periodic kind: the reply to the receiver's wake-up `heartbeat`
        # broadcast has only freq and sw_* (spec 5.3).
        beat = any(e['type'] == 'worker-heartbeat' and 'active' in e for e in seen)
        return beat and wanted <= types

    with app.connection_for_read() as conn:
        def on_event(event):
            if event.get('hostname') == node:
                seen.append(event)
            if done():
                recv.should_stop = True

        recv = app.events.Receiver(conn, handlers={'*': on_event})

        def send_task():
            sent['id'] = app.send_task('proj.add', args=[20, 22]).id

        def give_up():
            recv.should_stop = True

        threading.Timer(1.0, send_task).start()
        stopper = threading.Timer(float(seconds), give_up)
        stopper.start()
        try:
            recv.capture(limit=None, timeout=float(seconds), wakeup=True)
        except Exception:  # socket.timeout after `seconds` of silence
            pass
        stopper.cancel()
    out({'task_id': sent.get('id'), 'events': seen})


def cmd_exact(timeout):
    """Integers past 2**53, as 64-bit ids are: a tsq task must hand them back digit for digit."""
    values = [2**64 + 1, -(10**22) - 7, 9007199254740993, 12345, 1.5]
    got = app.send_task('proj.collect', args=[values]).get(timeout=float(timeout))
    out({'same': got == values, 'got': [repr(v) for v in got]})


def int_shapes(value):
    """Each item as [type name, str]: a float that looks like an int is told apart from the int."""
    if not isinstance(value, (list, tuple)):
        return value if value is None else [type(value).__name__, str(value)]
    return [[type(v).__name__, str(v)] for v in value]


def cmd_ints(name, args_json, timeout):
    """NAME(values) with the ints as Python's json reads them (exact), then the result's item types and digits."""
    values = json.loads(args_json)
    res = app.send_task(name, args=[values])
    o = outcome(res, float(timeout))
    o['state'] = res.state
    o['id'] = res.id
    o['sent'] = int_shapes(values)
    if 'result' in o:
        o['result'] = int_shapes(o['result'])
    out(o)


def cmd_read_ints(task_id, timeout):
    """A stored result's item types and digits, as AsyncResult.get() gives them."""
    o = outcome(app.AsyncResult(task_id), float(timeout))
    if 'result' in o:
        o['result'] = int_shapes(o['result'])
    out(o)


COMMANDS = {'ints': cmd_ints, 'read_ints': cmd_read_ints, 'delay': cmd_delay, 'send': cmd_send, 'send_batch': cmd_send_batch, 'eta': cmd_eta, 'get': cmd_get, 'collect': cmd_collect, 'chain': cmd_chain, 'chord': cmd_chord, 'canvas': cmd_canvas, 'links': cmd_links,
            'revoke': cmd_revoke, 'many': cmd_many, 'events': cmd_events,
            'direct': cmd_direct, 'builtins': cmd_builtins, 'progress': cmd_progress, 'extended': cmd_extended, 'headers': cmd_headers, 'exact': cmd_exact}

if __name__ == '__main__':
    COMMANDS[sys.argv[1]](*sys.argv[2:])
