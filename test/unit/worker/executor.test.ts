// The task's AbortSignal is made on first use, so it must behave as if it had
// existed all along: aborted with the right reason when the abort came first,
// firing later when the abort comes after.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { App } from '../../../src/app/app.js'
import { currentTask } from '../../../src/app/task-context.js'
import { executeJob } from '../../../src/app/execution/executor.js'
import type { Job } from '../../../src/app/execution/jobs.js'

function appWith(fn: (...args: unknown[]) => unknown): App {
  return { tasks: new Map([['t.run', { fn, options: {} }]]) } as unknown as App
}

const job = (softTimeLimit: number | null = null): Job => ({
  id: 'id-1',
  task: 't.run',
  args: [],
  kwargs: {},
  retries: 0,
  rootId: null,
  parentId: null,
  group: null,
  hostname: 'w@h',
  softTimeLimit,
})

it('[executor] a signal first read after a revoke is already aborted, with TaskRevokedError as its reason', async () => {
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  const running = executeJob(
    appWith(async () => {
      await gate
      const { signal } = currentTask()
      return { aborted: signal.aborted, reason: (signal.reason as Error).name }
    }),
    job(),
  )
  running.abort('revoked')
  running.abort('soft-time-limit')
  release()
  const outcome = await running.outcome
  assert.equal(outcome.status, 'success')
  assert.deepEqual(outcome.status === 'success' && outcome.value, { aborted: true, reason: 'TaskRevokedError' })
})

it('[executor] a signal read before the soft time limit fires when the limit passes', async () => {
  const running = executeJob(
    appWith(
      () =>
        new Promise((_, reject) => {
          const { signal } = currentTask()
          signal.addEventListener('abort', () => reject(signal.reason))
        }),
    ),
    job(0.02),
  )
  const outcome = await running.outcome
  assert.equal(outcome.status, 'failure')
  assert.equal(outcome.status === 'failure' && outcome.exc.type, 'SoftTimeLimitExceeded')
})

it('[executor] plain values, synchronous throws and retries, and foreign thenables all settle as before', async () => {
  const outcomeOf = (fn: (...args: unknown[]) => unknown) => executeJob(appWith(fn), job()).outcome
  assert.deepEqual(await outcomeOf(() => 4).then((o) => o.status === 'success' && o.value), 4)
  assert.deepEqual(await outcomeOf(() => undefined).then((o) => o.status === 'success' && o.value), null)
  const thrown = await outcomeOf(() => {
    throw new RangeError('sync boom')
  })
  assert.equal(thrown.status === 'failure' && thrown.exc.type, 'RangeError')
  const retried = await outcomeOf(() => currentTask().retry({ countdown: 7 }))
  assert.equal(retried.status === 'retry' && retried.countdown, 7)
  const thenable = { then: (resolve: (v: unknown) => void) => setTimeout(() => resolve('later'), 5) }
  assert.equal(await outcomeOf(() => thenable).then((o) => o.status === 'success' && o.value), 'later')
  const unknown = await executeJob(
    appWith(() => 1),
    { ...job(), task: 'nope' },
  ).outcome
  assert.equal(unknown.status === 'failure' && unknown.exc.type, 'NotRegistered')
})

it('[executor] with bind the context comes first, then the args; its members work destructured', async () => {
  const app = {
    tasks: new Map([
      ['t.run', { fn: (ctx: { id: string; name: string }, x: number, y: number) => [ctx.id, ctx.name, x + y], options: { bind: true } }],
    ]),
  } as unknown as App
  const bound = await executeJob(app, { ...job(), args: [2, 3] }).outcome
  assert.deepEqual(bound.status === 'success' && bound.value, ['id-1', 't.run', 5])

  const destructured = await executeJob(
    appWith(() => {
      const { id, hostname, signal, retry } = currentTask()
      assert.equal(signal.aborted, false)
      if (id === 'id-1' && hostname === 'w@h') retry({ countdown: 3 })
      return 'not retried'
    }),
    job(),
  ).outcome
  assert.equal(destructured.status === 'retry' && destructured.countdown, 3)
})

it('[executor] a task that returns a plain value or throws has ended within the call (immediate); an async one has not', async () => {
  const plain = executeJob(
    appWith(() => 42),
    job(),
  )
  assert.deepEqual(plain.immediate && { status: plain.immediate.status, value: (plain.immediate as { value: unknown }).value }, {
    status: 'success',
    value: 42,
  })
  assert.equal((await plain.outcome).status, 'success', 'the promise form still works (pool slots use it)')
  const thrown = executeJob(
    appWith(() => {
      throw new Error('boom')
    }),
    job(),
  )
  assert.equal(thrown.immediate?.status, 'failure')
  const later = executeJob(
    appWith(async () => 1),
    job(),
  )
  assert.equal(later.immediate, undefined)
  assert.equal((await later.outcome).status, 'success')
})
