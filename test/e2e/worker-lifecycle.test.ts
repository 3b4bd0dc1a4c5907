// Shutdown phases, signals, time limits and revokes, driven by real signals
// to a spawned `tsq worker` on the embedded broker; console lines asserted.
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { callTask, embeddedBrokerEnv, runTsq, type SpawnedWorker, startWorker, tempTsqHome } from '../helpers/cli.js'
import { waitFor } from '../helpers/brokers.js'

const APP = 'test/fixtures/tasks/lifecycle-tasks.js'
let n = 0

async function setup(extra: string[] = [], envExtra: NodeJS.ProcessEnv = {}) {
  const home = tempTsqHome()
  const env = embeddedBrokerEnv(home, envExtra)
  const node = `life${++n}-${process.pid}@testhost`
  const worker = await startWorker(['-A', APP, '-c', '1', '-l', 'INFO', '--without-heartbeat', ...extra], { env, nodename: node })
  return { env, node, worker, home }
}

async function waitActive(env: NodeJS.ProcessEnv, node: string, id: string): Promise<void> {
  await waitFor(
    async () => {
      const r = await runTsq(['inspect', 'active', '-d', node, '--json'], { env })
      return r.code === 0 && JSON.stringify(JSON.parse(r.stdout)[node] ?? []).includes(id)
    },
    { timeoutMs: 20_000, what: `task ${id} active on ${node}` },
  )
}

async function resultMeta(env: NodeJS.ProcessEnv, id: string) {
  const r = await runTsq(['result', id, '-t', '30', '--json'], { env })
  return JSON.parse(r.stdout) as { status: string; result: unknown }
}

async function exitOf(worker: SpawnedWorker): Promise<number | null> {
  return new Promise((resolve) => {
    if (worker.child.exitCode !== null) return resolve(worker.child.exitCode)
    const timer = setTimeout(() => {
      worker.child.kill('SIGKILL')
      resolve(-1)
    }, 30_000)
    worker.child.once('exit', (code) => {
      clearTimeout(timer)
      resolve(code)
    })
  })
}

describe('worker shutdown phases and signals', () => {
  it('[TERM] warm: the running task finishes, the worker exits 0', async () => {
    const { env, node, worker } = await setup()
    const id = await callTask(env, 'life.sleep', [2])
    await waitActive(env, node, id)
    worker.child.kill('SIGTERM')
    worker.child.kill('SIGTERM') // extra TERMs are ignored
    assert.equal(await exitOf(worker), 0)
    assert.match(worker.output(), /worker: Warm shutdown \(MainProcess\)/)
    assert.deepEqual(await resultMeta(env, id).then((m) => [m.status, m.result]), ['SUCCESS', 2])
  })

  it('[QUIT] cold: the running task is cancelled and its message restored', async () => {
    const { env, node, worker } = await setup()
    const id = await callTask(env, 'life.sleep', [30])
    await waitActive(env, node, id)
    worker.child.kill('SIGQUIT')
    assert.equal(await exitOf(worker), 0)
    assert.match(worker.output(), /worker: Cold shutdown \(MainProcess\)/)
    assert.match(worker.output(), /Restoring 1 unacknowledged message\(s\)/)
    const purge = await runTsq(['purge', '-f', '--json'], { env })
    assert.deepEqual(JSON.parse(purge.stdout), { purged: 1, queues: { celery: 1 } })
  })

  it('[INT, INT] warm then cold, each announcing what the next Ctrl-C does', async () => {
    const { env, node, worker } = await setup()
    const id = await callTask(env, 'life.sleep', [30])
    await waitActive(env, node, id)
    worker.child.kill('SIGINT')
    await waitFor(() => worker.output().includes('Hitting Ctrl+C again will initiate cold shutdown'), { what: 'warm hint' })
    worker.child.kill('SIGINT')
    assert.equal(await exitOf(worker), 0)
    assert.match(worker.output(), /Cold shutdown[\s\S]*Hitting Ctrl\+C again will terminate the worker immediately/)
    assert.match(worker.output(), /Restoring 1 unacknowledged message\(s\)/)
  })

  it('[REMAP_SIGTERM=SIGQUIT] TERM is a cold shutdown', async () => {
    const { env, node, worker } = await setup([], { REMAP_SIGTERM: 'SIGQUIT' })
    const id = await callTask(env, 'life.sleep', [30])
    await waitActive(env, node, id)
    worker.child.kill('SIGTERM')
    assert.equal(await exitOf(worker), 0)
    assert.match(worker.output(), /Cold shutdown/)
    assert.match(worker.output(), /Restoring 1 unacknowledged message\(s\)/)
  })

  it('[--soft-shutdown-timeout] QUIT gives running tasks the window, then goes cold', async () => {
    const { env, node, worker } = await setup(['--soft-shutdown-timeout', '1'])
    const id = await callTask(env, 'life.sleep', [30])
    await waitActive(env, node, id)
    worker.child.kill('SIGQUIT')
    assert.equal(await exitOf(worker), 0)
    assert.match(worker.output(), /Initiating Soft Shutdown, terminating in 1 seconds[\s\S]*Restoring 1 unacknowledged message\(s\)/)
  })

  it('[QUIT during soft] cancels the tasks but the soft window still runs out', async () => {
    const { env, node, worker } = await setup(['--soft-shutdown-timeout', '3'])
    const id = await callTask(env, 'life.sleep', [30])
    await waitActive(env, node, id)
    const started = Date.now()
    worker.child.kill('SIGQUIT')
    await waitFor(() => worker.output().includes('Initiating Soft Shutdown'), { what: 'soft shutdown' })
    worker.child.kill('SIGQUIT')
    assert.equal(await exitOf(worker), 0)
    assert.ok(Date.now() - started >= 2500, 'the worker waited out the soft window')
    assert.match(
      worker.output(),
      /Cancelling running tasks; the soft shutdown window still runs out[\s\S]*Restoring 1 unacknowledged message\(s\)/,
    )
    const purge = await runTsq(['purge', '-f', '--json'], { env })
    assert.deepEqual(JSON.parse(purge.stdout), { purged: 1, queues: { celery: 1 } })
  })

  it('[--enable-soft-shutdown-on-idle] an idle worker still gets the soft window; without it, idle goes cold at once', async () => {
    const idle = await setup(['--soft-shutdown-timeout', '1', '--enable-soft-shutdown-on-idle'])
    idle.worker.child.kill('SIGQUIT')
    assert.equal(await exitOf(idle.worker), 0)
    assert.match(idle.worker.output(), /Initiating Soft Shutdown, terminating in 1 seconds/)
    const plain = await setup(['--soft-shutdown-timeout', '1'])
    plain.worker.child.kill('SIGQUIT')
    assert.equal(await exitOf(plain.worker), 0)
    assert.doesNotMatch(plain.worker.output(), /Initiating Soft Shutdown/)
    assert.match(plain.worker.output(), /Cold shutdown/)
  })

  it('[USR2] opens the Node inspector and prints its address', async () => {
    const { worker } = await setup()
    worker.child.kill('SIGUSR2')
    await waitFor(() => /Node inspector listening on ws:\/\/127\.0\.0\.1:\d+\//.test(worker.output()), { what: 'inspector address' })
    await worker.stop()
  })

  it('[USR1] prints what each pool slot runs', async () => {
    const { env, node, worker } = await setup()
    const id = await callTask(env, 'life.sleep', [30])
    await waitActive(env, node, id)
    worker.child.kill('SIGUSR1')
    await waitFor(() => worker.output().includes('Pool slots (USR1)') && worker.output().includes('reserved:'), { what: 'USR1 dump' })
    assert.match(worker.output(), new RegExp(`#1 pid \\d+: life\\.sleep\\[${id}\\] args=\\(30,\\)`))
    await worker.stop('SIGQUIT')
  })
})

describe('time limits and revokes (prefork)', () => {
  it('[--time-limit] a task past its hard limit is killed; the next runs in a fresh child', async () => {
    const { env, worker } = await setup(['--time-limit', '1'])
    const pidBefore = (await resultMeta(env, await callTask(env, 'life.pid', []))).result
    const id = await callTask(env, 'life.stubborn', [30])
    const meta = await resultMeta(env, id)
    assert.equal(meta.status, 'FAILURE')
    assert.deepEqual(meta.result, { exc_type: 'TimeLimitExceeded', exc_message: [1], exc_module: 'celery.exceptions' })
    const pidAfter = (await resultMeta(env, await callTask(env, 'life.pid', []))).result
    assert.notEqual(pidAfter, pidBefore)
    await worker.stop()
  })

  it('[--soft-time-limit] the task sees SoftTimeLimitExceeded and cleans up', async () => {
    const { env, worker, home } = await setup(['--soft-time-limit', '1'])
    const marker = join(home, 'cleanup-marker')
    const meta = await resultMeta(env, await callTask(env, 'life.soft', [30, marker]))
    assert.deepEqual([meta.status, meta.result], ['SUCCESS', 'cleaned up'])
    assert.ok(existsSync(marker))
    assert.equal(readFileSync(marker, 'utf8').trim(), 'SoftTimeLimitExceeded')
    await worker.stop()
  })

  it('[control time_limit] applies to tasks started afterwards', async () => {
    const { env, node, worker } = await setup()
    const r = await runTsq(['control', 'time_limit', 'life.stubborn', '0.5', '1', '-d', node, '--json'], { env })
    assert.deepEqual(JSON.parse(r.stdout), [{ [node]: { ok: 'time limits set successfully' } }])
    const meta = await resultMeta(env, await callTask(env, 'life.stubborn', [30]))
    assert.equal((meta.result as { exc_type: string }).exc_type, 'TimeLimitExceeded')
    await worker.stop()
  })

  it('[revoke --terminate --signal SIGKILL] kills the running task: REVOKED', async () => {
    const { env, node, worker } = await setup()
    const id = await callTask(env, 'life.stubborn', [30])
    await waitActive(env, node, id)
    const r = await runTsq(['control', 'revoke', id, '--terminate', '--signal', 'SIGKILL', '-d', node, '--json'], { env })
    assert.deepEqual(JSON.parse(r.stdout), [{ [node]: { ok: `terminate: ${id}` } }])
    const meta = await resultMeta(env, id)
    assert.deepEqual(
      [meta.status, meta.result],
      ['REVOKED', { exc_type: 'TaskRevokedError', exc_message: ['terminated'], exc_module: 'celery.exceptions' }],
    )
    const revoked = await runTsq(['inspect', 'revoked', '-d', node, '--json'], { env })
    assert.deepEqual(JSON.parse(revoked.stdout)[node], [id])
    await worker.stop()
  })

  it('[revoke] a revoked task is skipped when it arrives', async () => {
    const { env, node, worker } = await setup()
    const blocker = await callTask(env, 'life.sleep', [8])
    await waitActive(env, node, blocker)
    const id = await callTask(env, 'life.sleep', [0])
    await runTsq(['control', 'revoke', id, '-d', node], { env })
    const meta = await resultMeta(env, id)
    assert.deepEqual(
      [meta.status, meta.result],
      ['REVOKED', { exc_type: 'TaskRevokedError', exc_message: ['revoked'], exc_module: 'celery.exceptions' }],
    )
    await worker.stop()
  })

  it('[--max-tasks-per-child] replaces the child between tasks', async () => {
    const { env, worker } = await setup(['--max-tasks-per-child', '2'])
    const pids = new Set<unknown>()
    for (let i = 0; i < 4; i++) pids.add((await resultMeta(env, await callTask(env, 'life.pid', []))).result)
    assert.ok(pids.size >= 2, `expected a replaced child, saw pids ${[...pids].join(', ')}`)
    await worker.stop()
  })
})
