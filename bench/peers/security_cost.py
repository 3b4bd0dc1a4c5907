"""Celery 5.2.6's side of bench/security.ts: what the auth serializer adds per
task message, measured in this process with time.perf_counter.

    security_cost.py KEY CERT STORE_GLOB N REPEATS

Prints one JSON line: per-task microseconds (median over REPEATS runs of N
messages) for the body written with json and with auth, and read back with
json and with auth (verify included), as Celery's producer and worker do it:
kombu's dumps/loads through the registry setup_security() fills.
"""
import json
import statistics
import sys
import time

from celery import Celery
from kombu.serialization import dumps, loads

key, cert, store, n, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
app = Celery('bench', broker='memory://')
app.conf.update(task_serializer='auth', accept_content=['auth'], security_key=key, security_certificate=cert, security_cert_store=store)
app.setup_security()

body = [[2, 3], {'name': 'h\u00e9llo', 'n': 123456789}, {'callbacks': None, 'errbacks': None, 'chain': None, 'chord': None}]


def per_task_us(fn):
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(runs)


_, _, plain = dumps(body, serializer='json')
ctype, cenc, signed = dumps(body, serializer='auth')
accept_json, accept_auth = {'application/json'}, {'application/data'}
print(json.dumps({
    'send_json_us': per_task_us(lambda: dumps(body, serializer='json')),
    'send_auth_us': per_task_us(lambda: dumps(body, serializer='auth')),
    'recv_json_us': per_task_us(lambda: loads(plain, 'application/json', 'utf-8', accept=accept_json)),
    'recv_auth_us': per_task_us(lambda: loads(signed, ctype, cenc, accept=accept_auth)),
}))
