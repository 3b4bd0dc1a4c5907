// A --persistent state file written by an earlier tsq (the fixture was saved
// by the dashboard's own state before it moved to src/cluster-state/) loads
// into today's cluster state: the same snapshot comes back out, Flower's
// answers for it are the ones recorded then, and max tasks drops from it in
// the order it did (oldest finished first).
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { ClusterState, type PersistedState } from '../../../src/cluster-state/index.js'

const FILE = new URL('../../fixtures/dashboard/state-v1.json', import.meta.url)
const saved = (): PersistedState => JSON.parse(readFileSync(FILE, 'utf8')) as PersistedState
const NOW = 1_700_000_021

describe('--persistent: a saved state file of version 1', () => {
  it('restores, and snapshots back to the same file', () => {
    const state = new ClusterState({ maxTasks: 100, now: () => NOW })
    state.restore(saved())
    assert.equal(JSON.stringify(state.snapshot()), readFileSync(FILE, 'utf8'))
  })

  it('answers as it did when saved: pages, filters, search, task types, workers alive, as_dict', () => {
    const state = new ClusterState({ maxTasks: 100, now: () => NOW })
    state.restore(saved())
    const ids = (q: Parameters<ClusterState['queryTasks']>[0]) => state.queryTasks(q).tasks.map((t) => t.uuid)
    assert.deepEqual(ids({}), ['late', 'p1', 'v1', 'r1', 'running', 'child', 'f1', 'root'])
    assert.deepEqual(ids({ sortBy: '-runtime', limit: 2 }), ['child', 'root'])
    assert.equal(state.queryTasks({ state: 'SUCCESS' }).filtered, 3)
    assert.deepEqual(ids({ workername: 'celery@w2' }), ['f1'])
    assert.deepEqual(ids({ search: 'kwargs:x=1' }), ['root'])
    assert.deepEqual([...state.taskTypes].sort(), ['proj.add', 'proj.fail', 'proj.late', 'proj.mul', 'proj.retry', 'proj.slow'])
    assert.deepEqual(
      [...state.workers.values()].map((w) => [w.hostname, state.alive(w)]),
      [
        ['celery@w1', true],
        ['celery@w2', false],
        ['client@h', false],
      ],
    )
    assert.equal(
      JSON.stringify(state.taskAsDict(state.tasks.get('root')!)),
      '{"uuid":"root","name":"proj.add","state":"SUCCESS","received":1700000005,"sent":1700000003,"started":1700000006,"rejected":null,"succeeded":1700000007,"failed":null,"retried":null,"revoked":null,"args":"(1, 2)","kwargs":"{\'x\': 1}","eta":null,"expires":null,"retries":0,"worker":"celery@w1","result":"3","exception":null,"timestamp":1700000007,"runtime":0.25,"traceback":null,"exchange":null,"routing_key":null,"clock":1700000007,"client":"client@h","root":"root","root_id":"root","parent":null,"parent_id":null,"children":["child"]}',
    )
    assert.equal(
      JSON.stringify(state.taskAsDict(state.tasks.get('late')!)),
      '{"uuid":"late","name":"proj.late","state":"SUCCESS","received":1700000018,"sent":null,"started":null,"rejected":null,"succeeded":1700000017,"failed":null,"retried":null,"revoked":null,"args":"(9,)","kwargs":"{}","eta":null,"expires":null,"retries":null,"worker":"celery@w1","result":"1","exception":null,"timestamp":1700000017,"runtime":null,"traceback":null,"exchange":null,"routing_key":null,"clock":1700000018,"client":null,"root":null,"root_id":null,"parent":null,"parent_id":null,"children":[]}',
    )
  })

  it('max tasks: loaded into fewer, or past it by new tasks, the oldest finished go first', () => {
    const small = new ClusterState({ maxTasks: 3, now: () => NOW })
    small.restore(saved())
    assert.deepEqual([...small.tasks.keys()], ['running', 'r1', 'p1'])
    const state = new ClusterState({ maxTasks: 8, now: () => NOW })
    state.restore(saved())
    for (const uuid of ['new', 'new2'])
      state.apply({ type: 'task-received', uuid, name: 'proj.new', hostname: 'celery@w1', timestamp: NOW + 9, local_received: NOW + 9 })
    assert.deepEqual([...state.tasks.keys()], ['child', 'running', 'r1', 'v1', 'p1', 'late', 'new', 'new2'])
    assert.equal(JSON.stringify(state.sizes()), '{"tasks":8,"finishedQueue":5,"orphans":0,"byName":6,"byState":8,"byWorker":8}')
  })
})
