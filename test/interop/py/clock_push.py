"""Drives a worker's Lamport clock up with a control request, as Celery's own clients do.

usage (env TSQ_WI_BROKER, TSQ_WI_BACKEND, TSQ_WI_QUEUE as in worker_app.py):
  clock_push.py NODE TARGET [TIMEOUT] -> {"ping", "header_clocks", "clock"}

kombu's Mailbox stamps each request with `clock` (its LamportClock, forwarded)
in the AMQP headers, and the worker takes max(its clock, that) + 1. Here the
mailbox's clock is set to TARGET first, so the worker's clock passes TARGET;
then `inspect ping` and `inspect clock` are sent to NODE. `header_clocks` is
each reply's `clock` header as py-amqp read it, [type name, value], as kombu
hands it to the clock (a 16-bit value misread as a short string shows as
'str'); `clock` is the worker's clock from the `inspect clock` reply's body.
"""
import json
import sys

from worker_app import app


def main():
    node, target = sys.argv[1], int(sys.argv[2])
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 5.0
    clock = app.control.mailbox.clock
    clock.adjust(target)
    seen = []
    adjust = clock.adjust

    # kombu's _collect calls mailbox.clock.adjust(header('clock') or 0) for each
    # reply; the bound mailbox is a shallow copy, so it shares this clock.
    def recording(other):
        seen.append([type(other).__name__, other if isinstance(other, (int, str, type(None))) else repr(other)])
        return adjust(other)

    clock.adjust = recording
    inspect = app.control.inspect(destination=[node], timeout=timeout)
    ping = inspect.ping()
    body = inspect.clock() or {}
    print(json.dumps({'ping': ping, 'header_clocks': seen,
                      'clock': (body.get(node) or {}).get('clock')}), flush=True)


if __name__ == '__main__':
    main()
