// The events bus when things go wrong, on RabbitMQ, Redis and the file
// broker: a worker killed with -9 mid-event, events fired before any worker
// of their service ran, messages that are not events of the service, bad
// command lines, a replay killed half-way, and (RabbitMQ) a service whose
// settings differ from the queues it finds.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { brokerSkipReason, uniqueName, type BrokerKind } from '../helpers/brokers.js'
import { BIN, ROOT, startWorker, tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'
import type { ArchivedEvent } from '../../src/bus/messages.js'
import { archivedExchangeName, handlerQueueName } from '../../src/bus/names.js'
import { encodeTaskV2 } from '../../src/protocol/index.js'
import {
  busBroker,
  cleanupService,
  fire,
  jsonOf,
  readRuns,
  SERVICE_MODULE,
  startServiceWorker,
  tsq,
  waitUntil,
  withBrokerTransport,
  type BusBroker,
} from './bus-support.js'

const dir = tempTsqHome()

function oneLine(text: string): boolean {
  return text.trim().split('\n').length === 1
}

for (const kind of ['amqp', 'redis', 'file'] as BrokerKind[]) {
  describe(`events bus robustness on ${kind}`, { skip: await brokerSkipReason(kind) }, () => {
    const broker: BusBroker = busBroker(kind)
    const workers: SpawnedWorker[] = []
    const cleanups: Array<() => Promise<void>> = []
    const start = async (...args: Parameters<typeof startServiceWorker>) => {
      const w = await startServiceWorker(...args)
      workers.push(w)
      return w
    }
    after(async () => {
      await Promise.all(workers.map((w) => w.stop().catch(() => undefined)))
      for (const c of cleanups) await c().catch(() => undefined)
    })

    it('[kill -9] a worker killed mid-event: the event is delivered again and handled, nothing lost', async () => {
      const event = `${uniqueName('ev')}.slow`
      const service = uniqueName('killed')
      cleanups.push(() => cleanupService(broker, service, [event]))
      const log = join(dir, `${kind}-kill9.jsonl`)
      const startLog = join(dir, `${kind}-kill9-start.jsonl`)
      const victim = await start(broker, {
        service,
        events: [event],
        log,
        nodename: `${service}-1@h`,
        env: { BUS_SLEEP_MS: '30000', BUS_START_LOG: startLog },
      })
      const [id] = await fire(broker, event, [['precious']])
      await waitUntil(
        () => readRuns(startLog).some((r) => r.id === id),
        20_000,
        'the run to start',
        () => victim.output().slice(-2000),
      )
      victim.child.kill('SIGKILL')
      await victim.stop()
      const heir = await start(broker, { service, events: [event], log, nodename: `${service}-2@h` })
      const done = await waitUntil(
        () => readRuns(log).find((r) => r.id === id && r.ok),
        45_000,
        'the event handled after the kill',
        () => heir.output().slice(-2000),
      )
      assert.deepEqual(done.args, ['precious'])
      await heir.stop()
    })

    it("[before any worker] an event fired by the service's own app (`tsq fire -A`) waits in its handler queue until a worker starts", async () => {
      const event = `${uniqueName('ev')}.early`
      const service = uniqueName('late')
      cleanups.push(() => cleanupService(broker, service, [event]))
      const log = join(dir, `${kind}-early.jsonl`)
      const serviceEnv = { BUS_SERVICE: service, BUS_EVENTS: event }
      const fired = jsonOf<{ id: string }>(
        await tsq(broker, ['fire', event, '-A', SERVICE_MODULE, '--args', '[1]', '--json'], serviceEnv),
        'tsq fire -A',
      )
      const w = await start(broker, { service, events: [event], log, nodename: `${service}@h` })
      const runs = await waitUntil(
        () => readRuns(log).length > 0 && readRuns(log),
        20_000,
        'the early event',
        () => w.output().slice(-2000),
      )
      assert.equal(runs[0]!.id, fired.id)
      await w.stop()
    })

    it('[not an event of the service] an unreadable message and an event the service does not handle go to the archive with one log line each, never round the retry steps', async () => {
      const event = `${uniqueName('ev')}.strict`
      const service = uniqueName('strict')
      cleanups.push(() => cleanupService(broker, service, [event]))
      const log = join(dir, `${kind}-strict.jsonl`)
      const w = await start(broker, { service, events: [event], log, nodename: `${service}@h` })
      const props = { contentType: 'application/json', contentEncoding: 'utf-8', deliveryMode: 2 as const, priority: 0 }
      const stranger = encodeTaskV2('some.other.event', { args: [1], origin: 'test' })
      await withBrokerTransport(broker, async (t) => {
        await t.publish('events', event, { body: Buffer.from('{not json'), properties: { ...props, headers: {} } })
        await t.publish('', handlerQueueName(service, event), {
          body: Buffer.from(stranger.body),
          properties: { ...props, headers: stranger.headers as never, correlationId: stranger.properties.correlationId },
        })
      })
      await waitUntil(
        () => (w.output().match(/Archived a message from/g) ?? []).length >= 2,
        20_000,
        'two archived messages',
        () => w.output().slice(-2000),
      )
      await new Promise((r) => setTimeout(r, 2500)) // a message sent round the retry steps would be back by now
      const lines = w
        .output()
        .split('\n')
        .filter((l) => l.includes(handlerQueueName(service, event)) && /ERROR/.test(l))
      assert.equal(lines.length, 2, lines.join('\n'))
      assert.match(lines.join('\n'), /not a task message/)
      assert.match(lines.join('\n'), /event some\.other\.event is not handled by service/)
      assert.equal(readRuns(log).length, 0, 'no handler ran')
      const listed = jsonOf<ArchivedEvent[]>(await tsq(broker, ['archive', 'ls', '--service', service, '--json']), 'tsq archive ls')
      assert.equal(listed.length, 2)
      assert.deepEqual(listed.map((e) => e.event).sort(), ['?', 'some.other.event'])
      assert.equal(listed.find((e) => e.event === 'some.other.event')!.id, stranger.properties.correlationId)
      await w.stop()
    })

    it('[time limit] a handler killed by its hard time limit goes to its next retry step, then to the archive, never round the steps for ever', async () => {
      const event = `${uniqueName('ev')}.stuck`
      const service = uniqueName('stuck')
      const env = { AMQP_EVENTS_MAX_RETRIES: '1' }
      cleanups.push(() => cleanupService(broker, service, [event], 1))
      const log = join(dir, `${kind}-stuck.jsonl`)
      const startLog = join(dir, `${kind}-stuck-start.jsonl`)
      const w = await start(broker, {
        service,
        events: [event],
        log,
        nodename: `${service}@h`,
        pool: 'prefork',
        concurrency: 1,
        env: { ...env, BUS_SLEEP_MS: '5000', BUS_TIME_LIMIT: '1', BUS_START_LOG: startLog },
      })
      const [id] = await fire(broker, event, [['stuck']])
      await waitUntil(
        () => w.output().includes(`rejected: sent to ${archivedExchangeName(service)}`),
        30_000,
        'the archive',
        () => w.output().slice(-2000),
      )
      assert.deepEqual(
        readRuns(startLog).map((r) => r.retries),
        [0, 1],
        'the first run and its one retry',
      )
      const listed = jsonOf<ArchivedEvent[]>(await tsq(broker, ['archive', 'ls', '--service', service, '--json'], env), 'tsq archive ls')
      assert.deepEqual(
        listed.map((e) => [e.id, e.retries]),
        [[id, 2]],
      )
      await w.stop()
    })

    it('[bad command lines] malformed --args and an unknown archive id exit 64 with one line', async () => {
      const bad = await tsq(broker, ['fire', 'a.b', '--args', '{"not": "a list"}'])
      assert.equal(bad.code, 64)
      assert.ok(oneLine(bad.stderr), bad.stderr)
      assert.match(bad.stderr, /--args must be a JSON array/)
      const broken = await tsq(broker, ['fire', 'a.b', '--args', '[1,'])
      assert.equal(broken.code, 64)
      assert.ok(oneLine(broken.stderr), broken.stderr)
      const service = uniqueName('nobody')
      const unknown = await tsq(broker, ['archive', 'replay', 'no-such-id', '--service', service])
      assert.equal(unknown.code, 64)
      assert.ok(oneLine(unknown.stderr), unknown.stderr)
      assert.match(unknown.stderr, /no archived event no-such-id/)
      const show = await tsq(broker, ['archive', 'show', 'no-such-id', '--service', service, '--json'])
      assert.equal(show.code, 64)
      assert.equal((JSON.parse(show.stdout) as { error: { code: string } }).error.code, 'BAD_ARGUMENT')
      const purge = await tsq(broker, ['archive', 'purge', '--service', service])
      assert.equal(purge.code, 64, 'no -f and no terminal')
      assert.match(purge.stderr, /-f/)
    })

    it('[replay killed with -9] a replay killed half-way loses no archived event', async () => {
      const event = `${uniqueName('ev')}.many`
      const service = uniqueName('replayed')
      const env = { AMQP_EVENTS_MAX_RETRIES: '0' }
      cleanups.push(() => cleanupService(broker, service, [event], 0))
      const log = join(dir, `${kind}-replay-kill.jsonl`)
      const w = await start(broker, { service, events: [event], log, nodename: `${service}@h`, env: { ...env, BUS_ALWAYS_FAIL: '1' } })
      const count = 300
      const ids = await fire(
        broker,
        event,
        Array.from({ length: count }, (_, i) => [i]),
      )
      await waitUntil(
        () => (w.output().match(/archived to /g) ?? []).length >= count,
        60_000,
        `${count} archived events`,
        () => w.output().slice(-1500),
      )
      await w.stop()
      // The replay publishes each event to the (now unconsumed) handler queue, then removes it from the archive.
      const replay = spawn(process.execPath, [BIN, 'archive', 'replay', '--all', '--service', service], {
        cwd: ROOT,
        env: { ...process.env, ...broker.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let out = ''
      replay.stdout.on('data', (d) => (out += d))
      const exited = new Promise((r) => replay.once('exit', r))
      await waitUntil(
        () => (out.match(/^replayed /gm) ?? []).length >= 20,
        30_000,
        'the replay under way',
        () => out,
      )
      replay.kill('SIGKILL')
      await exited
      const seen = new Set<string>()
      const archived = jsonOf<ArchivedEvent[]>(await tsq(broker, ['archive', 'ls', '--service', service, '--json'], env), 'tsq archive ls')
      for (const e of archived) seen.add(e.id)
      // What the replay sent waits in the handler queue: drain it through a worker that records every run.
      const drained = join(dir, `${kind}-replay-kill-drained.jsonl`)
      const d = await start(broker, { service, events: [event], log: drained, nodename: `${service}-drain@h`, env })
      await waitUntil(
        () => readRuns(drained).length >= count - archived.length,
        30_000,
        'the replayed events',
        () => d.output().slice(-1500),
      )
      for (const r of readRuns(drained)) seen.add(r.id)
      assert.ok(archived.length < count, `the replay had moved some (${count - archived.length}) before the kill`)
      assert.deepEqual([...seen].sort(), [...ids].sort(), 'every event is still archived or was replayed')
      await d.stop()
    })

    if (kind === 'amqp') {
      it('[settings differ] a worker whose AMQP_EVENTS_* differ from the queues it finds stops with one line naming the queue and both argument sets', async () => {
        const event = `${uniqueName('ev')}.cfg`
        const service = uniqueName('cfg')
        cleanups.push(() => cleanupService(broker, service, [event]))
        const declared = await tsq(broker, ['bus', 'declare', '-A', SERVICE_MODULE], { BUS_SERVICE: service, BUS_EVENTS: event })
        assert.equal(declared.code, 0, declared.stderr)
        const w = startWorker(['-A', SERVICE_MODULE, '-P', 'solo', '--without-mingle', '--without-gossip', '--without-heartbeat', '-q'], {
          nodename: `${service}@h`,
          env: { ...broker.env, BUS_SERVICE: service, BUS_EVENTS: event, AMQP_EVENTS_ARCHIVED_QUEUE_LENGTH: '5' },
        })
        const err = await w.then(
          () => undefined,
          (e: Error) => e,
        )
        assert.ok(err, 'the worker must not start')
        assert.match(err.message, /exited early \(64\)/)
        const line = err.message.split('\n').find((l) => l.includes('exists with arguments'))!
        assert.ok(line, err.message)
        assert.match(
          line,
          new RegExp(
            `queue '${archivedExchangeName(service)}' exists with arguments \\{x-max-length: 10000, x-message-ttl: 604800000, x-queue-mode: 'lazy'\\}, but this service declares \\{x-max-length: 5, x-message-ttl: 604800000, x-queue-mode: 'lazy'\\}`,
          ),
        )
      })
    }
  })
}
