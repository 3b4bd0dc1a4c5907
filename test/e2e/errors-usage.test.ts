// A mistyped command, remote-control method or flag is a usage error: one
// line with the names near it ("did you mean"), exit 64 as every usage error
// (the exit-code table has no 2), on oclif's path and the fast one alike. A
// method that is a slip of a built-in (`tsq control revok`) is refused before
// anything is broadcast: a queue bound to the pidbox exchange, where every
// worker listens, receives nothing, while the real `revoke` reaches it; with
// -A, tsq knows the app's own commands and refuses any other name, as Celery.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createTransport, pidboxExchange, type Delivery, type Transport } from '../../src/transport/index.js'
import { embeddedBrokerEnv, runOnBothPaths, runTsq, tempTsqHome } from '../helpers/cli.js'

describe('usage errors say what was meant', () => {
  const home = tempTsqHome()
  const env = embeddedBrokerEnv(home)
  const bothPaths = (args: string[]) => runOnBothPaths(args, env)

  it('tsq inspct ping: an unknown command, the near one, exit 64', async () => {
    const r = await bothPaths(['inspct', 'ping'])
    assert.equal(r.code, 64)
    assert.equal(r.stderr, 'Error: unknown command "inspct" (did you mean inspect?); tsq --help lists them\n')
    const json = await runTsq(['inspct', 'ping', '--json'], { env })
    assert.deepEqual(JSON.parse(json.stdout), {
      error: { code: 'USAGE', message: 'unknown command "inspct" (did you mean inspect?); tsq --help lists them', exitCode: 64 },
    })
  })

  it("a topic's unknown command is named with its topic; a name near nothing lists no guess", async () => {
    const topic = await runTsq(['list', 'bindngs'], { env })
    assert.equal(topic.code, 64)
    assert.equal(topic.stderr, 'Error: unknown command "list bindngs" (did you mean list bindings?); tsq list --help lists them\n')
    const far = await runTsq(['frobnicate'], { env })
    assert.equal(far.code, 64)
    assert.equal(far.stderr, 'Error: unknown command "frobnicate"; tsq --help lists them\n')
  })

  it('a mistyped method of inspect or control, and one of the other kind', async () => {
    const inspect = await bothPaths(['inspect', 'pnig'])
    assert.equal(inspect.code, 64)
    assert.match(inspect.stderr, /^Error: unknown method "pnig" \(did you mean ping\?\); valid inspect methods: active, .*, stats\n$/)
    const other = await bothPaths(['inspect', 'rate_limt'])
    assert.match(other.stderr, /^Error: unknown method "rate_limt" \(did you mean tsq control rate_limit\?\); valid inspect methods: /)
  })

  it('a mistyped flag names the flag it is near', async () => {
    const r = await bothPaths(['inspect', 'ping', '--timout', '1'])
    assert.equal(r.code, 64)
    assert.equal(r.stderr, "Error: Nonexistent flag: --timout (did you mean --timeout?) (try 'tsq inspect --help')\n")
  })

  it('every usage error of every kind exits 64', async () => {
    for (const args of [
      ['nosuchcommand'],
      ['worker', '--concurrency', 'abc'],
      ['worker', '--no-such-flag'],
      ['call'],
      ['result', 'a', 'b', 'c'],
      ['inspect'],
      ['control', 'revoke', 'x', '--signal', 'KILL'],
      ['status', '-t', 'soon'],
      ['beat', '--max-interval', 'x'],
      ['worker', '-n', 'w%q@h', '-P', 'solo'],
    ]) {
      const r = await runTsq(args, { env })
      assert.equal(r.code, 64, `tsq ${args.join(' ')}: ${r.stderr}`)
      assert.equal(r.stderr.trim().split('\n').length, 1, `tsq ${args.join(' ')}: ${r.stderr}`)
    }
  })

  describe('tsq control revok', () => {
    let transport: Transport
    const seen: string[] = []
    const queue = `tsq-test-pidbox-watch-${process.pid}`

    before(async () => {
      transport = await createTransport(`file://${home}/broker`)
      await transport.connect()
      const exchange = pidboxExchange()
      await transport.declareExchange(exchange)
      await transport.declareQueue({ name: queue, durable: false, exclusive: false, autoDelete: false })
      await transport.bindQueue(queue, exchange.name, '')
      await transport.consume(queue, async (delivery: Delivery) => {
        seen.push((JSON.parse(delivery.body.toString()) as { method: string }).method)
        await delivery.ack()
      })
    })
    after(async () => {
      await transport?.close()
    })

    it('is refused with the near name before anything is broadcast; revoke itself is broadcast', async () => {
      for (const fastPath of ['', '1']) {
        const r = await runTsq(['control', 'revok', 'some-id', '-t', '0.3'], { env: { ...env, TSQ_NO_FAST_PATH: fastPath } })
        assert.equal(r.code, 64, r.stderr)
        assert.match(
          r.stderr,
          /^Error: unknown method "revok" \(did you mean revoke\?\); valid control methods: add_consumer, .*, time_limit\n$/,
        )
      }
      const real = await runTsq(['control', 'revoke', 'some-id', '-t', '0.3'], { env })
      assert.equal(real.code, 69, real.stderr)
      const deadline = Date.now() + 10_000
      while (seen.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      assert.deepEqual(seen, ['revoke'], 'the watcher saw the real revoke, and nothing before it')
    })

    it("with -A, any name the app's workers do not answer is refused before the broadcast; the app's own command is sent", async () => {
      const before = seen.length
      const app = ['-A', 'examples/tasks.js', '-t', '0.3']
      const slip = await runTsq(['inspect', 'proj.helo', ...app], { env })
      assert.equal(slip.code, 64, slip.stderr)
      assert.match(
        slip.stderr,
        /^Error: unknown method "proj\.helo" \(did you mean proj\.hello\?\); valid inspect methods: .*, stats, proj\.hello\n$/,
      )
      const far = await runTsq(['inspect', 'nosuchmethod', ...app], { env })
      assert.equal(far.code, 64, far.stderr)
      const own = await runTsq(['inspect', 'proj.hello', ...app], { env })
      assert.equal(own.code, 69, own.stderr)
      const deadline = Date.now() + 10_000
      while (seen.length === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      assert.deepEqual(seen.slice(before), ['proj.hello'])
    })
  })
})
