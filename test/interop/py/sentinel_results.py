"""Read task results through Redis Sentinel as Celery 5.2.6 does.

usage: sentinel_results.py <sentinel-url-list> <task-id>...
The backend is `sentinel://...` with result_backend_transport_options
{'master_name': 'mymaster'}. Prints one JSON line: {id: [state, result]}.
"""
import json
import sys

from celery import Celery


def main():
    url, ids = sys.argv[1], sys.argv[2:]
    app = Celery('sentinel_results', backend=url)
    app.conf.result_backend_transport_options = {'master_name': 'mymaster'}
    out = {}
    for task_id in ids:
        res = app.AsyncResult(task_id)
        out[task_id] = [res.state, res.result]
    print(json.dumps(out))


if __name__ == '__main__':
    main()
