// Celery settings in an app's conf at start-up, on the embedded
// broker. A setting tsq cannot honour stops `tsq worker` and `tsq beat` with
// exit 64 and one line on stderr naming it and why (several: one line, '; '
// between them); worker_* settings given as conf take effect
// below CELERY_WORKER_* variables, which are below the flags.
import assert from 'node:assert/strict'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { createApp } from '../../src/app/app.js'
import { defaultFileBrokerUrl } from '../../src/transport/index.js'
import { waitFor } from '../helpers/brokers.js'
import { ROOT, embeddedBrokerEnv, runTsq, startWorker, tempTsqHome } from '../helpers/cli.js'

const MODULE = join(ROOT, 'test/fixtures/tasks/cfg-conf-env.js')

function env(conf: Record<string, unknown>, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return embeddedBrokerEnv(tempTsqHome(), { CFG_CONF: JSON.stringify(conf), NO_COLOR: '1', ...extra })
}

describe('refused settings stop the start with one line (exit 64)', () => {
  it('[worker_pool] eventlet: the worker refuses to start', async () => {
    const res = await runTsq(['worker', '-A', MODULE, '-P', 'solo'], { env: env({ worker_pool: 'eventlet' }) })
    assert.equal(res.code, 64, res.stderr)
    assert.equal(res.stderr.trim(), 'Error: worker_pool = "eventlet": tsq\'s pools are prefork, threads and solo (not eventlet)')
  })
  it('[broker_transport_options.ack_emulation, task_serializer] two settings, one line', async () => {
    const res = await runTsq(['worker', '-A', MODULE], {
      env: env({ task_serializer: 'pickle', broker_transport_options: { global_keyprefix: 'svc:', ack_emulation: false } }),
    })
    assert.equal(res.code, 64, res.stderr)
    assert.equal(
      res.stderr.trim(),
      'Error: task_serializer = "pickle": pickle is never decoded by tsq (it would run code from the message); broker_transport_options.ack_emulation = false: tsq keeps kombu\'s default (true), so another value would split its Redis layout from the Python workers\'',
    )
  })
  it('[task_create_missing_queues] -Q of a queue task_queues lacks', async () => {
    const res = await runTsq(['worker', '-A', MODULE, '-Q', 'elsewhere'], {
      env: env({ task_create_missing_queues: false, task_queues: [{ name: 'only' }] }),
    })
    assert.equal(res.code, 64, res.stderr)
    assert.equal(res.stderr.trim(), 'Error: queue "elsewhere" is not in task_queues and task_create_missing_queues is False')
  })
  it('[beat_scheduler] beat refuses a Python scheduler class', async () => {
    const res = await runTsq(['beat', '-A', MODULE], { env: env({ beat_scheduler: 'django_celery_beat.schedulers:DatabaseScheduler' }) })
    assert.equal(res.code, 64, res.stderr)
    assert.match(
      res.stderr.trim(),
      /^Error: beat_scheduler = "django_celery_beat\.schedulers:DatabaseScheduler": a Python class path; tsq's stores are chosen by --scheduler file\|redis$/,
    )
  })
})

describe('[worker_concurrency, worker_pool] conf < CELERY_WORKER_* < flag, as the banner shows', () => {
  const conf = {
    worker_concurrency: 3,
    worker_pool: 'threads',
    task_queues: [{ name: 'cfgq', queue_arguments: { 'x-max-priority': 10 } }],
    task_default_queue: 'cfgq',
  }
  const cases: Array<[string, string[], NodeJS.ProcessEnv, RegExp]> = [
    ['conf', [], {}, /concurrency: 3 \(threads\)/],
    ['env over conf', [], { CELERY_WORKER_CONCURRENCY: '2', CELERY_WORKER_POOL: 'solo' }, /concurrency: 2 \(solo\)/],
    ['flag over env', ['-c', '1', '-P', 'solo'], { CELERY_WORKER_CONCURRENCY: '2' }, /concurrency: 1 \(solo\)/],
  ]
  for (const [what, flags, extra, banner] of cases) {
    it(what, async () => {
      const nodename = `cfgw-${process.pid}-${what.replace(/\W/g, '')}@${hostname()}`
      const worker = await startWorker(['-A', MODULE, '-l', 'INFO', ...flags], { env: env(conf, extra), nodename })
      try {
        assert.match(worker.output(), banner)
        // The default queue as task_queues defines it.
        // task_queues' entry has no routing key: task_default_routing_key, which defaults to task_default_queue.
        assert.match(worker.output(), /\.> cfgq +exchange=cfgq\(direct\) key=cfgq/)
      } finally {
        await worker.stop()
      }
    })
  }
})

/** A solo worker of the CFG_CONF app on an embedded broker of its own, for the length of `run`. */
async function withConfWorker(
  conf: Record<string, unknown>,
  tag: string,
  run: (w: { nodename: string; env: NodeJS.ProcessEnv; home: string; output: () => string }) => Promise<void>,
): Promise<void> {
  const e = env(conf)
  const home = e.TSQ_HOME!
  const nodename = `${tag}-${process.pid}@${hostname()}`
  const worker = await startWorker(['-A', MODULE, '-P', 'solo', '-l', 'INFO'], { env: e, nodename })
  try {
    await run({ nodename, env: e, home, output: worker.output })
  } finally {
    await worker.stop()
  }
}

describe('[worker_enable_remote_control] False: the worker answers no inspect or control', () => {
  it('inspect ping reaches a worker by default, not one with the setting off', async () => {
    for (const enabled of [true, false]) {
      await withConfWorker({ worker_enable_remote_control: enabled }, `cfgrc-${enabled}`, async ({ nodename, env: e }) => {
        const res = await runTsq(['inspect', 'ping', '-d', nodename, '-t', '2', '--json'], { env: e })
        if (enabled) assert.deepEqual(JSON.parse(res.stdout), { [nodename]: { ok: 'pong' } })
        else assert.equal(res.code, 69, `${res.stdout}${res.stderr}`)
      })
    }
  })
})

describe('[task_store_errors_even_if_ignored] a failing task whose result is ignored', () => {
  it('stores nothing by default, its FAILURE with the setting on', async () => {
    for (const store of [false, true]) {
      await withConfWorker({ task_store_errors_even_if_ignored: store }, `cfgse-${store}`, async ({ home, output }) => {
        const url = defaultFileBrokerUrl({ TSQ_HOME: home })
        const client = createApp({ name: 'cfgse', broker: url, resultBackend: url })
        try {
          const res = await client.sendTask('cfgenv.boom')
          await waitFor(() => output().includes(`cfgenv.boom[${res.id}] raised`), { timeoutMs: 20_000, what: 'the failure logged' })
          await waitFor(async () => !store || (await res.state) === 'FAILURE', { timeoutMs: 10_000, what: 'FAILURE stored' })
          if (!store) assert.equal(await res.state, 'PENDING')
        } finally {
          await client.close()
        }
      })
    }
  })
})
