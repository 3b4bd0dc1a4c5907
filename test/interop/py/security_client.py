"""Client side of the signing and serializer interop tests.

    security_client.py call TASK ARGS_JSON|@FILE TIMEOUT [SERIALIZER]
        apply_async with the app's settings (or the serializer given), wait,
        print {"id", "state", "result"} as one JSON line (bytes as {"bytes": hex}).
    security_client.py send TASK ARGS_JSON SERIALIZER
        send only (a pickle task, which nobody should run), print {"id"}.
"""
import json
import sys

from security_app import app


def plain(v):
    if isinstance(v, bytes):
        return {'bytes': v.hex()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, int) and not isinstance(v, bool):
        return {'int': str(v)}
    return v


def unplain(v):
    """{"bytes": hex} becomes bytes (msgpack bin, YAML !!binary); the rest as JSON read it."""
    if isinstance(v, dict):
        if set(v) == {'bytes'}:
            return bytes.fromhex(v['bytes'])
        return {k: unplain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [unplain(x) for x in v]
    return v


def main():
    cmd, task, args = sys.argv[1], sys.argv[2], sys.argv[3]
    # @path: the arguments are in a file (a big payload exceeds argv's limit).
    args = unplain(json.loads(open(args[1:]).read() if args.startswith('@') else args))
    if cmd == 'send':
        r = app.send_task(task, args=args, serializer=sys.argv[4])
        print(json.dumps({'id': r.id}))
        return
    opts = {'serializer': sys.argv[5]} if len(sys.argv) > 5 else {}
    r = app.send_task(task, args=args, **opts)
    try:
        value = r.get(timeout=float(sys.argv[4]))
        print(json.dumps({'id': r.id, 'state': r.state, 'result': plain(value)}))
    except Exception as exc:  # noqa: BLE001 -- the test reads what went wrong
        print(json.dumps({'id': r.id, 'state': r.state, 'error': repr(exc)}))


if __name__ == '__main__':
    main()
