// tsq's events bus against the Python library it follows: celery-amqp-events
// (its last commit, run from its git snapshot on PYTHONPATH, never copied into
// this repository) on Debian's Celery 5.2.6, on RabbitMQ. Python services fire
// with send_task to `events`, as they must on 5.2.6.
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'
import { GroupProcess, sleep } from '../helpers/process-group.js'
import type { ArchivedEvent } from '../../src/bus/messages.js'
import { busBroker, cleanupService, jsonOf, readRuns, startServiceWorker, tsq, waitUntil } from '../e2e/bus-support.js'
import { PY_DIR, PYTHON, run } from './helpers/python-worker.js'

/** The library's git snapshot, as the `fetch` tool leaves it; TSQ_AMQP_EVENTS_GIT names another. */
const LIBRARY_GIT = process.env.TSQ_AMQP_EVENTS_GIT ?? '/work/.mirror/just-work+celery-amqp-events/repo'

function librarySkipReason(): string | false {
  if (!existsSync(LIBRARY_GIT)) return `celery-amqp-events' git snapshot is not at ${LIBRARY_GIT} (set TSQ_AMQP_EVENTS_GIT)`
  if (!existsSync(PYTHON)) return `${PYTHON} is missing`
  return false
}

const skip = (await brokerSkipReason('amqp')) || librarySkipReason()
const broker = busBroker('amqp')
const dir = tempTsqHome()
let libDir = ''

class PythonService extends GroupProcess {
  stop(): Promise<void> {
    return this.stopWith(() => this.signalGroup('SIGTERM'), 10_000)
  }
}

function pyEnv(service: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PYTHONPATH: `${libDir}:${PY_DIR}`,
    PYTHONDONTWRITEBYTECODE: '1',
    BUS_SERVICE: service,
    BUS_BROKER: broker.url,
    ...extra,
  }
}

/** `celery worker` of a celery-amqp-events service, started as the library's README says. */
async function startPythonService(
  service: string,
  events: string[],
  log: string,
  nodename: string,
  extra: NodeJS.ProcessEnv = {},
): Promise<PythonService> {
  const child = spawn(
    PYTHON,
    [
      '-m',
      'celery',
      '-A',
      'bus_service',
      'worker',
      '-P',
      'solo',
      '--without-mingle',
      '--without-gossip',
      '--without-heartbeat',
      '-l',
      'INFO',
      '-n',
      nodename,
    ],
    {
      cwd: PY_DIR,
      env: pyEnv(service, { BUS_EVENTS: events.join(','), BUS_LOG: log, ...extra }),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  )
  const worker = new PythonService(child)
  const deadline = Date.now() + 40_000
  while (!/\bready\.\s*$/m.test(worker.log)) {
    if (worker.hasExited || Date.now() > deadline) {
      await worker.stop()
      throw new Error(`Python worker ${nodename} did not start:\n${worker.logTail()}`)
    }
    await sleep(100)
  }
  return worker
}

async function pythonFire(service: string, event: string, args: unknown[]): Promise<string> {
  const res = await run(PYTHON, [join(PY_DIR, 'bus_send.py'), event, JSON.stringify(args)], {
    cwd: PY_DIR,
    env: pyEnv(service),
    timeoutMs: 30_000,
  })
  assert.equal(res.code, 0, `bus_send.py: ${res.stderr}`)
  return res.stdout.trim()
}

describe('events bus interop with celery-amqp-events (Celery 5.2.6, RabbitMQ)', { skip }, () => {
  const pythons: PythonService[] = []
  const workers: SpawnedWorker[] = []
  const cleanups: Array<() => Promise<void>> = []

  before(() => {
    libDir = mkdtempSync(join(tmpdir(), 'amqp-events-'))
    execFileSync('sh', ['-c', `git --git-dir="${LIBRARY_GIT}" archive HEAD amqp_events | tar -x -C "${libDir}"`])
  })
  after(async () => {
    await Promise.all([...pythons.map((p) => p.stop()), ...workers.map((w) => w.stop().catch(() => undefined))])
    for (const c of cleanups) await c().catch(() => undefined)
    if (libDir) rmSync(libDir, { recursive: true, force: true })
  })

  it("[python fires] send_task(E, args, routing_key=E) to `events` runs the tsq service's handler", async () => {
    const event = `${uniqueName('ev')}.invoice.paid`
    const service = uniqueName('tsqsvc')
    cleanups.push(() => cleanupService(broker, service, [event]))
    const log = join(dir, 'py-fires.jsonl')
    const w = await startServiceWorker(broker, { service, events: [event], log, nodename: `${service}@h` })
    workers.push(w)
    const id = await pythonFire(uniqueName('pyfirer'), event, [{ id: 42, total: 9.5 }])
    const runs = await waitUntil(
      () => readRuns(log).length > 0 && readRuns(log),
      20_000,
      'the tsq handler',
      () => w.output().slice(-2000),
    )
    assert.deepEqual(
      runs.map((r) => [r.id, r.args, r.ok]),
      [[id, [{ id: 42, total: 9.5 }], true]],
    )
    await w.stop()
  })

  it('[tsq fires] `tsq fire` reaches a Python worker of the library, its queues declared and bound by the library itself (kombu)', async () => {
    const event = `${uniqueName('ev')}.parcel.sent`
    const service = uniqueName('pysvc')
    cleanups.push(() => cleanupService(broker, service, [event]))
    const log = join(dir, 'tsq-fires.jsonl')
    const py = await startPythonService(service, [event], log, `${service}@h`)
    pythons.push(py)
    const fired = jsonOf<{ id: string }>(
      await tsq(broker, ['fire', event, '--args', '[{"parcel": 7}]', '--kwargs', '{"carrier": "dhl"}', '--json']),
      'tsq fire',
    )
    const runs = await waitUntil(
      () => readRuns(log).length > 0 && readRuns(log),
      20_000,
      'the Python handler',
      () => py.logTail(),
    )
    assert.equal(runs[0]!.id, fired.id)
    assert.deepEqual(runs[0]!.args, [{ parcel: 7 }])
    assert.deepEqual((runs[0] as unknown as { kwargs: unknown }).kwargs, { carrier: 'dhl' })
    await py.stop()
  })

  it('[one service, both languages] Python and tsq workers of one service declare the same queues (no 406) and share them: each event once', async () => {
    const event = `${uniqueName('ev')}.user.created`
    const service = uniqueName('mixed')
    cleanups.push(() => cleanupService(broker, service, [event]))
    const log = join(dir, 'mixed.jsonl')
    const pyA = await startPythonService(service, [event], log, `${service}-py1@h`)
    pythons.push(pyA)
    const tsqB = await startServiceWorker(broker, { service, events: [event], log, nodename: `${service}-tsq@h` })
    workers.push(tsqB)
    // And a Python worker after tsq declared everything: the library must find the same arguments.
    const pyC = await startPythonService(service, [event], log, `${service}-py2@h`)
    pythons.push(pyC)
    const ids = await Promise.all(Array.from({ length: 12 }, (_, i) => pythonFire(uniqueName('pyfirer'), event, [i])))
    await waitUntil(
      () => readRuns(log).length >= 12,
      30_000,
      'twelve runs',
      () => `${tsqB.output().slice(-1500)}\n${pyA.logTail(1500)}`,
    )
    await sleep(1000)
    const runs = readRuns(log)
    assert.deepEqual(runs.map((r) => r.id).sort(), [...ids].sort(), 'each event handled once, by one of the workers')
    assert.doesNotMatch(pyA.log + pyC.log + tsqB.output(), /PRECONDITION_FAILED|inequivalent/)
    await Promise.all([pyA.stop(), pyC.stop(), tsqB.stop()])
  })

  it('[python archive] `tsq archive ls` and `tsq archive replay` work on an archive a Python worker filled', async () => {
    const event = `${uniqueName('ev')}.order.failed`
    const service = uniqueName('pyarch')
    const env = { AMQP_EVENTS_MAX_RETRIES: '1' }
    cleanups.push(() => cleanupService(broker, service, [event], 1))
    const log = join(dir, 'py-archive.jsonl')
    const py = await startPythonService(service, [event], log, `${service}@h`, { ...env, BUS_ALWAYS_FAIL: '1' })
    pythons.push(py)
    const id = await pythonFire(service, event, [{ order: 5 }])
    // The library: run, one retry, then its retry() to the archive exchange.
    await waitUntil(
      () => readRuns(log).length >= 2,
      30_000,
      'the Python retry',
      () => py.logTail(),
    )
    const archived = await waitUntil(
      async () => {
        const listed = jsonOf<ArchivedEvent[]>(await tsq(broker, ['archive', 'ls', '--service', service, '--json'], env), 'tsq archive ls')
        return listed.length > 0 && listed
      },
      20_000,
      'the Python-archived event in `tsq archive ls`',
      () => py.logTail(),
    )
    assert.equal(archived.length, 1)
    assert.equal(archived[0]!.id, id)
    assert.equal(archived[0]!.event, event)
    assert.equal(archived[0]!.retries, 2, 'max_retries + 1, as the library archives it')
    assert.deepEqual(archived[0]!.args, [{ order: 5 }])
    await py.stop()
    const fixed = await startServiceWorker(broker, { service, events: [event], log, nodename: `${service}-tsq@h`, env })
    workers.push(fixed)
    const replay = jsonOf<{ replayed: ArchivedEvent[] }>(
      await tsq(broker, ['archive', 'replay', id, '--service', service, '--json'], env),
      'tsq archive replay',
    )
    assert.deepEqual(
      replay.replayed.map((e) => e.id),
      [id],
    )
    const done = await waitUntil(
      () => readRuns(log).find((r) => r.ok),
      20_000,
      'the replayed run',
      () => fixed.output().slice(-2000),
    )
    assert.equal(done.id, id)
    assert.equal(done.retries, 0, 'its retry count reset')
    assert.deepEqual(
      jsonOf<ArchivedEvent[]>(await tsq(broker, ['archive', 'ls', '--service', service, '--json'], env), 'tsq archive ls'),
      [],
    )
    await fixed.stop()
  })
})
