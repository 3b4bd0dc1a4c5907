import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import {
  NodeTemplateError,
  defaultNodename,
  hostFormat,
  multiExpand,
  nodeFormat,
  nodeSplit,
  workerNodename,
} from '../../../src/protocol/index.js'
import { loadFixture } from './fixtures.js'

type Out = { ok: string } | { error: string }
interface Table {
  hostname: string
  default_nodename: Array<{ value: string | null; default: string; worker: Out }>
  host_format: Array<{ template: string; out: Out }>
  node_format: Array<{ template: string; node: string; index: number; out: Out }>
  multi_expand: Array<{ template: string; node: string; out: Out }>
}
const t = loadFixture<Table>('nodenames.json')

function check(fn: () => string, out: Out): void {
  if ('ok' in out) assert.equal(fn(), out.ok)
  else assert.throws(fn, NodeTemplateError)
}

describe('spec §6 node names (table from celery.utils.nodenames)', () => {
  it('[-n] default_nodename and host_format(default_nodename(x))', () => {
    for (const r of t.default_nodename) {
      assert.equal(defaultNodename(r.value ?? undefined, t.hostname), r.default, String(r.value))
      check(() => workerNodename(r.value ?? undefined, t.hostname), r.worker)
    }
  })
  it('host_format: %h %n %d %i %I, %% kept, unknown keys throw', () => {
    for (const r of t.host_format) check(() => hostFormat(r.template, t.hostname), r.out)
  })
  it('node_format for --logfile/--pidfile in the main process and pool child 2', () => {
    for (const r of t.node_format) check(() => nodeFormat(r.template, r.node, r.index, t.hostname), r.out)
  })
  it('nodeSplit', () => {
    assert.deepEqual(nodeSplit('w1@h.example.com'), ['w1', 'h.example.com'])
    assert.deepEqual(nodeSplit('a@b@c'), ['a', 'b@c'])
    assert.deepEqual(nodeSplit('host'), ['', 'host'])
  })
})

describe('spec §9 celery multi expander', () => {
  it('matches build_expander for every template', () => {
    for (const r of t.multi_expand) check(() => multiExpand(r.template, r.node), r.out)
  })
  it('the captured expand line', () => {
    assert.equal(
      multiExpand('%h|%n|%N|%d|%p|%i|%I|%%', 'celery1@h.example.com'),
      'celery1@h.example.com|celery1|celery1|h.example.com|celery1@h.example.com|%i|%I|%%',
    )
  })
})
