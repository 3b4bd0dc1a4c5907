"""Fires an event as Python services do with celery-amqp-events on Celery
5.2.6 (the library's own Event() helper fails there): send_task to the
`events` exchange, routing key = the event's name, publisher confirms on.

  bus_send.py EVENT ARGS_JSON [KWARGS_JSON]   prints the event's id
"""
import json
import sys

from bus_service import app

event = sys.argv[1]
args = json.loads(sys.argv[2]) if len(sys.argv) > 2 else []
kwargs = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
result = app.send_task(event, args=args, kwargs=kwargs, routing_key=event)
print(result.id)
