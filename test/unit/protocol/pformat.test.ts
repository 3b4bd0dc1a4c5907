// pformat against what CPython 3.11's pprint.pformat printed for the same values.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { pformat } from '../../../src/protocol/codecs/pformat.js'

describe('pformat (Python pprint, width 80)', () => {
  it('a short dict stays on one line, keys sorted', () => {
    assert.equal(pformat({ b: 1, a: [true, null] }), "{'a': [True, None], 'b': 1}")
  })

  it("a basic.get message as Celery's amqp prints it", () => {
    const message = {
      body: 'hello',
      delivery_info: { delivery_tag: 1, exchange: 'ex1', message_count: 0, redelivered: false, routing_key: 'rk' },
      properties: { content_encoding: 'utf-8' },
    }
    assert.equal(
      pformat(message),
      [
        "{'body': 'hello',",
        " 'delivery_info': {'delivery_tag': 1,",
        "                   'exchange': 'ex1',",
        "                   'message_count': 0,",
        "                   'redelivered': False,",
        "                   'routing_key': 'rk'},",
        " 'properties': {'content_encoding': 'utf-8'}}",
      ].join('\n'),
    )
  })

  it('a long string breaks at spaces into adjacent literals; a top-level one in parentheses', () => {
    const long = `${'x'.repeat(84)} yyyy`
    assert.equal(pformat([1, 2, long]), `[1,\n 2,\n '${'x'.repeat(84)} '\n 'yyyy']`)
    assert.equal(pformat(`${'word '.repeat(20)}end`), `('${'word '.repeat(15)}'\n '${'word '.repeat(5)}end')`)
  })
})

describe('pformat of deep values', () => {
  it('a value 1000 levels deep prints without recursing per level, and breaks lines only in its first 100 levels', () => {
    let v: unknown = 1
    for (let i = 0; i < 1000; i++) v = [v, 2]
    const lines = pformat(v).split('\n')
    // 100 levels opened on the first line, the rest as one repr, then one `2]` line per broken level.
    assert.equal(lines.length, 101)
    assert.ok(lines[0]!.startsWith('['.repeat(1000)) && lines[0]!.endsWith(`1${', 2]'.repeat(900)},`))
    assert.equal(lines[100], ' 2]')
  })
})
