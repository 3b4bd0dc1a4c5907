"""Celery's database backend groups (celery_tasksetmeta) for test/interop/db-results-*.test.ts.

save GID ID,ID...   GroupResult(GID, [AsyncResult(ID), ...]).save()
restore GID         prints {"id": ..., "ids": [...]} from GroupResult.restore(GID), or null
"""
import json
import sys

from celery.result import AsyncResult, GroupResult

from worker_app import app

if __name__ == '__main__':
    cmd, gid = sys.argv[1], sys.argv[2]
    if cmd == 'save':
        GroupResult(gid, [AsyncResult(i, app=app) for i in sys.argv[3].split(',')], app=app).save()
        print(json.dumps({'saved': gid}))
    else:
        g = GroupResult.restore(gid, app=app)
        print(json.dumps(g and {'id': g.id, 'type': type(g).__name__, 'ids': [r.id for r in g.results]}))
