// Worker lifecycle features, each driven through a spawned
// `tsq worker` on the embedded broker: --statedb, --autoscale,
// --max-memory-per-child, %I log files, and -D with pidfiles and HUP.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { sendTask } from '../../src/client/send-task.js'
import { createTransport, defaultFileBrokerUrl } from '../../src/transport/index.js'
import { waitFor } from '../helpers/brokers.js'
import { BIN, callTask, embeddedBrokerEnv, ROOT, runTsq, startWorker, taskResult, tempTsqHome } from '../helpers/cli.js'

const APP = 'test/fixtures/tasks/worker-extra-tasks.js'
let n = 0
const cleanups: Array<() => void> = []
after(() => {
  for (const c of cleanups.splice(0)) c()
})

function nodeName(): string {
  return `extra${++n}-${process.pid}@testhost`
}

async function stats(
  env: NodeJS.ProcessEnv,
  node: string,
): Promise<{ clock: string; pool: { processes: number[]; 'max-concurrency': number }; autoscaler?: Record<string, number> } | null> {
  const r = await runTsq(['inspect', 'stats', '-d', node, '--json', '-t', '2'], { env })
  if (r.code !== 0) return null
  return JSON.parse(r.stdout)[node] ?? null
}

async function ping(env: NodeJS.ProcessEnv, node: string): Promise<boolean> {
  const r = await runTsq(['inspect', 'ping', '-d', node, '--json', '-t', '1'], { env })
  return r.code === 0 && JSON.stringify(JSON.parse(r.stdout)).includes('pong')
}

/** Sends many tasks through one connection: `tsq call` per task would dominate the test. */
async function sendMany(env: NodeJS.ProcessEnv, task: string, args: unknown[], count: number, ids?: string[]): Promise<void> {
  const transport = await createTransport(defaultFileBrokerUrl(env))
  await transport.connect()
  try {
    for (let i = 0; i < count; i++) await sendTask(transport, task, { args, id: ids?.[i] })
  } finally {
    await transport.close()
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

function killPid(pid: number | null | undefined, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (!pid) return
  try {
    process.kill(pid, signal)
  } catch {
    // Already gone.
  }
}

describe('[--statedb] revoked ids and the clock survive a restart', () => {
  it('[-S] a revoked id stays revoked after a restart; a task with it is REVOKED', async () => {
    const home = tempTsqHome()
    const env = embeddedBrokerEnv(home)
    const node = nodeName()
    const statedb = join(home, 'state', '%n.db')
    const id = `statedb-${process.pid}-${Date.now()}`
    const args = ['-A', APP, '-c', '1', '-P', 'solo', '-l', 'INFO', '--without-heartbeat', '-S', statedb]
    const first = await startWorker(args, { env, nodename: node })
    const r = await runTsq(['control', 'revoke', id, '-d', node, '--json'], { env })
    assert.equal(r.code, 0, r.stderr)
    const clockBefore = Number((await stats(env, node))?.clock ?? 0)
    assert.equal(await first.stop('SIGTERM'), 0)
    const file = join(home, 'state', `${node.split('@')[0]}.db`)
    assert.ok(existsSync(file), `statedb file ${file} written at shutdown`)

    const second = await startWorker(args, { env, nodename: node })
    try {
      const revoked = await runTsq(['inspect', 'revoked', '-d', node, '--json'], { env })
      assert.deepEqual(JSON.parse(revoked.stdout)[node], [id])
      const clockAfter = Number((await stats(env, node))?.clock ?? 0)
      assert.ok(clockAfter > clockBefore, `clock ${clockAfter} continues from ${clockBefore}`)
      await sendMany(env, 'extra.sleep', [0], 1, [id])
      const meta = await taskResult(env, id)
      assert.deepEqual(
        [meta.status, meta.result],
        ['REVOKED', { exc_type: 'TaskRevokedError', exc_message: ['revoked'], exc_module: 'celery.exceptions' }],
      )
    } finally {
      await second.stop()
    }
  })
})

describe('[--autoscale] grows while tasks wait, shrinks when idle', () => {
  it('[--autoscale=4,1] 100 queued sleeps grow the pool to 4; idle returns it to 1', async () => {
    const home = tempTsqHome()
    const env = embeddedBrokerEnv(home, { AUTOSCALE_KEEPALIVE: '2' })
    const node = nodeName()
    const worker = await startWorker(['-A', APP, '--autoscale', '4,1', '-l', 'INFO', '--without-heartbeat'], { env, nodename: node })
    try {
      const initial = await stats(env, node)
      assert.equal(initial?.pool.processes.length, 1)
      assert.equal(initial?.pool['max-concurrency'], 4)
      const grow = await runTsq(['control', 'pool_grow', '1', '-d', node, '--json'], { env })
      assert.deepEqual(JSON.parse(grow.stdout), [
        { [node]: { error: 'pool_grow is not supported with autoscale. Adjust autoscale range instead.' } },
      ])
      await sendMany(env, 'extra.sleep', [0.2], 100)
      await waitFor(async () => (await stats(env, node))?.pool.processes.length === 4, {
        timeoutMs: 30_000,
        intervalMs: 200,
        what: 'pool grown to 4 processes',
      })
      await waitFor(async () => (await stats(env, node))?.pool.processes.length === 1, {
        timeoutMs: 60_000,
        intervalMs: 300,
        what: 'pool shrunk back to 1 process',
      })
      const purge = await runTsq(['purge', '-f', '--json'], { env })
      assert.equal(JSON.parse(purge.stdout).purged, 0, 'every task ran')
      const set = await runTsq(['control', 'autoscale', '6', '2', '-d', node, '--json'], { env })
      assert.deepEqual(JSON.parse(set.stdout), [{ [node]: { ok: 'autoscale now max=6 min=2' } }])
      await waitFor(async () => (await stats(env, node))?.autoscaler?.max === 6, { timeoutMs: 10_000, what: 'autoscaler max 6 in stats' })
    } finally {
      await worker.stop()
    }
    assert.match(worker.output(), /Scaling up \d+ processes/)
    assert.match(worker.output(), /Scaling down \d+ processes/)
  })
})

describe('[--max-memory-per-child] a child over the limit is replaced after its task', () => {
  it('[--max-memory-per-child 200000] allocating 300 MiB replaces the child', async () => {
    const home = tempTsqHome()
    const env = embeddedBrokerEnv(home)
    const node = nodeName()
    const worker = await startWorker(['-A', APP, '-c', '1', '-l', 'INFO', '--without-heartbeat', '--max-memory-per-child', '200000'], {
      env,
      nodename: node,
    })
    try {
      const pid1 = (await taskResult(env, await callTask(env, 'extra.pid', []))).result
      const pid2 = (await taskResult(env, await callTask(env, 'extra.pid', []))).result
      assert.equal(pid2, pid1, 'a child under the limit is kept')
      const rss = (await taskResult(env, await callTask(env, 'extra.alloc', [300]))).result as number
      assert.ok(rss > 200_000 * 1024, `the task grew the child to ${rss} bytes`)
      const pid3 = (await taskResult(env, await callTask(env, 'extra.pid', []))).result
      assert.notEqual(pid3, pid1, 'the child over the limit was replaced')
      assert.match(worker.output(), /over --max-memory-per-child 200000 KiB; replacing it/)
    } finally {
      await worker.stop()
    }
  })
})

/** A worker whose log goes to a file: readiness is seen through ping, not the console. */
async function startLoggingWorker(args: string[], env: NodeJS.ProcessEnv, node: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [BIN, 'worker', '-n', node, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: 'ignore',
  })
  cleanups.push(() => killPid(child.pid))
  await waitFor(() => ping(env, node), { timeoutMs: 30_000, intervalMs: 200, what: `${node} answering ping` })
  return child
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((r) => child.once('exit', r))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
  await exited
  clearTimeout(timer)
}

describe('[%I] per-process log files', () => {
  it('[--logfile %n%I.log --max-tasks-per-child 1] only the main file and -1..-N, across replacements', async () => {
    const home = tempTsqHome()
    const env = embeddedBrokerEnv(home)
    const node = nodeName()
    const logs = join(home, 'logs')
    const child = await startLoggingWorker(
      ['-A', APP, '-c', '2', '-l', 'INFO', '--without-heartbeat', '--max-tasks-per-child', '1', '--logfile', join(logs, '%n%I.log')],
      env,
      node,
    )
    const ids: string[] = []
    for (let i = 0; i < 6; i++) ids.push(await callTask(env, 'extra.log', [`line ${i}`]))
    const pids = new Set<unknown>()
    for (const id of ids) pids.add((await taskResult(env, id)).result)
    await stopChild(child)
    assert.ok(pids.size >= 3, `children were replaced (saw ${pids.size} pids)`)
    const short = node.split('@')[0]!
    assert.deepEqual(readdirSync(logs).sort(), [`${short}-1.log`, `${short}-2.log`, `${short}.log`].sort())
    const slotText = readFileSync(join(logs, `${short}-1.log`), 'utf8') + readFileSync(join(logs, `${short}-2.log`), 'utf8')
    for (let i = 0; i < 6; i++) assert.match(slotText, new RegExp(`extra\\.log: line ${i}`))
    assert.match(readFileSync(join(logs, `${short}.log`), 'utf8'), /ready\./)
  })
})

describe('[-D --pidfile] detached worker and its pidfile', () => {
  async function detached(env: NodeJS.ProcessEnv, node: string, pidfile: string, logfile: string) {
    const r = await runTsq(
      [
        'worker',
        '-D',
        '-A',
        APP,
        '-P',
        'solo',
        '-c',
        '1',
        '-l',
        'INFO',
        '--without-heartbeat',
        '-n',
        node,
        '--pidfile',
        pidfile,
        '--logfile',
        logfile,
      ],
      { env },
    )
    return r
  }

  function readPidfile(path: string): number | null {
    try {
      const pid = Number.parseInt(readFileSync(path, 'utf8'), 10)
      return Number.isInteger(pid) ? pid : null
    } catch {
      return null
    }
  }

  it('[pidfile of a dead pid] is replaced with a warning', async () => {
    const home = tempTsqHome()
    const env = embeddedBrokerEnv(home)
    const node = nodeName()
    const pidfile = join(home, 'w.pid')
    const logfile = join(home, 'w.log')
    const gone = spawn('true')
    await new Promise((r) => gone.once('exit', r))
    writeFileSync(pidfile, `${gone.pid}\n`)
    const r = await detached(env, node, pidfile, logfile)
    assert.equal(r.code, 0, r.stderr)
    const pid = await waitFor(
      () => {
        const p = readPidfile(pidfile)
        return p !== null && p !== gone.pid ? p : null
      },
      { timeoutMs: 20_000, what: 'pidfile rewritten' },
    )
    cleanups.push(() => killPid(pid))
    await waitFor(() => ping(env, node), { timeoutMs: 30_000, intervalMs: 200, what: 'detached worker ping' })
    assert.match(readFileSync(logfile, 'utf8'), new RegExp(`Replacing stale pidfile .* \\(pid ${gone.pid} is not running\\)`))
    killPid(pid, 'SIGTERM')
    await waitFor(() => !pidAlive(pid), { timeoutMs: 20_000, what: 'detached worker exit' })
  })

  it('[pidfile of a live non-tsq process] is replaced; [live tsq worker] refuses with 73; [HUP] restarts in place', async () => {
    const home = tempTsqHome()
    const env = embeddedBrokerEnv(home)
    const node = nodeName()
    const pidfile = join(home, 'w.pid')
    const logfile = join(home, 'w.log')
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' })
    cleanups.push(() => killPid(sleeper.pid))
    writeFileSync(pidfile, `${sleeper.pid}\n`)
    const r = await detached(env, node, pidfile, logfile)
    assert.equal(r.code, 0, r.stderr)
    const pid = await waitFor(
      () => {
        const p = readPidfile(pidfile)
        return p !== null && p !== sleeper.pid ? p : null
      },
      { timeoutMs: 20_000, what: 'pidfile rewritten' },
    )
    cleanups.push(() => killPid(pid))
    await waitFor(() => ping(env, node), { timeoutMs: 30_000, intervalMs: 200, what: 'detached worker ping' })
    assert.match(readFileSync(logfile, 'utf8'), new RegExp(`Replacing stale pidfile .* \\(pid ${sleeper.pid} is not a tsq worker\\)`))
    killPid(sleeper.pid)

    // A live tsq worker holds the pidfile: both a detached and a foreground start refuse.
    const again = await detached(env, nodeName(), pidfile, join(home, 'other.log'))
    assert.equal(again.code, 73)
    assert.equal(again.stderr.trim().split('\n').length, 1, again.stderr)
    assert.match(again.stderr, /Pidfile .* already exists: worker pid \d+ is running/)
    const fg = await runTsq(['worker', '-A', APP, '-P', 'solo', '-n', nodeName(), '--pidfile', pidfile, '-q'], { env })
    assert.equal(fg.code, 73)
    assert.match(fg.stderr, /already exists/)
    assert.equal(readPidfile(pidfile), pid)

    // HUP: the detached worker restarts in place: a new pid in the pidfile, still answering.
    process.kill(pid, 'SIGHUP')
    const newPid = await waitFor(
      () => {
        const p = readPidfile(pidfile)
        return p !== null && p !== pid ? p : null
      },
      { timeoutMs: 30_000, what: 'new pid in the pidfile after HUP' },
    )
    cleanups.push(() => killPid(newPid))
    await waitFor(() => !pidAlive(pid), { timeoutMs: 20_000, what: 'old worker gone after HUP' })
    await waitFor(() => ping(env, node), { timeoutMs: 30_000, intervalMs: 200, what: 'restarted worker ping' })
    killPid(newPid, 'SIGTERM')
    await waitFor(() => !pidAlive(newPid), { timeoutMs: 20_000, what: 'restarted worker exit' })
    assert.equal(existsSync(pidfile), false, 'the pidfile is removed at exit')
  })
})

describe('[broken pipe] a worker whose console pipe closes (`tsq worker | head`) keeps working and stops on SIGTERM', () => {
  it('ignores EPIPE instead of reporting it into the same pipe for ever, and still exits on SIGTERM', async () => {
    const home = tempTsqHome()
    const env = embeddedBrokerEnv(home)
    const node = nodeName()
    const worker = await startWorker(['-A', APP, '-P', 'solo', '-l', 'INFO'], { env, nodename: node })
    cleanups.push(() => killPid(worker.child.pid))
    // What `head` does once it has its lines: the read ends go, and the next log line gets EPIPE.
    worker.child.stdout!.destroy()
    worker.child.stderr!.destroy()
    const r = await taskResult(env, await callTask(env, 'extra.pid', []))
    assert.equal(r.status, 'SUCCESS', 'it still runs tasks, logging into the closed pipe')
    assert.equal(await ping(env, node), true)
    assert.equal(await worker.stop('SIGTERM'), 0, 'it stops on SIGTERM')
  })
})
