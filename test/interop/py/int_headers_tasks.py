"""The Python worker's side of test/interop/amqp-int-headers.test.ts (issue 28).

Loaded into the peer worker with `celery -A tasks worker -I int_headers_tasks`:
ih.echo returns what Celery 5.2.6 read from the task message's AMQP header
table, each value tagged with its Python type (tag()), so that a 16-bit
integer misread as a short string, or a negative one read unsigned, shows.
"""
from tasks import app


def tag(value):
    """A value with its Python type kept through JSON: 'int:300', 'str:...', lists and dicts item by item."""
    if value is None:
        return None
    if isinstance(value, bool):
        return 'bool:%s' % value
    if isinstance(value, int):
        return 'int:%d' % value
    if isinstance(value, str):
        return 'str:' + value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return 'bytes:' + bytes(value).hex()
    if isinstance(value, float):
        return 'float:' + repr(value)
    if isinstance(value, (list, tuple)):
        return [tag(v) for v in value]
    if isinstance(value, dict):
        return {str(k): tag(v) for k, v in value.items()}
    return '%s:%r' % (type(value).__name__, value)


@app.task(name='ih.echo', bind=True)
def echo(self):
    """With protocol 2, Celery merges a message's own headers into the request: self.request.ih_*."""
    r = self.request
    return {
        'timelimit': tag(r.timelimit),
        'retries': tag(r.retries),
        'group_index': tag(r.group_index),
        'headers': {k: tag(v) for k, v in sorted(vars(r).items()) if k.startswith('ih_')},
    }
