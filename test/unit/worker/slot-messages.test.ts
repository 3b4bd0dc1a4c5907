// Jobs cross to a pool slot packed (keys once per run of jobs of one shape,
// values in a row): what the slot unpacks must be the jobs sent, in order,
// whatever mix of shapes a batch holds.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { Job } from '../../../src/app/execution/jobs.js'
import { packJobs, unpackJobs } from '../../../src/worker/pools/slot-messages.js'

const base = (id: string): Job => ({
  id,
  task: 'proj.noop',
  args: [1, { a: [2] }],
  kwargs: { k: null },
  retries: 0,
  rootId: id,
  parentId: null,
  group: null,
  hostname: 'w@h',
  softTimeLimit: null,
})

it('[slot-messages] packJobs/unpackJobs: the same jobs, in order, across runs of different shapes', () => {
  const withEta: Job = { ...base('c'), eta: '2026-01-01T00:00:00Z' }
  const withHeaders: Job = { ...base('d'), headers: { x: 1 }, softTimeLimit: 3 }
  const jobs = [base('a'), base('b'), withEta, withHeaders, base('e'), { ...base('f'), args: [] }]
  const packed = packJobs(jobs)
  // a,b | c | d | e,f: a new run wherever the keys change.
  assert.deepEqual(
    packed.map((p) => p.values.length / p.keys.length),
    [2, 1, 1, 2],
  )
  const back = packed.flatMap(unpackJobs)
  assert.deepEqual(back, jobs)
  assert.deepEqual(
    back.map((j) => Object.keys(j)),
    jobs.map((j) => Object.keys(j)),
  )
})

it('[slot-messages] a key whose value is undefined keeps its place; no jobs, no runs', () => {
  const jobs = [
    { ...base('a'), headers: undefined },
    { ...base('b'), headers: undefined },
  ]
  assert.deepEqual(packJobs(jobs).flatMap(unpackJobs), jobs)
  assert.deepEqual(packJobs([]), [])
})
