// The cluster state (src/cluster-state/) as Celery's events.State keeps it:
// states through a task's events and the merge rules for late ones, max tasks
// (oldest finished first), Flower's filters, search and paging, workers alive
// by heartbeat, and the --persistent snapshot.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ClusterState, TASK_FIELDS, kwargsPairs, parseQuery, QuerySyntaxError } from '../../../src/cluster-state/index.js'

let clock = 1_700_000_000
const now = () => clock

function ev(type: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  clock += 1
  return { type, hostname: 'celery@a', timestamp: clock, local_received: clock, clock: clock, ...fields }
}

function run(state: ClusterState, uuid: string, name = 'proj.add', args = '(1, 2)', result = '3'): void {
  state.apply(ev('task-received', { uuid, name, args, kwargs: '{}', retries: 0 }))
  state.apply(ev('task-started', { uuid }))
  state.apply(ev('task-succeeded', { uuid, result, runtime: 0.01 }))
}

test('[events.State] a task goes RECEIVED → STARTED → SUCCESS with Celery as_dict fields', () => {
  const state = new ClusterState({ maxTasks: 10, now })
  run(state, 't1')
  const task = state.tasks.get('t1')!
  assert.equal(task.state, 'SUCCESS')
  const dict = state.taskAsDict(task)
  assert.deepEqual(Object.keys(dict), [...TASK_FIELDS])
  assert.equal(dict.worker, 'celery@a')
  assert.equal(dict.result, '3')
  assert.equal(typeof dict.received, 'number')
  assert.deepEqual(
    task.timeline.map((t) => t.type),
    ['task-received', 'task-started', 'task-succeeded'],
  )
})

test('[merge_rules] a late task-received keeps the final state but brings its args', () => {
  const state = new ClusterState({ maxTasks: 10, now })
  state.apply(ev('task-succeeded', { uuid: 'late', result: '1' }))
  state.apply(ev('task-received', { uuid: 'late', name: 'proj.x', args: '(1,)', hostname: 'celery@a' }))
  const task = state.tasks.get('late')!
  assert.equal(task.state, 'SUCCESS')
  assert.equal(task.fields.name, 'proj.x')
  assert.equal(task.fields.args, '(1,)')
})

test('[--max-tasks] the oldest finished task is dropped first, a running one is kept', () => {
  const state = new ClusterState({ maxTasks: 3, now })
  state.apply(ev('task-received', { uuid: 'running', name: 'proj.sleep' }))
  state.apply(ev('task-started', { uuid: 'running' }))
  run(state, 'f1')
  run(state, 'f2')
  run(state, 'f3')
  assert.deepEqual([...state.tasks.keys()].sort(), ['f2', 'f3', 'running'])
  for (let i = 0; i < 1000; i++) run(state, `x${i}`)
  assert.equal(state.tasks.size, 3)
  assert.ok(state.tasks.has('running'))
  // The indexes forget dropped tasks too: filters see only what is held.
  assert.equal(state.queryTasks({ taskname: 'proj.add' }).filtered, 2)
})

test('[--max-tasks] held for a long run: 100 times --max-tasks tasks, children of unseen parents, failures, a task that never finishes', () => {
  const max = 500
  const state = new ClusterState({ maxTasks: max, now })
  state.apply(ev('task-received', { uuid: 'forever', name: 'proj.long' }))
  state.apply(ev('task-started', { uuid: 'forever' }))
  let peak = { tasks: 0, finishedQueue: 0, orphans: 0, byName: 0, byState: 0, byWorker: 0 }
  for (let i = 0; i < max * 100; i++) {
    const uuid = `t${i}`
    // Every third task names a parent the dashboard never sees.
    state.apply(
      ev('task-received', {
        uuid,
        name: `proj.t${i % 5}`,
        args: `(${i},)`,
        kwargs: '{}',
        parent_id: i % 3 === 0 ? `unseen-${i}` : null,
        hostname: `celery@w${i % 4}`,
      }),
    )
    state.apply(ev('task-started', { uuid, hostname: `celery@w${i % 4}` }))
    if (i % 7 === 0) state.apply(ev('task-failed', { uuid, exception: 'ValueError()', hostname: `celery@w${i % 4}` }))
    else state.apply(ev('task-succeeded', { uuid, result: String(i), runtime: 0.01, hostname: `celery@w${i % 4}` }))
    if (i % 50 !== 0) continue
    const sizes = state.sizes()
    peak = Object.fromEntries(Object.entries(sizes).map(([k, v]) => [k, Math.max(v, peak[k as keyof typeof peak])])) as typeof peak
  }
  assert.equal(state.tasks.size, max)
  assert.ok(state.tasks.has('forever'), 'the running task is never the one dropped')
  // The newest finished are the ones held: the oldest finished went first.
  assert.ok(state.tasks.has(`t${max * 100 - 1}`))
  assert.ok(!state.tasks.has(`t${max * 100 - max}`))
  assert.equal(peak.tasks, max)
  for (const key of ['byName', 'byState', 'byWorker'] as const) assert.ok(peak[key] <= max + 1, `${key} peaked at ${peak[key]}`)
  assert.ok(peak.orphans <= max + 1, `orphans peaked at ${peak.orphans}`)
  assert.ok(peak.finishedQueue <= 2 * max + 4096 + 2, `the finished queue peaked at ${peak.finishedQueue}`)
  assert.equal(state.queryTasks({ limit: null }).filtered, max)
})

test('[/api/tasks] filters, search, sort and paging as Flower', () => {
  const state = new ClusterState({ maxTasks: 100, now })
  for (let i = 0; i < 20; i++) run(state, `id-${String(i).padStart(2, '0')}`, i % 2 ? 'proj.odd' : 'proj.even', `(${i},)`, `'r${i}'`)
  state.apply(ev('task-received', { uuid: 'kw', name: 'proj.kw', args: '()', kwargs: "{'user': 'alice', 'n': 5}" }))
  assert.equal(state.queryTasks({ taskname: 'proj.odd' }).filtered, 10)
  assert.equal(state.queryTasks({ state: 'RECEIVED' }).tasks[0]!.uuid, 'kw')
  assert.deepEqual(
    state.queryTasks({ search: 'r13' }).tasks.map((t) => t.uuid),
    ['id-13'],
  )
  assert.deepEqual(
    state.queryTasks({ search: 'kwargs:user=alice' }).tasks.map((t) => t.uuid),
    ['kw'],
  )
  assert.deepEqual(
    state
      .queryTasks({ search: 'result:r11 OR result:r12' })
      .tasks.map((t) => t.uuid)
      .sort(),
    ['id-11', 'id-12'],
  )
  assert.equal(state.queryTasks({ search: 'state:success name:odd' }).filtered, 10)
  // Default order: the latest event first; limit and offset page it.
  const page = state.queryTasks({ limit: 5, offset: 5 })
  assert.equal(page.filtered, 21)
  assert.equal(page.tasks.length, 5)
  const all = state.queryTasks({}).tasks.map((t) => t.uuid)
  assert.deepEqual(
    page.tasks.map((t) => t.uuid),
    all.slice(5, 10),
  )
  assert.deepEqual(
    state.queryTasks({ sortBy: 'name', limit: 1 }).tasks.map((t) => t.fields.name),
    ['proj.even'],
  )
  assert.deepEqual(
    state.queryTasks({ sortBy: '-name', limit: 1 }).tasks.map((t) => t.fields.name),
    ['proj.odd'],
  )
  const started = state.queryTasks({ sortBy: '-started', limit: 3 }).tasks.map((t) => t.fields.started as number)
  assert.deepEqual(
    started,
    [...started].sort((a, b) => b - a),
  )
})

test("[search syntax] Flower's errors for bad queries", () => {
  assert.throws(() => parseQuery('ab'), QuerySyntaxError)
  assert.throws(() => parseQuery('"open'), /Unterminated/)
  assert.throws(() => parseQuery('NOT foo'), /NOT is not supported/)
  assert.throws(() => parseQuery('foo OR'), /OR must be followed/)
  assert.throws(() => parseQuery('((((((foo))))))'), /nesting/)
  assert.deepEqual(parseQuery(''), { kind: 'all' })
  assert.deepEqual(parseQuery('state:FAILURE'), { kind: 'term', field: 'state', value: 'FAILURE' })
  assert.deepEqual([...kwargsPairs("{'a': 1, 'b': 'x y', 'c': None}")], ['a=1', 'b=x y', 'c=none'])
})

test('[bad input] malformed events are ignored, unknown workers are added', () => {
  const state = new ClusterState({ maxTasks: 10, now })
  assert.equal(state.apply({}), false)
  assert.equal(state.apply({ type: 42 }), false)
  assert.equal(state.apply({ type: 'task-succeeded' }), false)
  assert.equal(state.apply({ type: 'bogus-thing', hostname: 'x' }), false)
  assert.equal(state.apply({ type: 'task-started', uuid: 'u', hostname: 'celery@new', timestamp: 'soon' }), true)
  assert.ok(state.workers.has('celery@new'))
  assert.equal(state.tasks.get('u')!.state, 'STARTED')
})

test('[workers] heartbeat makes a worker alive, offline ends it, purge forgets it', () => {
  const state = new ClusterState({ maxTasks: 10, now })
  state.apply(ev('worker-online', { freq: 2, sw_ident: 'py-celery', active: 0, processed: 0 }))
  const w = state.workers.get('celery@a')!
  assert.equal(state.alive(w), true)
  state.apply(ev('worker-offline'))
  assert.equal(state.alive(w), false)
  clock += 100
  assert.deepEqual(state.purgeOfflineWorkers(50), ['celery@a'])
})

test('[--persistent] a snapshot restores tasks, indexes and workers', () => {
  const state = new ClusterState({ maxTasks: 10, now })
  run(state, 'p1', 'proj.keep', '(7,)')
  state.apply(ev('worker-online', { freq: 2 }))
  const copy = new ClusterState({ maxTasks: 10, now })
  copy.restore(JSON.parse(JSON.stringify(state.snapshot())))
  assert.equal(copy.tasks.get('p1')!.state, 'SUCCESS')
  assert.equal(copy.queryTasks({ search: 'proj.keep' }).filtered, 1)
  assert.equal(copy.queryTasks({ taskname: 'proj.keep' }).filtered, 1)
  assert.ok(copy.workers.has('celery@a'))
  assert.ok(copy.taskTypes.has('proj.keep'))
})
