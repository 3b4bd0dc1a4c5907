// Issue 21's "Must show", on Redis (broker and lock store): mutual exclusion
// under load (two prefork workers, 1,000 tasks over 10 keys, 0 overlaps), the
// no-leak cases (a)–(f), a deposed holder refused by a fenced write, and bad
// input (a key function that throws, a lock store that is down).
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { sendTask } from '../../src/app/send-task.js'
import { createTransport, type Transport } from '../../src/transport/index.js'
import { brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../helpers/brokers.js'
import { runTsq, startWorker, type SpawnedWorker } from '../helpers/cli.js'

const APP = 'test/fixtures/tasks/locks-tasks.js'
const skip = await brokerSkipReason('redis')
const LEASE_S = 3
const workers: SpawnedWorker[] = []
let redis: Redis
let transport: Transport
let queue: string
let log: string

interface Event {
  key: string
  id: string
  event?: string
  at?: number
  start?: number
  end?: number
  token: number
  pid: number
}

async function events(): Promise<Event[]> {
  return (await redis.lrange(log, 0, -1)).map((l) => JSON.parse(l) as Event)
}

async function worker(extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<SpawnedWorker> {
  const w = await startWorker(['-A', APP, '-b', REDIS_URL, '-Q', queue, '-P', 'prefork', '-c', '4', '-l', 'INFO', '--without-mingle', '--without-gossip', ...extra], {
    nodename: uniqueName('locks') + '@h',
    env: { TSQ_LOCK_LOG: log, TSQ_LOCK_LEASE: String(LEASE_S), TSQ_TEST_REDIS_URL: REDIS_URL, ...env },
  })
  workers.push(w)
  return w
}

const send = (task: string, args: unknown[], extra: { timeLimit?: number; id?: string } = {}) => sendTask(transport, task, { args, queue, ...extra })

async function startOf(key: string, n = 1): Promise<Event[]> {
  return waitFor(async () => {
    const starts = (await events()).filter((e) => e.key === key && e.event === 'start')
    return starts.length >= n ? starts : null
  }, { timeoutMs: 30_000, what: `${n} start(s) of ${key}` })
}

/** Pool process pids of a worker (its children). */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).trim().split('\n').filter(Boolean).map(Number)
  } catch {
    return []
  }
}

describe('task locks on Redis', { skip, timeout: 300_000 }, () => {
  before(async () => {
    redis = new Redis(REDIS_URL)
    transport = await createTransport(REDIS_URL)
    await transport.connect()
  })
  after(async () => {
    for (const w of workers) await w.stop('SIGKILL').catch(() => undefined)
    await transport?.close({ requeueUnacked: false }).catch(() => undefined)
    redis?.disconnect()
  })

  const fresh = () => {
    queue = uniqueName('locksq')
    log = uniqueName('lockslog')
  }

  it('mutual exclusion under load: two prefork workers, 1,000 tasks over 10 keys, 0 overlaps, all finish', async () => {
    fresh()
    await worker()
    await worker()
    for (let i = 0; i < 1000; i++) await send('locks.record', [`key-${i % 10}`, 5])
    const done = await waitFor(async () => {
      const all = await events()
      return new Set(all.map((e) => e.id)).size >= 1000 ? all : null
    }, { timeoutMs: 240_000, intervalMs: 500, what: '1,000 runs' })
    const byKey = new Map<string, Event[]>()
    for (const e of done) byKey.set(e.key, [...(byKey.get(e.key) ?? []), e])
    let overlaps = 0
    for (const runs of byKey.values()) {
      runs.sort((a, b) => a.start! - b.start!)
      for (let i = 1; i < runs.length; i++) if (runs[i]!.start! < runs[i - 1]!.end!) overlaps++
      // Tokens grow with every acquisition of the key.
      for (let i = 1; i < runs.length; i++) assert.ok(runs[i]!.token > runs[i - 1]!.token)
    }
    assert.equal(overlaps, 0)
    assert.equal(new Set(done.map((e) => e.id)).size, 1000)
    assert.equal(done.length, 1000, 'no task ran twice')
    assert.equal(new Set(done.map((e) => e.pid)).size > 4, true, 'both workers ran tasks')
    for (const w of workers.splice(0)) await w.stop()
  })

  it('(a) hard time limit, (b) revoke --terminate, (c) kill -9 of a pool process: the next run of the key starts within 1 s', async () => {
    fresh()
    const w = await worker()
    // (a)
    await send('locks.hold', ['a', 60_000], { timeLimit: 2 })
    const [first] = await startOf('a')
    await send('locks.hold', ['a', 10])
    const [, second] = await startOf('a', 2)
    assert.ok(second!.at! - first!.at! < 2000 + 1000, `(a) next start ${second!.at! - first!.at!} ms after the first`)
    // (b)
    const bId = uniqueName('b')
    await send('locks.hold', ['b', 60_000], { id: bId })
    await startOf('b')
    await send('locks.hold', ['b', 10])
    const revokedAt = Date.now()
    const r = await runTsq(['control', 'revoke', bId, '--terminate', '-b', REDIS_URL, '-d', w.nodename], { timeoutMs: 30_000 })
    assert.equal(r.code, 0, r.stderr)
    const [, bNext] = await startOf('b', 2)
    assert.ok(bNext!.at! - revokedAt < 1000 + 1500, `(b) next start ${bNext!.at! - revokedAt} ms after the revoke`)
    // (c)
    await send('locks.hold', ['c', 60_000])
    const [cFirst] = await startOf('c')
    await send('locks.hold', ['c', 10])
    const killedAt = Date.now()
    process.kill(cFirst!.pid, 'SIGKILL')
    const starts = await startOf('c', 2)
    const next = starts.find((s) => s.id !== cFirst!.id) ?? starts[1]!
    assert.ok(next.at! - killedAt < 1000, `(c) next start ${next.at! - killedAt} ms after kill -9`)
    assert.ok(w.output().includes('Freed 1 lock(s) held by lost pool process'), w.output())
    await w.stop('SIGKILL')
  })

  it('(d) cold shutdown frees the lock at once; (e) kill -9 of the whole worker: within the lease plus 1 s', async () => {
    fresh()
    const w1 = await worker()
    await send('locks.hold', ['d', 60_000])
    await startOf('d')
    const w2 = await worker()
    await send('locks.hold', ['d', 10])
    const coldAt = Date.now()
    await w1.stop('SIGQUIT')
    const dStarts = await startOf('d', 2)
    assert.ok(dStarts.at(-1)!.at! - coldAt < 1000 + 1000, `(d) ${dStarts.at(-1)!.at! - coldAt} ms`)
    // (e)
    await send('locks.hold', ['e', 60_000])
    const [eFirst] = await startOf('e')
    const w3 = await worker()
    await send('locks.hold', ['e', 10])
    const killedAt = Date.now()
    for (const pid of childrenOf(w2.child.pid!)) process.kill(pid, 'SIGKILL')
    w2.child.kill('SIGKILL')
    const eStarts = await waitFor(async () => {
      const s = (await events()).filter((e) => e.key === 'e' && e.event === 'start' && e.pid !== eFirst!.pid)
      return s.length ? s : null
    }, { timeoutMs: 30_000, what: 'e started elsewhere' })
    const after = eStarts[0]!.at! - killedAt
    assert.ok(after < LEASE_S * 1000 + 1000, `(e) ${after} ms`)
    await w3.stop('SIGKILL')
  })

  it('(f) a task that runs three times its lease keeps its lock throughout: no second run meanwhile', async () => {
    fresh()
    await worker()
    await send('locks.hold', ['f', LEASE_S * 3000])
    await startOf('f')
    await send('locks.hold', ['f', 10])
    await waitFor(async () => ((await events()).some((e) => e.key === 'f' && e.event === 'end') ? true : null), { timeoutMs: 30_000, what: 'f ends' })
    const all = (await events()).filter((e) => e.key === 'f')
    const firstEnd = all.find((e) => e.event === 'end')!
    const starts = all.filter((e) => e.event === 'start')
    assert.equal(starts.filter((s) => s.at! < firstEnd.at!).length, 1, 'one run while the long one held the lock')
    await startOf('f', 2)
  })

  it('a deposed holder (SIGSTOPped past its lease) has its token refused by a fenced write', async () => {
    fresh()
    const w1 = await worker()
    await send('locks.fenced', ['g', 1500])
    const [first] = await startOf('g')
    process.kill(first!.pid, 'SIGSTOP')
    await new Promise((r) => setTimeout(r, LEASE_S * 1000 + 500))
    await worker()
    await send('locks.fenced', ['g', 10])
    await waitFor(async () => ((await events()).some((e) => e.key === 'g' && e.event === 'write-accepted') ? true : null), { timeoutMs: 30_000, what: 'the new holder writes' })
    process.kill(first!.pid, 'SIGCONT')
    const refused = await waitFor(async () => (await events()).find((e) => e.key === 'g' && e.event === 'write-refused') ?? null, { timeoutMs: 30_000, what: 'the deposed write' })
    assert.equal(refused.id, first!.id)
    const accepted = (await events()).find((e) => e.event === 'write-accepted')!
    assert.ok(accepted.token > refused.token)
    await w1.stop('SIGKILL')
  })

  it('bad input: a key function that throws fails the task with its error; a lock store that is down requeues it', async () => {
    fresh()
    const w = await worker()
    const id = await send('locks.badkey', [])
    await waitFor(() => (w.output().includes(`[${id}] raised unexpected: TypeError`) || w.output().includes('no key for you') ? true : null), { timeoutMs: 20_000, what: 'badkey fails' })
    assert.match(w.output(), /no key for you/)
    const down = await worker([], { TSQ_TEST_LOCK_URL: 'redis://127.0.0.1:1/0' })
    await w.stop()
    await send('locks.skip', [10])
    await waitFor(() => (down.output().includes('lock store redis://127.0.0.1:1/0 unavailable') ? true : null), { timeoutMs: 30_000, what: 'the store-down line' })
    assert.equal((await events()).filter((e) => e.event === 'skip-ran').length, 0, 'never ran unlocked')
  })
})
