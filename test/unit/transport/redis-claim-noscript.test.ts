// The claim goes out as EVALSHA and falls back to EVAL only on NOSCRIPT (a
// Redis that restarted without persistence has no scripts): nothing ran then,
// so the second send claims once. Any other error is the claim's, with no
// second send, and the acks that rode with it fail with it.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it } from 'node:test'
import type { Command, Redis } from 'ioredis'
import { RedisKeys } from '../../../src/transport/redis/keys.js'
import { UnackedStore } from '../../../src/transport/redis/consume/unacked.js'

interface Sent {
  name: string
  args: Array<string | number>
}

/** A connection whose replies are scripted, one per sendCommand, and which keeps what was sent. */
function scriptedConn(replies: Array<unknown | Error>): { conn: Redis; sent: Sent[] } {
  const sent: Sent[] = []
  const conn = {
    sendCommand(command: Command) {
      sent.push({ name: command.name, args: [...(command.args as Array<string | number>)] })
      const reply = replies.shift()
      return reply instanceof Error ? Promise.reject(reply) : Promise.resolve(reply)
    },
  }
  return { conn: conn as unknown as Redis, sent }
}

const noscript = () => Object.assign(new Error('NOSCRIPT No matching script. Please use EVAL.'), { name: 'ReplyError' })

describe('Redis claim script', () => {
  it('sends EVALSHA of the script, and EVAL with the same keys and arguments after NOSCRIPT', async () => {
    const { conn, sent } = scriptedConn([noscript(), ['q', '{"m":1}', 'tag-1']])
    const store = new UnackedStore(conn, async () => [], new RedisKeys(0))
    const claimed = await store.claim(['q'], [true], 8)
    assert.deepEqual(claimed, [{ key: 'q', raw: '{"m":1}', recordedAs: 'tag-1' }])
    assert.deepEqual(
      sent.map((s) => s.name),
      ['evalsha', 'eval'],
    )
    const [evalsha, evalScript] = sent as [Sent, Sent]
    // What ioredis writes as is: strings (a number here would fail in its toWritable).
    for (const s of sent)
      assert.ok(
        s.args.every((a) => typeof a === 'string'),
        `${s.name}: strings only`,
      )
    const script = evalScript.args[0] as string
    assert.match(script, /redis\.pcall\('RPOP'/)
    assert.equal(evalsha.args[0], createHash('sha1').update(script).digest('hex'))
    // numkeys, unacked, unacked_index, the list; then now, the record flag, the most to take.
    assert.deepEqual(evalsha.args.slice(1, 5), ['3', 'unacked', 'unacked_index', 'q'])
    assert.deepEqual(evalsha.args.slice(6), ['1', '8'])
    assert.deepEqual(evalScript.args.slice(1), evalsha.args.slice(1))
  })

  it('sends once and fails on any other error, and the acks that rode with it fail too', async () => {
    const { conn, sent } = scriptedConn([new Error('ERR Error running script'), null])
    const store = new UnackedStore(conn, async () => [], new RedisKeys(0))
    const ack = store.remove('tag-0')
    const claim = store.claim(['q'], [true], 4)
    await assert.rejects(claim, /Error running script/)
    await assert.rejects(ack, /Error running script/)
    assert.equal(sent.length, 1)
    assert.deepEqual(sent[0]!.args.slice(-1), ['tag-0'], 'the ack rode with the claim')
  })

  it('an empty answer (every list empty) is no message', async () => {
    const { conn } = scriptedConn([null])
    const store = new UnackedStore(conn, async () => [], new RedisKeys(0))
    assert.deepEqual(await store.claim(['q'], [false]), [])
  })
})
