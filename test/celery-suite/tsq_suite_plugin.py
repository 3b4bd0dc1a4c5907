"""pytest plugin for running Celery 5.2.6's t/integration suite unchanged.

Loaded with ``-p tsq_suite_plugin`` (run.sh). It points the suite's
get_redis_connection() at CELERY_SUITE_REDIS_URL instead of port 6379, and with
CELERY_SUITE_WORKER=tsq replaces celery.contrib.pytest's session worker with a
``tsq worker -A tasks.js -c 1 -P prefork -E`` named as Celery's in-process
worker is (anon_nodename()), so the tests address it as they would Celery's.
"""
import os
import signal
import subprocess
import time

import pytest

import celery.contrib.pytest as celery_pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REDIS_URL = os.environ.get('CELERY_SUITE_REDIS_URL')
WORKER = os.environ.get('CELERY_SUITE_WORKER', 'celery')


def _redis_connection():
    from redis import StrictRedis
    return StrictRedis.from_url(REDIS_URL)


def pytest_plugin_registered(plugin, manager):
    # The suite's conftest (and tasks.py through it) asks its own function for
    # Redis; swapped before the test modules import it.
    if REDIS_URL and getattr(plugin, '__name__', '').endswith('integration.conftest'):
        plugin.get_redis_connection = _redis_connection


def _tsq_session_worker(request, celery_session_app, celery_includes,
                        celery_class_tasks, celery_worker_pool,
                        celery_worker_parameters):
    from celery.contrib.testing.tasks import ping
    from celery.utils.nodenames import anon_nodename

    for module in celery_includes:
        celery_session_app.loader.import_task_module(module)
    for class_task in celery_class_tasks:
        celery_session_app.tasks.register(class_task)
    conf = celery_session_app.conf
    log_path = os.environ.get('CELERY_SUITE_WORKER_LOG', os.devnull)
    log = open(log_path, 'ab')
    cmd = [
        os.environ.get('CELERY_SUITE_NODE', 'node'),
        os.environ['CELERY_SUITE_TSQ_BIN'],
        'worker', '-A', os.path.join(HERE, 'tasks.js'),
        '-c', '1', '-P', 'prefork', '-E',
        '-n', anon_nodename(),
        '-b', os.environ.get('CELERY_SUITE_TSQ_BROKER', conf.broker_url),
        '--result-backend', conf.result_backend,
        '-l', 'info',
        # More worker flags, such as --early-ack (Celery's default acks).
        *os.environ.get('CELERY_SUITE_TSQ_ARGS', '').split(),
    ]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f'tsq worker exited {proc.returncode}; see {log_path}')
            try:
                assert ping.delay().get(timeout=5) == 'pong'
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


def _celery_session_worker(request, celery_session_app, celery_includes,
                           celery_class_tasks, celery_worker_pool,
                           celery_worker_parameters):
    # celery.contrib.pytest's own fixture, but for one thing: a Task class is
    # bound to the app before it is registered. Registered unbound (as the
    # original does), its request_stack is None and the prefork worker dies
    # at start-up (AttributeError in build_tracer) with Celery 5.2.6 as Debian
    # packages it.
    from celery.contrib.testing import worker

    for module in celery_includes:
        celery_session_app.loader.import_task_module(module)
    for class_task in celery_class_tasks:
        class_task.bind(celery_session_app)
        celery_session_app.tasks.register(class_task)
    with worker.start_worker(celery_session_app, pool=celery_worker_pool,
                             **celery_worker_parameters) as w:
        yield w


if WORKER == 'celery':
    celery_pytest.celery_session_worker = pytest.fixture(scope='session')(
        _celery_session_worker)
elif WORKER == 'tsq':
    # The suite's conftest imports this name from celery.contrib.pytest,
    # after plugins given with -p are loaded.
    celery_pytest.celery_session_worker = pytest.fixture(scope='session')(
        _tsq_session_worker)
