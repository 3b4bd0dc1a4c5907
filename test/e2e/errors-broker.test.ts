// What a user sees when the broker is the problem: a RabbitMQ that closes the
// connection says why in its own words (a vhost that does not exist:
// `NOT_ALLOWED - vhost x not found`, as Celery prints it; a refused login:
// `ACCESS_REFUSED - ...`), and `No nodes replied within time constraint` names
// the broker that was asked, saying so when it was the embedded default that
// a run without -b, -A or --config falls back to.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { AMQP_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { embeddedBrokerEnv, runTsq, tempTsqHome } from '../helpers/cli.js'

const amqpSkip = await brokerSkipReason('amqp')
const amqp = new URL(AMQP_URL)
/** The test broker's URL with another vhost or password (nothing is created: a vhost that does not exist needs no setup). */
function amqpWith(change: { vhost?: string; password?: string }): string {
  const url = new URL(AMQP_URL)
  if (change.vhost !== undefined) url.pathname = `/${change.vhost}`
  if (change.password !== undefined) url.password = change.password
  return url.href
}
const shown = `amqp://${amqp.username}:**@${amqp.host}`

describe('a broker that closes the connection', { skip: amqpSkip }, () => {
  const env = embeddedBrokerEnv(tempTsqHome())

  it("a vhost that does not exist: RabbitMQ's NOT_ALLOWED reply, on every path that connects", async () => {
    const vhost = uniqueName('tsq-no-such-vhost')
    const url = amqpWith({ vhost })
    const expected = `Error: cannot connect to ${shown}/${vhost}: NOT_ALLOWED - vhost ${vhost} not found\n`
    for (const args of [['inspect', 'ping'], ['status'], ['call', 'proj.add']]) {
      const r = await runTsq([...args, '-b', url], { env })
      assert.equal(r.code, 69, `${args.join(' ')}: ${r.stderr}`)
      assert.equal(r.stderr, expected, args.join(' '))
    }
    // oclif's path prints the same line.
    const slow = await runTsq(['inspect', 'ping', '-b', url], { env: { ...env, TSQ_NO_FAST_PATH: '1' } })
    assert.equal(slow.stderr, expected)
  })

  it("a wrong password: RabbitMQ's ACCESS_REFUSED reply, and what to check; the password never shown", async () => {
    const r = await runTsq(['status', '-b', amqpWith({ password: 'not-the-password' })], { env })
    assert.equal(r.code, 69, r.stderr)
    assert.equal(
      r.stderr,
      `Error: cannot connect to ${shown}${amqp.pathname}: ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. For details see the broker logfile. (check the user name and password)\n`,
    )
  })
})

describe('no node replied', () => {
  const home = tempTsqHome()
  const env = embeddedBrokerEnv(home)

  it('on the embedded default: the line says which broker and that nothing named another', async () => {
    for (const args of [
      ['inspect', 'ping', '-t', '0.3'],
      ['control', 'shutdown', '-t', '0.3'],
      ['status', '-t', '0.3'],
    ]) {
      for (const fastPath of ['', '1']) {
        const r = await runTsq(args, { env: { ...env, TSQ_NO_FAST_PATH: fastPath } })
        assert.equal(r.code, 69, r.stderr)
        assert.equal(
          r.stderr,
          `Error: No nodes replied within time constraint (asked file://${home}/broker, the embedded default: no -b, -A, --config or broker URL variable named one)\n`,
          `${args.join(' ')} (TSQ_NO_FAST_PATH=${fastPath})`,
        )
      }
    }
  })

  it('on a broker the run named (a flag or a variable): the line names it and says nothing of a default', async () => {
    const named = `file://${home}/other`
    const r = await runTsq(['inspect', 'ping', '-t', '0.3', '-b', named], { env })
    assert.equal(r.code, 69, r.stderr)
    assert.equal(r.stderr, `Error: No nodes replied within time constraint (asked ${named})\n`)
    const fromEnv = await runTsq(['status', '-t', '0.3'], { env: { ...env, TSQ_BROKER_URL: named } })
    assert.equal(fromEnv.stderr, `Error: No nodes replied within time constraint (asked ${named})\n`)
    const json = await runTsq(['status', '-t', '0.3', '--json'], { env })
    assert.equal(JSON.parse(json.stdout).error.code, 'NO_REPLIES')
  })
})
