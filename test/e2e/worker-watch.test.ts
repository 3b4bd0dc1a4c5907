// tsq-test: slow
// tsq-test: exclusive (its 3 s reload bound needs a quiet machine: under six lanes a new worker starts late)
// `tsq worker --watch` restarts the worker when a local file its task module
// imports changes, without losing or repeating a task. A .ts task module
// imports ./answer.ts; tasks are sent at a steady rate while answer.ts is
// edited (a few more held for a countdown across the edit), and each task
// appends its id and the answer its code gave to a log. Every id is in the log
// exactly once, the answers switch from the old to the
// new one once and for good (two workers never consume at once), the new
// answer is given within 3 s of the edit, and one `[watch] reloading: answer.ts
// changed` line is printed per reload. An edit that does not load (a syntax
// error) leaves the old worker answering, with the load error and one line
// saying so, until a fixed save replaces it. On the embedded broker (prefork,
// solo) and on Redis (threads). After INT, no process the supervisor started
// is left: each is found by its environment and must already be gone. -D and
// a missing -A are refused.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { createApp } from '../../src/app/index.js'
import { REDIS_URL, brokerSkipReason, deleteRedisBindingsOfThisProcess, uniqueName, waitFor } from '../helpers/brokers.js'
import { BIN, ROOT, runTsq, tempTsqHome } from '../helpers/cli.js'

const TASKS = 200
const ETA_TASKS = 5
const SEND_EVERY_MS = 50
/** How long after the edit's write the new code must have answered. */
const NEW_CODE_WITHIN_MS = 3000
const REDIS_DB = REDIS_URL.replace(/\/\d*$/, '/11')

const answerModule = (answer: string) => `export const ANSWER: string = '${answer}'\n`

/** A project folder: tasks.ts, which imports answer.ts, in a package of ES modules. */
function project(): { dir: string; log: string } {
  const dir = tempTsqHome()
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n')
  writeFileSync(join(dir, 'answer.ts'), answerModule('v1'))
  writeFileSync(
    join(dir, 'tasks.ts'),
    `import { appendFileSync } from 'node:fs'
import { createApp } from ${JSON.stringify(join(ROOT, 'dist/index.js'))}
import { ANSWER } from './answer.js'

export const app = createApp({ name: 'watched' })

app.task('watched.echo', async (id: number) => {
  await new Promise((resolve) => setTimeout(resolve, 20))
  appendFileSync(process.env.WATCH_TEST_LOG!, \`\${id} \${ANSWER} \${Date.now()}\\n\`)
  return ANSWER
})
`,
  )
  return { dir, log: join(dir, 'ran.log') }
}

interface Ran {
  id: number
  answer: string
  at: number
}

function ranTasks(log: string): Ran[] {
  if (!existsSync(log)) return []
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [id, answer, at] = line.split(' ')
      return { id: Number(id), answer: answer!, at: Number(at) }
    })
}

/** The pids of live processes whose environment holds `marker` (every process the supervisor started inherits it). */
function processesWith(marker: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').includes(marker)) pids.push(Number(entry))
    } catch {
      // Gone meanwhile, or not ours.
    }
  }
  return pids
}

class Supervisor {
  readonly child: ChildProcess
  private out = ''
  readonly exited: Promise<number | null>

  constructor(dir: string, args: string[], env: NodeJS.ProcessEnv) {
    this.child = spawn(process.execPath, [BIN, 'worker', '-A', './tasks.ts', '--watch', ...args], {
      cwd: dir,
      env: { ...process.env, TSQ_BROKER_URL: '', CELERY_BROKER_URL: '', TSQ_RESULT_BACKEND: '', CELERY_RESULT_BACKEND: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    this.child.stdout!.setEncoding('utf8').on('data', (d: string) => (this.out += d))
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.out += d))
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)))
  }

  get output(): string {
    return this.out
  }

  /** The output without the worker's line per task, for a failure's message. */
  story(): string {
    return this.out
      .split('\n')
      .filter((line) => !/Task watched\.echo\[/.test(line))
      .slice(-60)
      .join('\n')
  }

  /** waitFor, with the output as it is when the wait gives up. */
  async waitFor<T>(probe: () => T, timeoutMs: number, what: string): Promise<NonNullable<T>> {
    return waitFor(probe, { timeoutMs, what }).catch((error: Error) => {
      throw new Error(`${error.message}; the supervisor's output:\n${this.story()}`)
    })
  }

  count(pattern: RegExp): number {
    return this.out.match(new RegExp(pattern.source, `${pattern.flags}g`))?.length ?? 0
  }

  /** INT, as a Ctrl-C: the worker stops warm and the supervisor exits with it. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGINT')
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 60_000)
    const code = await this.exited
    clearTimeout(timer)
    return code
  }
}

/** Sends tasks `from` to `to` (excluded), one every SEND_EVERY_MS; `sent()` says how many so far. */
function sendSteadily(broker: string, queue: string, from: number, to: number): { sent: () => number; done: Promise<void> } {
  let sent = 0
  const done = (async () => {
    const app = createApp({ name: 'watch-sender', broker })
    try {
      const start = Date.now()
      for (let id = from; id < to; id++) {
        await app.sendTask('watched.echo', [id], {}, { queue })
        sent += 1
        const next = start + (id - from + 1) * SEND_EVERY_MS
        if (next > Date.now()) await new Promise((r) => setTimeout(r, next - Date.now()))
      }
    } finally {
      await app.close()
    }
  })()
  return { sent: () => sent, done }
}

/** Tasks `from` to `to` (excluded) at once, each with a countdown: the worker holds them unacknowledged until then. */
async function sendWithCountdown(broker: string, queue: string, from: number, to: number, countdown: number): Promise<void> {
  const app = createApp({ name: 'watch-sender', broker })
  try {
    for (let id = from; id < to; id++) await app.sendTask('watched.echo', [id], {}, { queue, countdown })
  } finally {
    await app.close()
  }
}

function assertEachRanOnce(ran: Ran[], count: number): void {
  const ids = ran.map((r) => r.id).sort((a, b) => a - b)
  const duplicates = ids.filter((id, i) => i > 0 && ids[i - 1] === id)
  assert.deepEqual(duplicates, [], 'no task ran twice')
  assert.deepEqual(
    ids,
    Array.from({ length: count }, (_, i) => i),
    'every task ran',
  )
}

/** The answers, in the order the tasks finished, with repeats folded: ['v1', 'v2'] means one switch, for good. */
function answerRuns(ran: Ran[]): string[] {
  const sorted = [...ran].sort((a, b) => a.at - b.at)
  return sorted.map((r) => r.answer).filter((answer, i, all) => i === 0 || all[i - 1] !== answer)
}

async function setUp(t: { after: (fn: () => Promise<void>) => void }, broker: string, pool: string[]) {
  const { dir, log } = project()
  const queue = uniqueName('watch')
  const node = `${queue}@testhost`
  const supervisor = new Supervisor(dir, ['-b', broker, '-Q', queue, '-n', node, '-l', 'INFO', '--without-heartbeat', ...pool], {
    WATCH_TEST_LOG: log,
  })
  t.after(async () => {
    await supervisor.stop()
    for (const pid of processesWith(log)) process.kill(pid, 'SIGKILL')
  })
  await supervisor.waitFor(() => supervisor.output.includes(`${node} ready.`) || supervisor.child.exitCode !== null, 120_000, 'ready')
  assert.ok(supervisor.output.includes(`${node} ready.`), supervisor.story())
  return { dir, log, queue, supervisor }
}

async function stopAndCheckNothingLeft(supervisor: Supervisor, log: string): Promise<void> {
  assert.equal(await supervisor.stop(), 0, supervisor.story())
  // The worker's pool processes may take their last instant to exit after it.
  const left = await waitFor(() => (processesWith(log).length === 0 ? 'none' : undefined), {
    timeoutMs: 10_000,
    what: 'no process left',
  }).catch(() => processesWith(log))
  assert.equal(left, 'none', `processes left behind: ${String(left)}`)
}

const redisSkip = await brokerSkipReason('redis')
const redisQueues: string[] = []

after(async () => {
  if (redisQueues.length === 0) return
  const redis = new Redis(REDIS_DB)
  try {
    await redis.del(...redisQueues)
  } finally {
    redis.disconnect()
  }
  await deleteRedisBindingsOfThisProcess(REDIS_DB, 'watch')
})

describe('tsq worker --watch', () => {
  it('refuses -D and a missing -A: one line, exit 64', async () => {
    for (const args of [['--watch', '-D', '-A', './tasks.ts'], ['--watch']]) {
      const r = await runTsq(['worker', ...args], { env: { TSQ_HOME: tempTsqHome() } })
      assert.equal(r.code, 64, r.stderr)
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
      assert.match(r.stderr, /^Error: --watch (is a development mode that runs in the foreground|needs -A\/--app)/)
    }
  })

  for (const { name, pool, broker, skip } of [
    { name: 'embedded broker, prefork', pool: ['-P', 'prefork', '-c', '2'], broker: 'file', skip: false as string | false },
    // One thread: a second one, started lazily after the edit, would load the new code in the old worker.
    // Without mingle, whose one-second wait for peers each reload adds (docs/watch.md says so).
    { name: 'Redis, threads', pool: ['-P', 'threads', '-c', '1', '--without-mingle'], broker: 'redis', skip: redisSkip },
  ]) {
    it(`[${name}] an edit of an imported file: every task once, the new answer within 3 s`, { skip }, async (t) => {
      const url = broker === 'file' ? `file://${tempTsqHome()}/broker` : REDIS_DB
      const { dir, log, queue, supervisor } = await setUp(t, url, pool)
      if (broker === 'redis') redisQueues.push(queue)
      const sender = sendSteadily(url, queue, 0, TASKS)
      await supervisor.waitFor(() => sender.sent() >= 100 && ranTasks(log).length > 0, 60_000, '100 tasks sent, one run')
      // Held by the old worker for their countdown when the edit comes: given back to the broker, and run once.
      await sendWithCountdown(url, queue, TASKS, TASKS + ETA_TASKS, 2)
      writeFileSync(join(dir, 'answer.ts'), answerModule('v2'))
      const editedAt = Date.now()
      await sender.done
      await supervisor.waitFor(() => ranTasks(log).length >= TASKS + ETA_TASKS, 120_000, 'every task run')
      await stopAndCheckNothingLeft(supervisor, log)
      const ran = ranTasks(log)
      assertEachRanOnce(ran, TASKS + ETA_TASKS)
      assert.deepEqual(answerRuns(ran), ['v1', 'v2'], `the old code, then the new one for good:\n${supervisor.story()}`)
      const firstNew = Math.min(...ran.filter((r) => r.answer === 'v2').map((r) => r.at))
      t.diagnostic(`the new code answered ${firstNew - editedAt} ms after the edit`)
      assert.ok(firstNew - editedAt <= NEW_CODE_WITHIN_MS, `the new code answered ${firstNew - editedAt} ms after the edit`)
      assert.equal(supervisor.count(/^\[watch\] reloading: answer\.ts changed$/m), 1, supervisor.story())
      assert.equal(supervisor.count(/\[watch\]/), 1, supervisor.story())
    })
  }

  it('[embedded broker, solo] a syntax error keeps the old code answering; the fix replaces it', async (t) => {
    const url = `file://${tempTsqHome()}/broker`
    const { dir, log, queue, supervisor } = await setUp(t, url, ['-P', 'solo'])
    await sendSteadily(url, queue, 0, 30).done
    writeFileSync(join(dir, 'answer.ts'), "export const ANSWER: string = 'v2\n")
    await supervisor.waitFor(() => supervisor.output.includes('[watch] the new code failed to load'), 120_000, 'the broken save tried')
    // The old worker goes on: these are answered by the code it loaded.
    await sendSteadily(url, queue, 30, 100).done
    await supervisor.waitFor(() => ranTasks(log).length >= 100, 60_000, '100 tasks run')
    assert.deepEqual(answerRuns(ranTasks(log)), ['v1'])
    const sender = sendSteadily(url, queue, 100, TASKS)
    await supervisor.waitFor(() => sender.sent() >= 20, 60_000, '120 tasks sent')
    writeFileSync(join(dir, 'answer.ts'), answerModule('v3'))
    const fixedAt = Date.now()
    await sender.done
    await supervisor.waitFor(() => ranTasks(log).length >= TASKS, 120_000, `${TASKS} tasks run`)
    await stopAndCheckNothingLeft(supervisor, log)
    const ran = ranTasks(log)
    assertEachRanOnce(ran, TASKS)
    assert.deepEqual(answerRuns(ran), ['v1', 'v3'], 'the broken save never ran')
    const firstNew = Math.min(...ran.filter((r) => r.answer === 'v3').map((r) => r.at))
    t.diagnostic(`the fixed code answered ${firstNew - fixedAt} ms after the fix`)
    assert.ok(firstNew - fixedAt <= NEW_CODE_WITHIN_MS, `the fixed code answered ${firstNew - fixedAt} ms after the fix`)
    assert.equal(supervisor.count(/^\[watch\] reloading: answer\.ts changed$/m), 2, supervisor.story())
    // The load error names the file the syntax error is in (the imported one) and where in it.
    assert.match(supervisor.output, /Error: cannot load .*tasks\.ts: .* at .*answer\.ts:\d+:\d+/)
    assert.match(
      supervisor.output,
      /^\[watch\] the new code failed to load \(its error is above\): the worker goes on with the code it loaded/m,
    )
    assert.equal(supervisor.count(/\[watch\]/), 3, supervisor.story())
  })
})
