// The canvas readers of protocol/messages/canvas.ts against canvases Celery
// 5.2.6 wrote (test/fixtures/wire/canvas-shapes.json): which kind a signature
// is, a chord's header in each shape Celery sends it, the order a header with
// nested groups unrolls in, where a canvas's result task is, and freezing.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  accumulatingChord,
  argsWith,
  canvasKind,
  chainEmbed,
  chainStepsWithOptions,
  chordBody,
  chordHeader,
  chordHeaderOptions,
  frozenStep,
  resultTaskKind,
  signature,
  signatureList,
  tasksOf,
  unrollHeader,
  withErrbacks,
  withResultTask,
  type Signature,
} from '../../../src/protocol/index.js'
import { loadFixture } from './fixtures.js'

const { cases } = loadFixture<{ cases: Record<string, Signature> }>('canvas-shapes.json')
const shape = (name: string): Signature => {
  const sig = cases[name]
  assert.ok(sig, `no fixture "${name}"`)
  return structuredClone(sig)
}
const names = (sigs: Signature[]): string[] => sigs.map((s) => `${s.task}${JSON.stringify(s.args)}`)

describe('canvas kinds', () => {
  it('by subtask_type, as Celery writes each kind', () => {
    assert.equal(canvasKind(shape('chain of three')), 'chain')
    assert.equal(canvasKind(shape('group of two')), 'group')
    assert.equal(canvasKind(shape('chord, header a list')), 'chord')
    assert.equal(canvasKind(shape('immutable step')), 'plain')
  })

  it('by task name when subtask_type is null (a hand-written celery.chord), and plain for any other task', () => {
    const chord = { ...shape('chord, header a list'), subtask_type: null }
    assert.equal(canvasKind(chord), 'chord')
    assert.equal(canvasKind(signature('celery.group')), 'group')
    assert.equal(canvasKind(signature('celery.chain')), 'chain')
    assert.equal(canvasKind(signature('celery.chord_unlock')), 'plain')
    assert.equal(canvasKind(signature('celery.accumulate')), 'plain')
  })

  it("signature() writes a task's signature as Celery does", () => {
    assert.deepEqual(signature('t.add', [5, 5], {}, { immutable: true }), shape('immutable step'))
  })
})

describe("a chord's header, in every shape Celery sends", () => {
  it('a list', () => {
    assert.deepEqual(names(chordHeader(shape('chord, header a list'))), ['t.add[1,1]', 't.add[2,2]'])
    assert.deepEqual(chordHeaderOptions(shape('chord, header a list')), {})
  })

  it('a group (a chord Celery froze), whose task_id is the group id', () => {
    const sig = shape('chord, header a group (frozen, as inside a chain)')
    assert.deepEqual(names(chordHeader(sig)), ['t.add[1,1]', 't.add[2,2]'])
    assert.equal(chordHeaderOptions(sig).task_id, 'header-group')
    assert.equal(chordBody(sig)?.options.task_id, 'body')
  })

  it('one signature or a chain given as the header: Celery lists them, and a hand-made dict is read the same', () => {
    assert.deepEqual(names(chordHeader(shape('chord, header one signature'))), ['t.add[1,1]'])
    assert.deepEqual(names(chordHeader(shape('chord, header a chain'))), ['t.add[1,1]', 't.add[2]'])
    const one = shape('chord, header one signature')
    one.kwargs.header = signature('t.add', [1, 1])
    assert.deepEqual(names(chordHeader(one)), ['t.add[1,1]'])
    one.kwargs.header = shape('chain of three')
    assert.deepEqual(names(chordHeader(one)), ['t.add[1,2]', 't.add[3]', 't.mul[10]'])
    assert.deepEqual(chordHeader({ ...one, kwargs: {} }), [])
  })

  it("nested groups unroll as Celery 5.2.6's _freeze_unroll does: each one reversed", () => {
    const members = unrollHeader(chordHeader(shape('chord, header with nested groups')))
    assert.deepEqual(
      members.map((m) => m.task),
      ['t.a', 't.c', 't.b', 't.d', 't.f', 't.e'],
    )
  })
})

describe('chains and groups', () => {
  it("a chain's steps in order; its embed carries them the next one last (spec §1.4)", () => {
    const steps = tasksOf(shape('chain of three'))
    assert.deepEqual(names(steps), ['t.add[1,2]', 't.add[3]', 't.mul[10]'])
    assert.deepEqual(names(chainEmbed(steps.slice(1))), ['t.mul[10]', 't.add[3]'])
  })

  it("a chain's own link goes on its last step, its link_error on every step", () => {
    const steps = chainStepsWithOptions(shape('chain with link and link_error'))
    assert.deepEqual(
      steps.map((s) => signatureList(s.options.link).map((l) => l.task)),
      [[], ['t.done']],
    )
    assert.deepEqual(
      steps.map((s) => signatureList(s.options.link_error).map((l) => l.task)),
      [['t.err'], ['t.err']],
    )
  })

  it("errbacks go on a chord's body and on every member of a group", () => {
    const err = signature('t.err')
    const chord = withErrbacks(shape('chord, header a list'), [err])
    assert.deepEqual(signatureList(chordBody(chord)!.options.link_error), [err])
    assert.ok(chordHeader(chord).every((m) => m.options.link_error === undefined))
    const group = withErrbacks(shape('group of two'), [err])
    assert.ok(tasksOf(group).every((m) => signatureList(m.options.link_error).length === 1))
  })

  it("a parent's result goes before a signature's own args, unless it is immutable", () => {
    assert.deepEqual(argsWith(signature('t.add', [3]), [2]), [2, 3])
    assert.deepEqual(argsWith(shape('immutable step'), [2]), [5, 5])
  })
})

describe("the task whose result is the canvas's", () => {
  it("a chain's last step, a chord's body, looked through; none for a group", () => {
    assert.equal(resultTaskKind(shape('chain of three')), 'plain')
    assert.equal(resultTaskKind(shape('chain ending in a chord')), 'plain')
    assert.equal(resultTaskKind(shape('chain ending in a group')), 'group')
    assert.equal(resultTaskKind({ ...shape('chain of three'), kwargs: { tasks: [] } }), 'none')
    const patched = withResultTask(shape('chain ending in a chord'), (o) => ({ ...o, group_id: 'g' }))!
    assert.equal(chordBody(tasksOf(patched).at(-1)!)!.options.group_id, 'g')
    assert.equal(
      withResultTask(shape('chain ending in a group'), (o) => o),
      null,
    )
  })

  it("a group sent in a task's place becomes a chord whose body gathers its results", () => {
    const chord = accumulatingChord(shape('group of two'))
    assert.equal(canvasKind(chord), 'chord')
    assert.deepEqual(names(chordHeader(chord)), ['t.add[1,1]', 't.add[2,2]'])
    assert.deepEqual(chordBody(chord), signature('celery.accumulate', [], { index: 0 }))
  })
})

describe("freezing (Celery's freeze): ids fixed before sending", () => {
  it('a task keeps the id it has, or gets one', () => {
    assert.deepEqual(frozenStep(signature('t.add', [], {}, { task_id: 'x' })).result, { kind: 'task', id: 'x' })
    const drawn = frozenStep(signature('t.add'))
    assert.equal(drawn.result?.kind, 'task')
    assert.equal(drawn.signature.options.task_id, (drawn.result as { id: string }).id)
  })

  it("a chain's result is its last step's, a chord's its body's", () => {
    const chain = frozenStep(shape('chain of three'))
    assert.equal(tasksOf(chain.signature).at(-1)!.options.task_id, (chain.result as { id: string }).id)
    assert.equal(tasksOf(chain.signature)[0]!.options.task_id, undefined)
    const chord = frozenStep(shape('chord, header a group (frozen, as inside a chain)'))
    assert.deepEqual(chord.result, { kind: 'task', id: 'body' })
  })

  it("a group's result is its id and its members' ids, a nested group's joining it", () => {
    const nested = { ...shape('group of two'), kwargs: { tasks: [signature('t.a'), shape('group of two')] } }
    const frozen = frozenStep(nested)
    assert.equal(frozen.result?.kind, 'group')
    const result = frozen.result as { id: string; members: string[] }
    assert.equal(frozen.signature.options.task_id, result.id)
    assert.equal(result.members.length, 3)
    assert.equal(new Set(result.members).size, 3)
  })
})
