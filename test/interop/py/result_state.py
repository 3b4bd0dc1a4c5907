"""Print a task's state and result as Celery's own AsyncResult sees them.

usage: result_state.py <task-id> [wait-seconds]
Prints one JSON line: {"state", "ready", "result", "exc_type", "exc_message"}.
Waits (bounded) for a ready state, so callers need not poll.
"""
import json
import sys
import time

from tasks import app


def main():
    task_id = sys.argv[1]
    wait = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    res = app.AsyncResult(task_id)
    deadline = time.monotonic() + wait
    while not res.ready() and time.monotonic() < deadline:
        time.sleep(0.1)
    out = {'state': res.state, 'ready': res.ready(), 'result': None,
           'exc_type': None, 'exc_message': None}
    value = res.result
    if isinstance(value, BaseException):
        out['exc_type'] = type(value).__name__
        out['exc_message'] = str(value)
    else:
        out['result'] = value
    print(json.dumps(out))


if __name__ == '__main__':
    main()
