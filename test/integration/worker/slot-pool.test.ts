// The slot pool keeps its slots fed: jobs staged behind a running one start
// without a round trip, the worker hears of each start (Placement.started)
// in the order the slot runs them, and staged jobs come back unstarted
// (Placement.returned) when their slot turns slow, retires, is asked for them
// or dies. Run on the prefork pool (the threads pool shares SlotPool and the
// slot entry; its threads cannot load the .ts sources the tests run from).
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { resolve } from 'node:path'
import type { Job, Outcome } from '../../../src/app/execution/jobs.js'
import type { Placement } from '../../../src/worker/pools/pool.js'
import { SLOW_MS } from '../../../src/worker/pools/slot-pool.js'
import { PreforkPool } from '../../../src/worker/pools/prefork-pool.js'

const MODULE = resolve(import.meta.dirname, '../../fixtures/tasks/slot-pool-tasks.js')
let seq = 0

function job(task: string, args: unknown[] = [], softTimeLimit: number | null = null): Job {
  return {
    id: `job-${++seq}`,
    task,
    args,
    kwargs: {},
    retries: 0,
    rootId: null,
    parentId: null,
    group: null,
    hostname: 'w@h',
    softTimeLimit,
  }
}

function pool(size: number, extra: { maxTasksPerChild?: number } = {}): PreforkPool {
  return new PreforkPool({
    size,
    ...extra,
    modulePath: MODULE,
    includePaths: [],
    logfile: null,
    nodename: 'w@h',
    broker: 'memory://',
    resultBackend: null,
    loglevel: 'ERROR',
    redirectStdouts: null,
    log: () => undefined,
  })
}

/** A placement that records what the pool said, in order, into `log`. */
function placed(log: string[], id: string): Placement & { state: 'staged' | 'started' | 'returned' } {
  const p = {
    state: 'staged' as 'staged' | 'started' | 'returned',
    started() {
      assert.equal(p.state, 'staged', `${id} started twice or after it was returned`)
      p.state = 'started'
      log.push(`start ${id}`)
    },
    returned() {
      assert.equal(p.state, 'staged', `${id} returned after it started`)
      p.state = 'returned'
      log.push(`back ${id}`)
    },
  }
  return p
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Places the jobs as the worker does (while the pool takes more; one given back goes out again first); their outcomes in job order. */
async function feed(target: PreforkPool, jobs: Job[], waitMs = 10_000): Promise<Outcome[]> {
  const outcomes: Outcome[] = new Array(jobs.length)
  const waiting = jobs.map((_, i) => i)
  let left = jobs.length
  const deadline = Date.now() + waitMs
  await new Promise<void>((resolve, reject) => {
    const place = (): void => {
      while (waiting.length > 0 && target.canPlace()) {
        const i = waiting.shift()!
        const placement = placed([], jobs[i]!.id)
        const returned = placement.returned
        placement.returned = () => {
          returned()
          waiting.unshift(i)
          queueMicrotask(place)
        }
        target.place(jobs[i]!, null, undefined, placement).then((outcome) => {
          outcomes[i] = outcome
          if (--left === 0) resolve()
          else place()
        }, reject)
      }
      // A slot being replaced takes jobs again once it is up.
      if (waiting.length > 0 && !target.canPlace()) {
        if (Date.now() > deadline) reject(new Error('timed out placing jobs'))
        else setTimeout(place, 10)
      }
    }
    place()
  })
  return outcomes
}

async function until(what: string, check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(5)
  }
}

describe('[slot-pool] keeping slots fed', () => {
  // One pool for the suite; each test leaves it idle.
  const p = pool(2)
  before(() => p.start())
  after(() => p.close({ cold: true }))

  it("runs many short jobs staged beyond its size, each started (in its slot's order) before its outcome", async () => {
    // Fed as the worker feeds it: while it takes more, and a job given back goes out again first.
    const waiting = Array.from({ length: 400 }, (_, i) => i)
    const outcomes: { slot: string; n: number }[] = []
    let beyondSize = 0
    let started = 0
    /** Given back (a slot looked slow on a busy machine): these ran out of their first order. */
    const requeued = new Set<number>()
    await new Promise<void>((resolve, reject) => {
      const feed = (): void => {
        while (waiting.length > 0 && p.canPlace()) {
          const n = waiting.shift()!
          const j = job('sp.where', [n])
          const placement = placed([], j.id)
          const inner = placement.started
          placement.started = () => {
            inner()
            started += 1
          }
          const innerReturned = placement.returned
          placement.returned = () => {
            innerReturned()
            requeued.add(n)
            waiting.unshift(n)
            queueMicrotask(feed)
          }
          if (p.slots().every((s) => s.taskId !== null)) beyondSize += 1
          p.place(j, null, undefined, placement)
            .then((outcome) => {
              assert.equal(placement.state, 'started', `${j.id}: outcome before start`)
              assert.equal(outcome.status, 'success')
              outcomes.push((outcome as { value: { slot: string; n: number } }).value)
              if (outcomes.length === 400) resolve()
              else feed()
            })
            .catch(reject)
        }
      }
      feed()
    })
    assert.ok(beyondSize > 0, 'jobs were staged behind running ones')
    assert.equal(started, 400)
    // Per slot, the jobs ran in the order they were placed.
    const bySlot = new Map<string, number[]>()
    for (const v of outcomes) if (!requeued.has(v.n)) bySlot.set(v.slot, [...(bySlot.get(v.slot) ?? []), v.n])
    assert.equal(bySlot.size, 2, 'both slots ran jobs')
    for (const ns of bySlot.values())
      assert.deepEqual(
        ns,
        [...ns].sort((a, b) => a - b),
      )
  })

  it('outcomes cross in batches as they were: a result that cannot be cloned fails alone (EncodeError); Maps, Sets, BigInts arrive whole', async () => {
    const jobs = [job('sp.where', [1]), job('sp.fn'), job('sp.rich'), job('sp.where', [2]), job('sp.hooked', ['x'])]
    const outcomes = await feed(p, jobs)
    assert.equal(outcomes[0]!.status, 'success')
    assert.equal(outcomes[1]!.status, 'failure')
    assert.equal(outcomes[1]!.status === 'failure' && outcomes[1]!.exc.type, 'EncodeError')
    assert.deepEqual(outcomes[2]!.status === 'success' && outcomes[2]!.value, { m: new Map([['a', 1]]), s: new Set([2]), b: 3n })
    assert.equal(outcomes[3]!.status, 'success')
    assert.equal(outcomes[4]!.endHooks, true)
    p.afterStored(jobs[4]!.id)
  })

  it('gives back the jobs staged behind a job that turns slow, and takes no more there', async () => {
    const log: string[] = []
    const slow = job('sp.sleep', [3000])
    const other = job('sp.sleep', [3000])
    const slowRun = p.place(slow, null, undefined, placed(log, slow.id))
    const otherRun = p.place(other, null, undefined, placed(log, other.id))
    // Staged two on each slot (the least staged slot takes the next).
    const staged = [job('sp.where', ['a']), job('sp.where', ['b']), job('sp.where', ['c']), job('sp.where', ['d'])]
    const placements = staged.map((j) => placed(log, j.id))
    staged.forEach((j, i) => void p.place(j, null, undefined, placements[i]!))
    assert.deepEqual(
      placements.map((x) => x.state),
      ['staged', 'staged', 'staged', 'staged'],
    )
    await until('staged jobs given back', () => placements.every((x) => x.state === 'returned'), SLOW_MS * 100)
    assert.equal(p.canPlace(), false, 'both slots are busy with slow jobs')
    // From each slot last first, so a worker that puts each back at the head of its queue keeps their order.
    const back = log.filter((l) => l.startsWith('back'))
    const at = (j: Job) => back.indexOf(`back ${j.id}`)
    assert.ok(at(staged[2]!) < at(staged[0]!) && at(staged[3]!) < at(staged[1]!), back.join(', '))
    assert.equal((await slowRun).status, 'success')
    assert.equal((await otherRun).status, 'success')
    assert.equal(p.canPlace(), true)
  })

  it('terminate() of a staged job gives it back (false); of a running one kills it; the slot comes back', async () => {
    const log: string[] = []
    const running = job('sp.spin', [300])
    const other = job('sp.spin', [300])
    const behind = job('sp.where', ['x'])
    const run = p.place(running, null, undefined, placed(log, running.id))
    const otherRun = p.place(other, null, undefined, placed(log, other.id))
    const behindPlacement = placed(log, behind.id)
    void p.place(behind, null, undefined, behindPlacement)
    assert.equal(p.terminate(behind.id, 'SIGTERM'), false)
    await until('terminated staged job given back', () => behindPlacement.state === 'returned')
    assert.equal(p.terminate(running.id, 'SIGTERM'), true)
    const outcome = await run
    assert.equal(outcome.status, 'killed')
    assert.equal(outcome.status === 'killed' && outcome.reason, 'terminated')
    await otherRun
    await until('slot replaced', () => p.slots().length === 2 && p.canPlace())
    await until('idle', () => p.slots().every((s) => s.taskId === null))
  })

  it('unstage() gives back every staged job; started ones run to their end', async () => {
    const fresh = pool(2)
    await fresh.start()
    try {
      const log: string[] = []
      const jobs = [job('sp.spin', [60]), job('sp.spin', [60]), job('sp.where', [1]), job('sp.where', [2]), job('sp.where', [3])]
      const placements = jobs.map((j) => placed(log, j.id))
      const runs = jobs.map((j, i) => fresh.place(j, null, undefined, placements[i]!))
      await fresh.unstage()
      assert.deepEqual(
        placements.slice(0, 2).map((x) => x.state),
        ['started', 'started'],
      )
      assert.deepEqual(
        placements.slice(2).map((x) => x.state),
        ['returned', 'returned', 'returned'],
      )
      for (const r of runs.slice(0, 2)) assert.equal((await r).status, 'success')
    } finally {
      await fresh.close({ cold: true })
    }
  })

  it('a job staged behind one whose end hooks the slot holds starts only after afterStored(), after the hooks', async () => {
    const single = pool(1)
    await single.start()
    try {
      const log: string[] = []
      const hooked = job('sp.hooked', ['h'])
      const next = job('sp.ran')
      const outcome = await single.place(hooked, null, undefined, placed(log, hooked.id))
      assert.equal(outcome.endHooks, true)
      // The slot holds the hooks: the next job is staged behind them.
      assert.equal(single.canPlace(), true)
      const nextPlacement = placed(log, next.id)
      const nextRun = single.place(next, null, undefined, nextPlacement)
      await sleep(50)
      assert.equal(nextPlacement.state, 'staged', 'waits for the stored result')
      single.afterStored(hooked.id)
      assert.equal(nextPlacement.state, 'started')
      const ran = await nextRun
      assert.deepEqual(ran.status === 'success' && ran.value, ['hook h'])
    } finally {
      await single.close({ cold: true })
    }
  })

  it('--max-tasks-per-child: a slot is never staged past its limit, and is replaced after it', async () => {
    const limited = pool(1, { maxTasksPerChild: 3 })
    await limited.start()
    try {
      const outcomes = await feed(
        limited,
        Array.from({ length: 9 }, (_, i) => job('sp.where', [i])),
        30_000,
      )
      const perSlot = new Map<string, number>()
      for (const o of outcomes) {
        const slot = (o as { value: { slot: string } }).value.slot
        perSlot.set(slot, (perSlot.get(slot) ?? 0) + 1)
      }
      assert.ok(
        [...perSlot.values()].every((n) => n <= 3),
        JSON.stringify([...perSlot]),
      )
      assert.ok(perSlot.size >= 3, 'a new slot every three tasks')
    } finally {
      await limited.close({ cold: true })
    }
  })

  it('hard and soft time limits past 2**31-1 ms (30 days) do not fire at once', async () => {
    const days30 = 30 * 24 * 60 * 60
    const j = job('sp.sleep', [30], days30)
    const outcome = await p.place(j, days30, undefined, placed([], j.id))
    assert.deepEqual(
      { status: outcome.status, value: outcome.status === 'success' ? outcome.value : undefined },
      { status: 'success', value: 30 },
    )
  })

  it("a hard time limit counts from a staged job's own start, not from when it was sent", async () => {
    const single = pool(1)
    await single.start()
    try {
      const log: string[] = []
      const first = job('sp.spin', [10])
      const second = job('sp.spin', [10])
      const firstRun = single.place(first, null, undefined, placed(log, first.id))
      const secondRun = single.place(second, 0.5, undefined, placed(log, second.id))
      assert.equal((await firstRun).status, 'success')
      assert.equal((await secondRun).status, 'success')
      const limited = job('sp.sleep', [5000])
      const t0 = Date.now()
      const outcome = await single.place(limited, 0.2, undefined, placed(log, limited.id))
      assert.equal(outcome.status === 'killed' && outcome.reason, 'time-limit')
      assert.ok(Date.now() - t0 >= 190)
    } finally {
      await single.close({ cold: true })
    }
  })

  it("a lazily started pool's slot idle for idleExitMs exits, never while it runs a job, and the next job starts one again", async () => {
    // The threads pool's policy (THREAD_IDLE_EXIT_MS) on the prefork pool's processes, which the tests can load.
    class IdleExitPool extends PreforkPool {
      protected override readonly startsLazily = true
      protected override readonly idleExitMs = 300
    }
    const lazy = new IdleExitPool({
      size: 2,
      modulePath: MODULE,
      includePaths: [],
      logfile: null,
      nodename: 'w@h',
      broker: 'memory://',
      resultBackend: null,
      loglevel: 'ERROR',
      redirectStdouts: null,
      log: () => undefined,
    })
    await lazy.start()
    try {
      assert.equal(lazy.processes().length, 0, 'none before the first job')
      const first = await lazy.run(job('sp.where', [1]), null)
      assert.equal(first.status, 'success')
      const firstPid = lazy.processes()[0]
      assert.equal(lazy.processes().length, 1)
      // Busy for longer than idleExitMs: the slot stays for its job.
      const long = await lazy.run(job('sp.sleep', [700]), null)
      assert.deepEqual(
        { status: long.status, value: long.status === 'success' ? long.value : undefined },
        { status: 'success', value: 700 },
      )
      assert.deepEqual(lazy.processes(), [firstPid], 'the slot that ran the long job is still there')
      await until('the idle slot to exit', () => lazy.processes().length === 0, 5000)
      const again = await lazy.run(job('sp.where', [2]), null)
      assert.equal(again.status, 'success')
      assert.equal(lazy.processes().length, 1, 'started again for the next job')
      assert.notEqual(lazy.processes()[0], firstPid)
    } finally {
      await lazy.close({ cold: true })
    }
  })
})
