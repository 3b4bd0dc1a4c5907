import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Chalk } from 'chalk'
import { renderNodeCount, renderReply } from '../../../src/cli/render/replies.js'

const plain = new Chalk({ level: 0 })

describe("Celery's human layout (celery/bin/base.py pretty)", () => {
  it('ok replies are indented twice', () => {
    assert.equal(renderReply({ 'w1@h': { ok: 'pong' } }, plain, true), '->  w1@h: OK\n        pong')
  })
  it('lists print as * items, empty as - empty -', () => {
    assert.equal(renderReply({ 'w1@h': ['a', 'b'] }, plain, true), '->  w1@h: OK\n    * a\n    * b')
    assert.equal(renderReply({ 'w1@h': [] }, plain, true), '->  w1@h: OK\n    - empty -')
  })
  it('dicts print as sorted 4-space JSON; errors as ERROR', () => {
    assert.equal(
      renderReply({ 'w1@h': { clock: 3, a: 1 } }, plain, true),
      '->  w1@h: OK\n    {\n        "a": 1,\n        "clock": 3\n    }',
    )
    assert.equal(renderReply({ 'w1@h': { error: 'unknown task' } }, plain, true), '->  w1@h: ERROR\n        unknown task')
  })
  it('list items that are not strings print as Python repr', () => {
    assert.equal(renderReply({ n: [{ id: 'x', acknowledged: true }] }, plain, true), "->  n: OK\n    * {'id': 'x', 'acknowledged': True}")
  })
  it('node count', () => {
    assert.equal(renderNodeCount(1), '\n1 node online.')
    assert.equal(renderNodeCount(3), '\n3 nodes online.')
  })
})
