// A job the pool's channel cannot carry (a structure its serializer overflows
// on) is taken out of its slot and rejected, not requeued; the slot takes the
// next job, the jobs batched with it still run, and the pool closes. The slot
// here is in-process: the channel is V8's structured clone, as the prefork
// pool's advanced serialization and the threads pool's postMessage use.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Job, Outcome } from '../../../src/app/execution/jobs.js'
import type { Placement } from '../../../src/worker/pools/pool.js'
import { SlotPool, type SlotHandle } from '../../../src/worker/pools/slot-pool.js'
import { unpackJobs, type FromSlot, type ToSlot } from '../../../src/worker/pools/slot-messages.js'

let seq = 0
function job(args: unknown[]): Job {
  return {
    id: `job-${++seq}`,
    task: 'proj.add',
    args,
    kwargs: {},
    retries: 0,
    rootId: null,
    parentId: null,
    group: null,
    hostname: 'w@h',
    softTimeLimit: null,
  }
}

function nested(depth: number): unknown {
  let v: unknown = []
  for (let i = 0; i < depth; i++) v = [v]
  return v
}

/** A slot that answers each job with its args, behind a channel that clones what crosses. */
class InProcessPool extends SlotPool {
  readonly kind = 'prefork' as const
  readonly logged: string[] = []

  constructor(size: number) {
    super({ size, log: (level, message) => this.logged.push(`${level}: ${message}`) })
  }

  protected spawn(): SlotHandle {
    let listener: (batch: FromSlot[]) => void = () => undefined
    let onExit: (code: number | null, signal: string | null) => void = () => undefined
    let exited = false
    const exit = (): void => {
      if (exited) return
      exited = true
      setImmediate(() => onExit(0, null))
    }
    return {
      pid: 4242,
      send: (batch: ToSlot[]) => {
        const crossed = structuredClone(batch)
        setImmediate(() => {
          for (const message of crossed) {
            if (message.type === 'packed-jobs')
              for (const j of unpackJobs(message))
                listener([{ type: 'done', id: j.id, outcome: { status: 'success', value: j.args.length, runtime: 0 } }])
            if (message.type === 'exit') exit()
          }
        })
      },
      kill: exit,
      onMessage: (l) => {
        listener = l
        setImmediate(() => listener([{ type: 'ready', pid: 4242 }]))
      },
      onExit: (l) => {
        onExit = l
      },
    }
  }
}

function placement(log: string[], id: string): Placement {
  return { started: () => log.push(`start ${id}`), returned: () => log.push(`back ${id}`) }
}

describe('a job that cannot cross to its slot', () => {
  it('is rejected, not requeued, and the jobs batched with it run', async () => {
    const pool = new InProcessPool(1)
    await pool.start()
    const log: string[] = []
    const jobs = [job([1, 2]), job([nested(100_000)]), job([3])]
    // Placed in one turn: one batch crosses, and the deep job breaks it.
    const outcomes = await Promise.all(jobs.map((j) => pool.place(j, null, undefined, placement(log, j.id))))
    assert.deepEqual(
      outcomes.map((o) => o.status),
      ['success', 'rejected', 'success'],
    )
    const rejected = outcomes[1] as Extract<Outcome, { status: 'rejected' }>
    assert.equal(rejected.requeue, false)
    assert.match(rejected.reason ?? '', /could not be handed to pool process 4242/)
    assert.deepEqual(
      log.filter((l) => l.startsWith('back')),
      [],
    )
    // Each job was seen to start, so none stays counted as reserved.
    assert.equal(log.filter((l) => l.startsWith('start')).length, 3)
    assert.ok(
      pool.logged.some((l) => l.startsWith(`error: Task proj.add[${jobs[1]!.id}] could not be handed to pool process`)),
      pool.logged.join('\n'),
    )
    // The slot is free: the next job runs, and the pool closes.
    assert.equal(pool.slots()[0]?.taskId, null)
    assert.equal((await pool.run(job([4, 5, 6]), null)).status, 'success')
    await pool.close({ cold: false })
  })

  it('through run(): rejected, and the slot takes the next job', async () => {
    const pool = new InProcessPool(1)
    await pool.start()
    const outcome = await pool.run(job([nested(100_000)]), null)
    assert.equal(outcome.status, 'rejected')
    assert.equal((await pool.run(job([1]), null)).status, 'success')
    await pool.close({ cold: false })
  })
})
