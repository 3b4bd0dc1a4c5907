"""Next-run tables from Celery 5.2.6's own crontab, for tsq's crontab test.

stdin: JSON list of cases {"id", "tz", "start" (epoch seconds), "count",
"minute", "hour", "day_of_week", "day_of_month", "month_of_year"}.
stdout: JSON {id: [epoch seconds of each successive run]}.

Each step asks `remaining_estimate(last_run_at)` with now == last_run_at, as
beat does right after a run, then takes now + remaining as the next run.
"""
import json
import sys
from datetime import datetime

import pytz
from celery import Celery
from celery.schedules import crontab

cases = json.load(sys.stdin)
out = {}
for case in cases:
    app = Celery('oracle', set_as_current=False)
    app.conf.timezone = case['tz']
    app.conf.enable_utc = True
    tz = app.timezone
    state = {}
    cron = crontab(
        minute=case['minute'], hour=case['hour'], day_of_week=case['day_of_week'],
        day_of_month=case['day_of_month'], month_of_year=case['month_of_year'],
        app=app, nowfun=lambda: state['now'],
    )
    runs = []
    last = datetime.fromtimestamp(case['start'], tz=pytz.utc).astimezone(tz)
    for _ in range(case['count']):
        state['now'] = last
        rem = cron.remaining_estimate(last)
        nxt = last + rem
        runs.append(nxt.timestamp())
        last = datetime.fromtimestamp(nxt.timestamp(), tz=pytz.utc).astimezone(tz)
    out[case['id']] = runs
json.dump(out, sys.stdout)
