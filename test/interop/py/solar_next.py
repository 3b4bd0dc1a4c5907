# For each [event, lat, lon, last_run_at ISO], what Celery 5.2.6's
# solar(event, lat, lon).remaining_estimate(last_run_at) gives, as the
# instant "now + remaining" (now pinned), or the exception's type and text.
import json
import sys
from datetime import datetime, timezone

from celery import Celery
from celery.schedules import solar

app = Celery(set_as_current=True)
app.conf.timezone = 'UTC'
app.conf.enable_utc = True
NOW = datetime(2000, 1, 1, tzinfo=timezone.utc)
out = []
for event, lat, lon, last in json.loads(sys.argv[1]):
    s = solar(event, lat, lon, app=app, nowfun=lambda: NOW)
    try:
        rem = s.remaining_estimate(datetime.fromisoformat(last.replace('Z', '+00:00')))
        out.append({'at': (NOW + rem).isoformat()})
    except Exception as exc:  # the polar case: reported, compared by the test
        out.append({'error': '%s: %s' % (type(exc).__name__, exc)})
print(json.dumps(out))
