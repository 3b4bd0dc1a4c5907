"""Python Celery as the client of test/interop/celery-parity.test.ts; one JSON line per command.

Sends to PARITY_QUEUE (the app's default queue), where a Python or a tsq
worker serves the same task names (parity_app.py, parity-tasks.js).

usage:
  parity_client.py ctx TIMEOUT            -> what proj.ctx read of its request, sent plain (countdown, expires,
                                             link, link_error), in a group, in a chord and as a chain's first step,
                                             with the ids and eta the client gave
  parity_client.py replace TIMEOUT [Q]    -> the results of the replace scenarios; Q: the queue the replacements
                                             are sent to (another worker's), else the default queue
  parity_client.py unencodable TIMEOUT    -> {"state", "exc_type"} of proj.unencodable
  parity_client.py print TEXT TIMEOUT     -> {"result"} of proj.print(TEXT)
"""
import json
import sys

from celery import chain, chord, group

from parity_app import add, app, collect, ctx, echo, mul, noop, rep_add, rep_chain, rep_fail, rep_group, say, tsum, unencodable


def out(obj):
    print(json.dumps(obj, default=str), flush=True)


def outcome(res, timeout):
    try:
        return {'result': res.get(timeout=timeout)}
    except Exception as exc:  # the point: what Python raises for the task's error
        return {'exc_type': type(exc).__name__, 'exc_message': str(exc)}


def cmd_ctx(timeout):
    timeout = float(timeout)
    plain = ctx.apply_async((1,), countdown=1, expires=600, link=noop.si('cb'), link_error=noop.si('eb'), priority=3)
    grouped = group(ctx.s(), ctx.s()).apply_async()
    chorded = chord([ctx.s(), ctx.s()], collect.s()).apply_async()
    chained = chain(ctx.s(), noop.s()).apply_async()
    out({
        'oid': app.thread_oid,
        'plain': {'id': plain.id, 'request': plain.get(timeout=timeout)},
        'group': {'id': grouped.id, 'requests': grouped.get(timeout=timeout)},
        'chord': {'group': chorded.parent.id, 'body': chorded.id, 'requests': chorded.get(timeout=timeout)},
        'chain': {'request': chained.parent.get(timeout=timeout), 'next': chained.id},
    })


def cmd_replace(timeout, queue=None):
    t = float(timeout)
    q = queue or None
    linked = mul.s(10)
    linked_res = linked.freeze()
    errback = echo.si('errback-ran')
    errback_res = errback.freeze()
    chain_linked = noop.s()
    chain_linked_res = chain_linked.freeze()
    results = {
        'plain': outcome(rep_add.delay(2, 3, q), t),
        'in_chain': outcome(chain(rep_add.s(2, 3, q), mul.s(10)).apply_async(), t),
        'in_group': outcome(group(rep_add.s(1, 1, q), rep_add.s(2, 2, q)).apply_async(), t),
        'in_chord': outcome(chord([rep_add.s(1, 1, q), add.s(2, 2)], tsum.s()).apply_async(), t),
        'with_group': outcome(rep_group.delay(3, q), t),
        'with_group_in_chain': outcome(chain(rep_group.s(3, q), tsum.s()).apply_async(), t),
        'with_chain': outcome(rep_chain.delay(1, q), t),
        'with_chain_in_chain': outcome(chain(rep_chain.s(1, q), mul.s(2)).apply_async(), t),
        'failing': outcome(rep_fail.delay('boom', q), t),
    }
    linked_parent = rep_add.apply_async((2, 3, q), link=linked)
    results['link'] = {'task': outcome(linked_parent, t), 'callback': outcome(linked_res, t)}
    failing_parent = rep_fail.apply_async(('boom', q), link_error=errback)
    results['link_error'] = {'task': outcome(failing_parent, t), 'errback': outcome(errback_res, t)}
    chain_parent = rep_chain.apply_async((1, q), link=chain_linked)
    results['chain_link'] = {'task': outcome(chain_parent, t), 'callback': outcome(chain_linked_res, t)}
    out(results)


def cmd_unencodable(timeout):
    res = unencodable.delay()
    try:
        res.get(timeout=float(timeout))
        out({'state': res.state})
    except Exception as exc:
        out({'state': res.state, 'exc_type': type(exc).__name__, 'exc_message': str(exc)})


def cmd_print(text, timeout):
    out({'result': say.delay(text).get(timeout=float(timeout))})


if __name__ == '__main__':
    commands = {'ctx': cmd_ctx, 'replace': cmd_replace, 'unencodable': cmd_unencodable, 'print': cmd_print}
    name, *rest = sys.argv[1:]
    commands[name](*rest)
