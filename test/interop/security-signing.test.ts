// Celery's message signing with Python Celery
// 5.2.6, both directions, on RabbitMQ and Redis. A Python-signed task runs on a
// tsq worker, a tsq-signed one on a Python worker; a plain JSON task, one from
// a signer outside the store and one with a byte changed are refused by both
// workers (the tsq worker also refuses an expired signer's), each of which then
// runs the next valid task. Certificates are made by openssl in a temp dir.
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createApp, type App } from '../../src/index.js'
import { encodeTaskV2With } from '../../src/protocol/index.js'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { makeTestCerts, opensslSkipReason, type SignerFiles, type TestCerts } from './helpers/certs.js'
import { deleteCeleryQueues } from './helpers/cleanup.js'
import { SEC_BACKEND, pySecClient, startPySecWorker, startTsqSecWorker, type PySecWorker, type SecSide } from './helpers/security-peers.js'
import type { TsqWorker } from './worker-helpers/tsq-worker.js'

const cases = [
  { kind: 'amqp' as const, broker: AMQP_URL },
  { kind: 'redis' as const, broker: REDIS_URL },
]

function signedConf(signer: SignerFiles, store: string): Record<string, unknown> {
  return {
    task_serializer: 'auth',
    accept_content: ['auth'],
    // Celery reads results under result_accept_content, else accept_content (['auth'] here): results stay JSON.
    result_accept_content: ['json'],
    security_key: signer.key,
    security_certificate: signer.cert,
    security_cert_store: store,
  }
}

const opensslSkip = opensslSkipReason()

// Every probe before any suite starts: a suite's set-up (openssl, sync) would stall a later probe past its timeout.
const skips = new Map(await Promise.all(cases.map(async (c) => [c.kind, (await brokerSkipReason(c.kind)) || opensslSkip] as const)))

for (const c of cases) {
  const skip = skips.get(c.kind)
  describe(`signed messages (auth serializer) with Python Celery 5.2.6: ${c.kind} broker`, { skip, timeout: 240_000 }, () => {
    let certs: TestCerts
    let tsqWorker: TsqWorker | undefined
    let pyWorker: PySecWorker | undefined
    const tsqQueue = uniqueName(`sec-${c.kind}-tsqw`)
    const pyQueue = uniqueName(`sec-${c.kind}-pyw`)
    const apps: App[] = []
    const side = (queue: string, conf: Record<string, unknown>, inner?: string): SecSide => ({
      broker: c.broker,
      backend: SEC_BACKEND,
      queue,
      conf,
      ...(inner ? { inner } : {}),
    })
    const tsqApp = (conf: Record<string, unknown>): App => {
      const app = createApp({ name: 'sec', broker: c.broker, resultBackend: SEC_BACKEND, conf })
      apps.push(app)
      return app
    }
    const logs = () => `\n--- tsq worker ---\n${tsqWorker?.logTail() ?? ''}\n--- Python worker ---\n${pyWorker?.logTail() ?? ''}`

    before(async () => {
      certs = makeTestCerts()
      // The tsq worker's store holds the expired certificate too; Celery's would not start with it.
      tsqWorker = await startTsqSecWorker(side(tsqQueue, signedConf(certs.tsq, certs.storeGlob)), true)
      pyWorker = await startPySecWorker(side(pyQueue, signedConf(certs.python, certs.validStoreGlob)))
    })

    after(async () => {
      await Promise.all(apps.map((a) => a.close().catch(() => undefined)))
      await tsqWorker?.stop()
      await pyWorker?.stop()
      await deleteCeleryQueues(c.kind, c.broker, [tsqQueue, pyQueue])
      certs?.cleanup()
    })

    it('a task signed by Python Celery (4096-bit key) runs on the tsq worker', async () => {
      const out = await pySecClient(side(tsqQueue, signedConf(certs.python, certs.validStoreGlob)), ['call', 'sec.add', '[2, 3]', '30'])
      assert.deepEqual(out.result, { int: '5' }, JSON.stringify(out) + logs())
    })

    it('a task signed by tsq runs on the Python worker, and its JSON result reads back', async () => {
      const app = tsqApp(signedConf(certs.tsq, certs.validStoreGlob))
      const r = await app.sendTask('sec.add', [20, 22], {}, { queue: pyQueue })
      assert.equal(await r.get({ timeout: 30 }), 42, logs())
    })

    it('unicode, 64-bit edges and a 256 KiB payload survive signing both ways', async () => {
      const value = ['h\u00e9llo \u{1F600}', 2 ** 31 - 1, -(2 ** 31), 2 ** 32, 2 ** 53 - 1, 'x'.repeat(256 * 1024)]
      const app = tsqApp(signedConf(certs.tsq, certs.validStoreGlob))
      const r = await app.sendTask('sec.echo', [value], {}, { queue: pyQueue })
      assert.deepEqual(await r.get({ timeout: 30 }), value, logs())
      // 2**63 - 1 written as Python reads it, digit for digit.
      const argsFile = join(certs.dir, 'echo-args.json')
      writeFileSync(argsFile, JSON.stringify([[...value, 0]]).replace(/,0\]\]$/, ',9223372036854775807]]'))
      const out = await pySecClient(side(tsqQueue, signedConf(certs.python, certs.validStoreGlob)), [
        'call',
        'sec.echo',
        `@${argsFile}`,
        '30',
      ])
      assert.equal(out.state, 'SUCCESS', JSON.stringify(out).slice(0, 500) + logs())
      const got = out.result as unknown[]
      assert.equal(got[0], value[0])
      assert.deepEqual(got.slice(1, 5), [{ int: '2147483647' }, { int: '-2147483648' }, { int: '4294967296' }, { int: '9007199254740991' }])
      assert.equal((got[5] as string).length, 256 * 1024)
      assert.deepEqual(got[6], { int: '9223372036854775807' })
    })

    for (const target of ['tsq', 'Python'] as const) {
      it(`the ${target} worker refuses a plain JSON task, an unknown signer's and a tampered one${target === 'tsq' ? " (and an expired signer's)" : ''}, then runs the next valid task`, async () => {
        const queue = target === 'tsq' ? tsqQueue : pyQueue
        const worker = target === 'tsq' ? tsqWorker! : pyWorker!
        const logStart = worker.log.length
        const plain = tsqApp({ result_accept_content: ['json'] })
        const stranger = tsqApp(signedConf(certs.stranger, certs.validStoreGlob))
        const good = tsqApp(signedConf(certs.tsq, certs.validStoreGlob))
        const bad: Array<{ what: string; id: string }> = []
        bad.push({ what: 'plain JSON', id: (await plain.sendTask('sec.add', [7, 1], {}, { queue })).id })
        bad.push({ what: 'unknown signer', id: (await stranger.sendTask('sec.add', [7, 2], {}, { queue })).id })
        // One byte of the signed body changed (the 3 of [7, 3] becomes a 4), signature kept.
        const encoder = good.taskEncoder()
        const m = encodeTaskV2With('sec.add', { args: [7, 3], origin: 'gen@test' }, encoder)
        const raw = Buffer.from(m.body.toString('latin1'), 'base64')
        const at = raw.lastIndexOf(Buffer.from('[[7, 3]'))
        assert.ok(at > 0)
        raw[at + 5] = '4'.charCodeAt(0)
        const transport = await good.transport()
        await transport.publish('', queue, {
          body: Buffer.from(raw.toString('base64'), 'latin1'),
          properties: {
            contentType: m.contentType,
            contentEncoding: m.contentEncoding,
            headers: m.headers as Record<string, never>,
            deliveryMode: 2,
            priority: 0,
            correlationId: m.properties.correlationId,
            replyTo: '',
          },
        })
        bad.push({ what: 'tampered', id: m.properties.correlationId })
        if (target === 'tsq') {
          const expired = tsqApp(signedConf(certs.expired, certs.validStoreGlob))
          bad.push({ what: 'expired signer', id: (await expired.sendTask('sec.add', [7, 4], {}, { queue })).id })
        }
        const next = await good.sendTask('sec.add', [7, 5], {}, { queue })
        assert.equal(await next.get({ timeout: 30 }), 12, logs())
        for (const b of bad) assert.equal(await good.asyncResult(b.id).state, 'PENDING', `${b.what} task ran${logs()}`)
        const log = worker.log.slice(logStart)
        assert.match(
          log,
          /Received invalid task message(?: \(rejected, not requeued\))?: Refusing to deserialize untrusted content of type json \(application\/json\)/,
          logs(),
        )
        assert.match(log, /Unknown certificate: b\\?'Another CA \d+\\?'/, logs())
        if (target === 'tsq') {
          for (const b of bad) assert.match(log, new RegExp(`\\[${b.id}\\]`), `no refusal line for the ${b.what} task${logs()}`)
          assert.match(
            log,
            /Can't decode message body: DecodeError\(SecurityError\("Unable to deserialize: SecurityError\('Bad signature: InvalidSignature\(\)'\)"\)\)/,
            logs(),
          )
          assert.match(log, /Expired certificate: \\?'FR tsq test, signing Test CA \u00e9t\u00e9 \d+\\?'/, logs())
        } else {
          // Celery 5.2.6's verify raises a TypeError of its own on a bad signature (reraise_errors catches a module): still refused.
          // Only the signed ones: the shared broker's control broadcasts (JSON) are refused too, as Celery's pidbox reads accept_content.
          assert.equal((log.match(/Can't decode message body.*\[type:'application\/data'/g) ?? []).length, 2, logs())
        }
      })
    }

    it('a msgpack body inside auth: signed by Python or by tsq, runs on the tsq worker', async () => {
      const py = await pySecClient(side(tsqQueue, signedConf(certs.python, certs.validStoreGlob), 'msgpack'), [
        'call',
        'sec.echo',
        JSON.stringify([['m\u00e9', 2 ** 40, -129]]),
        '30',
      ])
      assert.deepEqual(py.result, ['m\u00e9', { int: String(2 ** 40) }, { int: '-129' }], JSON.stringify(py) + logs())
      const app = createApp({
        name: 'sec',
        broker: c.broker,
        resultBackend: SEC_BACKEND,
        conf: { task_serializer: 'auth', accept_content: ['auth'], result_accept_content: ['json'] },
      })
      apps.push(app)
      app.setupSecurity({ key: certs.tsq.key, cert: certs.tsq.cert, store: certs.validStoreGlob, serializer: 'msgpack' })
      const encoded = encodeTaskV2With('sec.echo', { args: [1], origin: 'o' }, app.taskEncoder())
      // eslint-disable-next-line no-control-regex -- matches the \x00\x01 separators of Celery's signed body
      const signedHead = /application\/x-msgpack\x00\x01binary\x00\x01/
      assert.match(Buffer.from(encoded.body.toString('latin1'), 'base64').toString('latin1'), signedHead)
      const r = await app.sendTask('sec.echo', [['m\u00e9', 2 ** 40, -129]], {}, { queue: tsqQueue })
      assert.deepEqual(await r.get({ timeout: 30 }), ['m\u00e9', 2 ** 40, -129], logs())
    })
  })
}
