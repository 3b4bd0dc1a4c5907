// The events bus end to end, on RabbitMQ, Redis and the file broker: tsq
// workers of two services spawned as a shell would, events fired as Python
// services fire them, and `tsq bus ls` / `tsq archive` read as scripts do.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { brokerSkipReason, uniqueName, type BrokerKind } from '../helpers/brokers.js'
import { tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'
import type { ArchivedEvent } from '../../src/bus/messages.js'
import type { ServiceStatus } from '../../src/bus/status.js'
import { busBroker, cleanupService, fire, jsonOf, readRuns, startServiceWorker, tsq, waitUntil, type BusBroker } from './bus-support.js'

const dir = tempTsqHome()
// Long enough that `tsq archive ls` on a loaded CI machine lists the events before they expire.
const ARCHIVE_TTL_MS = 12_000

for (const kind of ['amqp', 'redis', 'file'] as BrokerKind[]) {
  describe(`events bus on ${kind}`, { skip: await brokerSkipReason(kind) }, () => {
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

    it('[two services] one firing reaches each service once, with two workers per service', async () => {
      const event = `${uniqueName('ev')}.invoice.paid`
      const billing = uniqueName('billing')
      const shipping = uniqueName('shipping')
      cleanups.push(
        () => cleanupService(broker, billing, [event]),
        () => cleanupService(broker, shipping, [event]),
      )
      const log = join(dir, `${kind}-two-services.jsonl`)
      const ws = await Promise.all([
        start(broker, { service: billing, events: [event], log, nodename: `${billing}-1@h` }),
        start(broker, { service: billing, events: [event], log, nodename: `${billing}-2@h` }),
        start(broker, { service: shipping, events: [event], log, nodename: `${shipping}-1@h` }),
        start(broker, { service: shipping, events: [event], log, nodename: `${shipping}-2@h` }),
      ])
      const ids = await fire(
        broker,
        event,
        Array.from({ length: 20 }, (_, i) => [{ n: i }]),
      )
      await waitUntil(
        () => readRuns(log).length >= 40,
        30_000,
        'every event handled by both services',
        () => ws.map((w) => w.output().slice(-1500)).join('\n'),
      )
      await new Promise((r) => setTimeout(r, 1000)) // a duplicate would show by now
      const runs = readRuns(log)
      for (const service of [billing, shipping]) {
        const mine = runs
          .filter((r) => r.service === service)
          .map((r) => r.id)
          .sort()
        assert.deepEqual(mine, [...ids].sort(), `${service} handled each event exactly once`)
      }
      assert.equal(runs.length, 40)
      await Promise.all(ws.map((w) => w.stop()))
    })

    it('[retries] a handler failing 3 times is retried no sooner than 1, 2 and 4 s, waiting at the retry step, not in a worker; the other service gets one copy', async () => {
      const event = `${uniqueName('ev')}.parcel.sent`
      const flaky = uniqueName('flaky')
      const steady = uniqueName('steady')
      cleanups.push(
        () => cleanupService(broker, flaky, [event]),
        () => cleanupService(broker, steady, [event]),
      )
      const log = join(dir, `${kind}-retries.jsonl`)
      const wf = await start(broker, {
        service: flaky,
        events: [event],
        log,
        nodename: `${flaky}@h`,
        env: { BUS_FAIL_TIMES: '3' },
        pool: 'prefork',
        concurrency: 2,
      })
      const ws = await start(broker, { service: steady, events: [event], log, nodename: `${steady}@h` })
      const [id] = await fire(broker, event, [[{ parcel: 7 }]])
      const runsOf = (service: string) => readRuns(log).filter((r) => r.service === service && r.id === id)
      // While the third retry waits its 4 s: in the step-2 queue (or lot), which `tsq bus ls` shows.
      await waitUntil(
        () => runsOf(flaky).some((r) => r.retries === 2),
        20_000,
        'the second retry',
        () => wf.output().slice(-2000),
      )
      await new Promise((r) => setTimeout(r, 600))
      const status = jsonOf<{ services: ServiceStatus[] }>(await tsq(broker, ['bus', 'ls', '--service', flaky, '--json']), 'tsq bus ls')
      const s = status.services.find((x) => x.service === flaky)!
      assert.equal(s.retries[2]!.messages, 1, `waiting at ${s.retries[2]!.name}: ${JSON.stringify(s)}`)
      assert.equal(
        s.retries.reduce((n, r) => n + (r.messages ?? 0), 0),
        1,
      )
      assert.equal(s.handlers[0]!.messages, 0, 'not back in the handler queue yet')
      await waitUntil(
        () => runsOf(flaky).some((r) => r.ok),
        20_000,
        'the run that succeeds',
        () => wf.output().slice(-2000),
      )
      const runs = runsOf(flaky)
      assert.deepEqual(
        runs.map((r) => [r.retries, r.ok]),
        [
          [0, false],
          [1, false],
          [2, false],
          [3, true],
        ],
      )
      const gaps = runs.slice(1).map((r, i) => (r.at - runs[i]!.at) / 1000)
      // The broker holds each retry for its step's TTL, so none may come sooner (less the timer's slack).
      // How much later it comes is the machine's load, not the ladder's: no upper bound (the waits above bound the whole).
      for (const [i, want] of [1, 2, 4].entries())
        assert.ok(
          gaps[i]! >= want * 0.9,
          `retry ${i + 1} came after ${gaps[i]} s, sooner than its ${want} s step (gaps ${gaps.join(', ')})`,
        )
      assert.deepEqual(
        runsOf(steady).map((r) => [r.retries, r.ok]),
        [[0, true]],
        'the other service handled its own copy once, and saw none of the retries',
      )
      await Promise.all([wf.stop(), ws.stop()])
    })

    it('[archive] a handler that always fails ends in the archive; `archive ls` shows its error; fixed and restarted, `archive replay` runs it once', async () => {
      const event = `${uniqueName('ev')}.user.deleted`
      const service = uniqueName('broken')
      const env = { AMQP_EVENTS_MAX_RETRIES: '2' }
      cleanups.push(() => cleanupService(broker, service, [event], 2))
      const log = join(dir, `${kind}-archive.jsonl`)
      const broken = await start(broker, {
        service,
        events: [event],
        log,
        nodename: `${service}-1@h`,
        env: { ...env, BUS_ALWAYS_FAIL: '1' },
      })
      const [id] = await fire(broker, event, [[{ user: 3 }]])
      await waitUntil(
        () => broken.output().includes(`archived to ${service}:archived`),
        20_000,
        'the archive',
        () => broken.output().slice(-2000),
      )
      assert.deepEqual(
        readRuns(log).map((r) => r.retries),
        [0, 1, 2],
        'the first run and its 2 retries',
      )
      const listed = jsonOf<ArchivedEvent[]>(await tsq(broker, ['archive', 'ls', '--service', service, '--json'], env), 'tsq archive ls')
      assert.equal(listed.length, 1)
      assert.equal(listed[0]!.id, id)
      assert.equal(listed[0]!.event, event)
      assert.equal(listed[0]!.retries, 3, 'max_retries + 1, as the library archives it')
      assert.match(listed[0]!.lastError ?? '', /failed on purpose/)
      assert.ok(listed[0]!.firstFailure, 'the first failure is noted')
      const shown = jsonOf<ArchivedEvent[]>(
        await tsq(broker, ['archive', 'show', id!, '--service', service, '--json'], env),
        'tsq archive show',
      )
      assert.deepEqual(shown[0]!.args, [{ user: 3 }])
      assert.match(shown[0]!.traceback ?? '', /service\.js/)
      await broken.stop()
      const fixed = await start(broker, { service, events: [event], log, nodename: `${service}-2@h`, env })
      const replay = jsonOf<{ replayed: ArchivedEvent[] }>(
        await tsq(broker, ['archive', 'replay', id!, '--service', service, '--json'], env),
        'tsq archive replay',
      )
      assert.deepEqual(
        replay.replayed.map((e) => e.id),
        [id],
      )
      await waitUntil(
        () => readRuns(log).some((r) => r.ok),
        20_000,
        'the replayed run',
        () => fixed.output().slice(-2000),
      )
      await new Promise((r) => setTimeout(r, 1000))
      const after = readRuns(log).filter((r) => r.pid !== readRuns(log)[0]!.pid)
      assert.deepEqual(
        after.map((r) => [r.id, r.retries, r.ok]),
        [[id, 0, true]],
        'run once, with its retry count reset',
      )
      assert.deepEqual(
        jsonOf<ArchivedEvent[]>(await tsq(broker, ['archive', 'ls', '--service', service, '--json'], env), 'tsq archive ls'),
        [],
      )
      await fixed.stop()
    })

    it('[archive bounds] x-max-length keeps the newest N; x-message-ttl drops them after their time', async () => {
      const event = `${uniqueName('ev')}.order.placed`
      const service = uniqueName('bounded')
      const env = {
        AMQP_EVENTS_MAX_RETRIES: '0',
        AMQP_EVENTS_ARCHIVED_QUEUE_LENGTH: '3',
        AMQP_EVENTS_ARCHIVED_MESSAGE_TTL: String(ARCHIVE_TTL_MS),
      }
      cleanups.push(() => cleanupService(broker, service, [event], 0))
      const log = join(dir, `${kind}-bounds.jsonl`)
      const w = await start(broker, { service, events: [event], log, nodename: `${service}@h`, env: { ...env, BUS_ALWAYS_FAIL: '1' } })
      const ids = await fire(
        broker,
        event,
        Array.from({ length: 5 }, (_, i) => [i]),
      )
      await waitUntil(
        () => readRuns(log).length >= 5 && (w.output().match(/archived to /g) ?? []).length >= 5,
        20_000,
        'five archived events',
        () => w.output().slice(-2000),
      )
      const listed = jsonOf<ArchivedEvent[]>(await tsq(broker, ['archive', 'ls', '--service', service, '--json'], env), 'tsq archive ls')
      assert.deepEqual(listed.map((e) => e.id).sort(), ids.slice(2).sort(), 'the newest 3 of 5')
      // The TTL is long enough for a loaded machine to list before it runs out; then the archive empties on its own.
      let left: ArchivedEvent[] = listed
      await waitUntil(
        async () => {
          left = jsonOf<ArchivedEvent[]>(await tsq(broker, ['archive', 'ls', '--service', service, '--json'], env), 'tsq archive ls')
          return left.length === 0
        },
        ARCHIVE_TTL_MS + 15_000,
        `archive empty once ${ARCHIVE_TTL_MS} ms passed`,
        () => JSON.stringify(left.map((e) => e.id)),
      )
      await w.stop()
    })
  })
}
