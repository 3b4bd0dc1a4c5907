// `tsq logtool` (issue 26 item 7) on logs written by real workers: a Python
// Celery 5.2.6 worker and a tsq worker each run 3 tasks that succeed, 3 that
// raise, and one that is still running when the worker is killed with -9.
// The counts come out right, the unfinished task is the one `incomplete`
// names, and `errors` prints each failure with its whole traceback. Celery's
// own logtool is run on the Python log beside it, to show what it gets wrong.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'
import { gzipSync } from 'node:zlib'
import { createApp, type App } from '../../src/index.js'
import { brokerSkipReason, REDIS_URL, uniqueName } from '../helpers/brokers.js'
import { BIN, ROOT, runTsq, tempTsqHome } from '../helpers/cli.js'
import { GroupProcess, sleep } from '../helpers/process-group.js'
import { PY_DIR, PYTHON, run } from '../interop/helpers/python-worker.js'

const BROKER = REDIS_URL.replace(/\/0$/, '/12')
const skip = await brokerSkipReason('redis')
const home = tempTsqHome()

interface WrittenLog {
  path: string
  okIds: string[]
  failIds: string[]
  runningId: string
}

function fileText(path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return ''
  }
}

async function waitForLog(path: string, test: (text: string) => boolean, what: string, child: GroupProcess): Promise<void> {
  const deadline = Date.now() + 60_000
  while (!test(fileText(path))) {
    if (child.hasExited) throw new Error(`worker exited before ${what}:\n${child.logTail()}\n${fileText(path)}`)
    if (Date.now() > deadline) throw new Error(`no ${what} in the log in time:\n${fileText(path)}`)
    await sleep(200)
  }
}

/** Starts a worker (argv) writing `path`, sends the tasks, kills it -9 while proj.sleep runs. */
async function writeLog(
  cmd: string,
  argv: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  queue: string,
  path: string,
): Promise<WrittenLog> {
  const child = new GroupProcess(
    spawn(cmd, argv, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true }),
  )
  let app: App | undefined
  try {
    await waitForLog(path, (t) => /ready\.\s*$/m.test(t), '"ready."', child)
    app = createApp({ name: 'proj', broker: BROKER })
    const ok = await Promise.all([1, 2, 3].map((n) => app!.sendTask('proj.add', [n, n], {}, { queue })))
    const failed = await Promise.all(['a', 'b', 'c'].map((m) => app!.sendTask('proj.fail', [m], {}, { queue })))
    const finished = (t: string) => [...ok, ...failed].every((r) => new RegExp(`\\[${r.id}\\] (succeeded|raised)`).test(t))
    await waitForLog(path, finished, 'finished tasks', child)
    const running = await app.sendTask('proj.sleep', [600], {}, { queue })
    await waitForLog(path, (t) => t.includes(`[${running.id}] received`), 'the running task', child)
    // Let the pool start it; what is asserted holds either way (received, never finished).
    await sleep(500)
    return { path, okIds: ok.map((r) => r.id), failIds: failed.map((r) => r.id), runningId: running.id }
  } finally {
    await child.stopWith(() => process.kill(-child.pid, 'SIGKILL'), 10_000)
    await app?.close()
  }
}

function checkLog(log: WrittenLog, what: string) {
  it(`${what}: stats counts 7 received, 3 succeeded, 3 failed, 1 incomplete`, async () => {
    const r = await runTsq(['logtool', 'stats', log.path, '--json'])
    assert.equal(r.code, 0, r.stderr)
    const stats = JSON.parse(r.stdout)
    assert.deepEqual(
      { total: stats.total, succeeded: stats.succeeded, failed: stats.failed, completed: stats.completed, incomplete: stats.incomplete },
      { total: 7, succeeded: 3, failed: 3, completed: 6, incomplete: 1 },
    )
    assert.deepEqual(stats.tasks, [
      { name: 'proj.add', count: 3 },
      { name: 'proj.fail', count: 3 },
      { name: 'proj.sleep', count: 1 },
    ])
    const text = await runTsq(['logtool', 'stats', log.path])
    assert.match(text.stdout, /Task total: 7\nTask errors: 3\nTask success: 3\nTask completed: 6\nTask retries: 0\nTask incomplete: 1\n/)
  })

  it(`${what}: incomplete names the task that was running`, async () => {
    const r = await runTsq(['logtool', 'incomplete', log.path])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, `Did not complete: ${log.runningId}\n`)
  })

  it(`${what}: errors prints each failure with its whole traceback`, async () => {
    const r = await runTsq(['logtool', 'errors', log.path, '--json'])
    const errors = JSON.parse(r.stdout) as string[]
    assert.equal(errors.length, 3)
    // Two pool processes: the failures finish in any order.
    for (const id of log.failIds) {
      const error = errors.find((e) => e.includes(`[${id}]`))
      assert.ok(error, `no error record for ${id}`)
      assert.match(error, new RegExp(`Task proj\\.fail\\[${id}\\] raised unexpected`))
      assert.ok(error.split('\n').length > 2, `a traceback follows: ${error}`)
    }
    const traces = await runTsq(['logtool', 'traces', log.path, '--json'])
    assert.ok((JSON.parse(traces.stdout) as string[]).length >= 3)
  })

  it(`${what}: a .gz copy and stdin read the same`, async () => {
    const gz = `${log.path}.gz`
    writeFileSync(gz, gzipSync(readFileSync(log.path)))
    const fromGz = await runTsq(['logtool', 'incomplete', gz])
    assert.equal(fromGz.stdout, `Did not complete: ${log.runningId}\n`)
    const fromStdin = await runTsq(['logtool', 'incomplete', '-'], { input: readFileSync(log.path, 'utf8') })
    assert.equal(fromStdin.stdout, `Did not complete: ${log.runningId}\n`)
  })
}

describe('tsq logtool on worker logs (issue 26 item 7)', { skip }, () => {
  const python = { path: join(home, 'python-worker.log') } as WrittenLog
  const tsq = { path: join(home, 'tsq-worker.log') } as WrittenLog

  before(async () => {
    const pyQueue = uniqueName('cli-logtool-py')
    Object.assign(
      python,
      await writeLog(
        PYTHON,
        [
          '-m',
          'celery',
          '-A',
          'tasks',
          'worker',
          '-P',
          'prefork',
          '-c',
          '2',
          '-Q',
          pyQueue,
          '-n',
          `${pyQueue}@%h`,
          '--without-gossip',
          '--without-mingle',
          '-l',
          'INFO',
          '--logfile',
          python.path,
        ],
        PY_DIR,
        { PYTHONPATH: PY_DIR, PYTHONDONTWRITEBYTECODE: '1', TSQ_INTEROP_BROKER: BROKER, TSQ_INTEROP_BACKEND: BROKER },
        pyQueue,
        python.path,
      ),
    )
    const tsqQueue = uniqueName('cli-logtool-tsq')
    Object.assign(
      tsq,
      await writeLog(
        process.execPath,
        [
          BIN,
          'worker',
          '-A',
          'test/fixtures/tasks/interop-tasks.js',
          '-b',
          BROKER,
          '-P',
          'prefork',
          '-c',
          '2',
          '-Q',
          tsqQueue,
          '-n',
          `${tsqQueue}@%h`,
          '-l',
          'INFO',
          '--logfile',
          tsq.path,
        ],
        ROOT,
        { TSQ_HOME: home },
        tsqQueue,
        tsq.path,
      ),
    )
  })

  describe('a Python Celery 5.2.6 worker log', () => {
    checkLog(python, 'python log')
    it("celery logtool stats miscounts the same log (the reason tsq's exists)", async () => {
      const r = await run(PYTHON, ['-m', 'celery', 'logtool', 'stats', python.path], { cwd: PY_DIR })
      assert.doesNotMatch(r.stdout, /Task total: 7\n/)
    })
  })
  describe('a tsq worker log', () => checkLog(tsq, 'tsq log'))
})

describe('tsq logtool errors', () => {
  it('a missing file is one line and exit 64', async () => {
    const r = await runTsq(['logtool', 'stats', join(home, 'no-such.log')])
    assert.equal(r.code, 64)
    assert.match(r.stderr, /^Error: cannot read .*no-such\.log: no such file\n$/)
  })
})
