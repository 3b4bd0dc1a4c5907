"""The peer side of bench/events.ts: fires N events as a celery-amqp-events
service does on Celery 5.2.6 (send_task to `events`, routing key = event,
confirm_publish on), timed in-process, and prints {"events": N, "seconds": s}.

  PYTHONPATH=<celery-amqp-events>:test/interop/py BUS_SERVICE=x BUS_BROKER=url \\
    python3 bench/peers/events_fire.py EVENT N
"""
import json
import sys
import time

from bus_service import app

event = sys.argv[1]
n = int(sys.argv[2])
# One untimed send: the connection, the channel and the exchange's declaration.
app.send_task(event, args=[-1], routing_key=event)
start = time.perf_counter()
for i in range(n):
    app.send_task(event, args=[i], routing_key=event)
elapsed = time.perf_counter() - start
print(json.dumps({'events': n, 'seconds': elapsed}))
