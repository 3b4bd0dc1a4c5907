import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseAmqpCommand, parseClickBool } from '../../../src/admin/amqp-shell.js'
import { completeCommandName } from '../../../src/cli/amqp-repl.js'

describe("celery amqp's command lines", () => {
  it('booleans as click reads them', () => {
    for (const word of ['1', 'true', 'T', 'yes', 'Y', 'on', ' True ']) assert.equal(parseClickBool(word), true, word)
    for (const word of ['0', 'false', 'f', 'NO', 'n', 'off']) assert.equal(parseClickBool(word), false, word)
    for (const word of ['', 'maybe', '2']) assert.equal(parseClickBool(word), undefined, word)
  })

  it("Celery's positional order and defaults", () => {
    assert.deepEqual(parseAmqpCommand(['exchange.declare', 'x', 'topic', 'no', 'yes']).values, {
      exchange: 'x',
      type: 'topic',
      passive: false,
      durable: true,
      auto_delete: false,
    })
    assert.deepEqual(parseAmqpCommand(['queue.delete', 'q', 'no', 'yes']).values, { queue: 'q', if_unused: false, if_empty: true })
    assert.deepEqual(parseAmqpCommand(['basic.publish', 'm', '', 'rk']).values, {
      msg: 'm',
      exchange: '',
      routing_key: 'rk',
      mandatory: false,
      immediate: false,
    })
    assert.deepEqual(parseAmqpCommand(['queue.bind', 'q', 'x']).values, { queue: 'q', exchange: 'x', routing_key: '' })
    assert.deepEqual(parseAmqpCommand(['basic.ack', '12']).values, { delivery_tag: 12 })
  })

  it('refusals in click words, code USAGE', () => {
    assert.throws(() => parseAmqpCommand(['exchange.delete', 'x']), { code: 'USAGE', message: /^Missing argument 'IF_UNUSED'\./ })
    assert.throws(() => parseAmqpCommand(['basic.get', 'q', 'perhaps']), {
      code: 'USAGE',
      message: "Invalid value for '[NO_ACK]': 'perhaps' is not a valid boolean.",
    })
    assert.throws(() => parseAmqpCommand(['queue.nuke']), { code: 'USAGE', message: /^No such command 'queue\.nuke'/ })
  })

  it('the repl completes command names', () => {
    assert.deepEqual(completeCommandName('basic.'), [['basic.get', 'basic.publish', 'basic.ack'], 'basic.'])
    assert.deepEqual(completeCommandName('queue.declare q'), [[], 'queue.declare q'])
  })
})
