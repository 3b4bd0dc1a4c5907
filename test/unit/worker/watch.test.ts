// `tsq worker --watch`'s pure parts: the steps a reload's worker starts before
// the old one stops come first in the worker's start-up, so it stops at one
// point and says nothing under the worker's name before; and the child's
// command line is the supervisor's without --watch and --workdir.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { bootOrder } from '../../../src/worker/bootsteps.js'
import { childArgs } from '../../../src/worker/watch/supervisor.js'

describe('worker --watch', () => {
  it('the steps started beside a live worker of the same name are the head of the start-up, before the mailbox and the consumers', () => {
    const order = bootOrder()
    const head = order.findIndex((step) => !step.beforeSwap)
    assert.ok(
      order.slice(head).every((step) => !step.beforeSwap),
      'no step started beside the old worker comes after one that is not',
    )
    assert.deepEqual(
      order.slice(0, head).map((s) => s.name),
      ['Connection', 'Bus', 'Backend', 'Pool', 'Events', 'Tasks', 'ConnectionGuard'],
    )
  })

  it("the child's command line drops --watch and --workdir (the supervisor has moved there), in either form", () => {
    assert.deepEqual(childArgs(['-A', './tasks.ts', '--watch', '--workdir', 'proj', '-c', '2', '--workdir=other', '-l', 'INFO']), [
      '-A',
      './tasks.ts',
      '-c',
      '2',
      '-l',
      'INFO',
    ])
  })
})
