// The threads pool starts its threads when tasks need them, up to -c, as
// Python's ThreadPoolExecutor does: each thread is a V8 isolate holding its
// own copy of tsq and the task module, which an idle worker does not need.
// A slot creates its %I log file when it starts, so the files say which
// threads exist. Embedded broker.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { waitFor } from '../helpers/brokers.js'
import { BIN, callTask, embeddedBrokerEnv, ROOT, runTsq, taskResult, tempTsqHome } from '../helpers/cli.js'

const APP = 'test/fixtures/tasks/worker-extra-tasks.js'
const children: ChildProcess[] = []
after(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
})

async function ping(env: NodeJS.ProcessEnv, node: string): Promise<boolean> {
  const r = await runTsq(['inspect', 'ping', '-d', node, '--json', '-t', '1'], { env })
  return r.code === 0 && r.stdout.includes('pong')
}

describe('[-P threads] threads start on demand', () => {
  it('none at rest; one for a lone task; a second when a task arrives while the first is busy; never past -c', async () => {
    const home = tempTsqHome()
    const env = embeddedBrokerEnv(home)
    const node = `lazythreads-${process.pid}@testhost`
    const short = node.split('@')[0]!
    const logs = join(home, 'logs')
    const child = spawn(
      process.execPath,
      [
        BIN,
        'worker',
        '-n',
        node,
        '-A',
        APP,
        '-P',
        'threads',
        '-c',
        '2',
        '-l',
        'INFO',
        '--without-heartbeat',
        '--logfile',
        join(logs, '%n%I.log'),
      ],
      {
        cwd: ROOT,
        env: { ...process.env, ...env },
        stdio: 'ignore',
      },
    )
    children.push(child)
    await waitFor(() => ping(env, node), { timeoutMs: 30_000, intervalMs: 200, what: `${node} answering ping` })
    const files = () => readdirSync(logs).sort()
    assert.deepEqual(files(), [`${short}.log`], 'no thread before the first task')

    assert.equal((await taskResult(env, await callTask(env, 'extra.pid', []))).status, 'SUCCESS')
    assert.deepEqual(files(), [`${short}-1.log`, `${short}.log`], 'one thread for one task')

    // The second arrives while the first sleeps in thread 1: a second thread takes it.
    const first = await callTask(env, 'extra.sleep', [3])
    const second = await callTask(env, 'extra.sleep', [0.2])
    assert.equal((await taskResult(env, second)).status, 'SUCCESS')
    assert.equal((await taskResult(env, first)).status, 'SUCCESS')
    assert.deepEqual(files(), [`${short}-1.log`, `${short}-2.log`, `${short}.log`])

    // Busier than -c: still two threads, every task run.
    const ids = await Promise.all(Array.from({ length: 4 }, () => callTask(env, 'extra.sleep', [0.5])))
    for (const id of ids) assert.equal((await taskResult(env, id)).status, 'SUCCESS')
    assert.deepEqual(files(), [`${short}-1.log`, `${short}-2.log`, `${short}.log`])

    const exited = new Promise((r) => child.once('exit', r))
    child.kill('SIGTERM')
    await exited
  })
})
