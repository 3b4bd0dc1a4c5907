// tsq-test: slow
// A kill -9 of a process with 10,000 sends in flight loses
// none of the sends that had resolved. The child (test/fixtures/send/send-burst.ts)
// starts every send at once and writes each id to a pipe as its send resolves;
// the test kills its process group with SIGKILL once a first share has resolved,
// reads every id that reached the pipe, then reads the queue straight from the
// broker (amqplib, ioredis: not through tsq) and checks each one is there.
// Sends that had not resolved may or may not be there: both are correct.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { after, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import amqplib from '../../src/transport/amqp/amqplib.js'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { GroupProcess, sleep } from '../helpers/process-group.js'
import { deleteCeleryQueues } from '../interop/helpers/cleanup.js'
import { REPO_ROOT } from '../interop/helpers/python-worker.js'

const CHILD = resolve(REPO_ROOT, 'test/fixtures/send/send-burst.ts')
const SENDS = 10_000
/** Kill once this many have resolved: the rest are still in flight. */
const KILL_AFTER = 500

class Sender extends GroupProcess {
  readonly resolved = new Set<string>()
  private buffered = ''
  private ready!: () => void
  readonly isReady = new Promise<void>((r) => (this.ready = r))
  private onResolved: (() => void) | undefined

  constructor(broker: string, queue: string) {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, broker, queue, String(SENDS)], {
      cwd: REPO_ROOT,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    super(child)
    child.stdout!.setEncoding('utf8').on('data', (d: string) => this.read(d))
  }

  private read(data: string): void {
    this.buffered += data
    const lines = this.buffered.split('\n')
    this.buffered = lines.pop()!
    for (const line of lines) {
      if (line.startsWith('ready ')) this.ready()
      else if (line.startsWith('sent ')) this.resolved.add(line.slice(5))
    }
    this.onResolved?.()
  }

  /** Waits (bounded) until at least `n` sends have resolved. */
  async waitResolved(n: number, ms: number): Promise<void> {
    const deadline = Date.now() + ms
    while (this.resolved.size < n && !this.hasExited && Date.now() < deadline) {
      await new Promise<void>((r) => {
        this.onResolved = r
        setTimeout(r, 200)
      })
    }
  }

  kill9(): void {
    this.signalGroup('SIGKILL')
  }

  stop(): Promise<void> {
    return this.stopWith(() => this.signalGroup('SIGKILL'), 1000)
  }
}

/** `promise`, or `fallback` after `ms`; the timer is cleared so it does not hold the test process open. */
async function within<T, F>(promise: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([promise, new Promise<F>((r) => (timer = setTimeout(() => r(fallback), ms)))])
  } finally {
    clearTimeout(timer)
  }
}

async function idsInRabbit(queue: string): Promise<Set<string>> {
  const conn = await amqplib.connect(AMQP_URL)
  const ids = new Set<string>()
  try {
    const ch = await conn.createChannel()
    const { messageCount } = await ch.checkQueue(queue)
    await new Promise<void>((done, fail) => {
      if (messageCount === 0) return done()
      let seen = 0
      ch.consume(
        queue,
        (msg) => {
          if (!msg) return fail(new Error('consumer cancelled'))
          ids.add(String(msg.properties.headers?.id))
          seen += 1
          if (seen === messageCount) done()
        },
        { noAck: true },
      ).catch(fail)
    })
    await ch.close()
  } finally {
    await conn.close()
  }
  return ids
}

async function idsInRedis(queue: string): Promise<Set<string>> {
  const redis = new Redis(REDIS_URL)
  try {
    // Default priority: kombu's base list (spec §4.3).
    const raw = await redis.lrange(queue, 0, -1)
    return new Set(raw.map((r) => String((JSON.parse(r) as { headers: { id: string } }).headers.id)))
  } finally {
    redis.disconnect()
  }
}

for (const broker of ['amqp', 'redis'] as const) {
  const skip = await brokerSkipReason(broker)
  describe(`kill -9 of a sender with ${SENDS} sends in flight (${broker})`, { skip }, () => {
    const url = broker === 'amqp' ? AMQP_URL : REDIS_URL
    const queue = uniqueName(`tsq-sendk9-${broker}`)
    let sender: Sender | undefined

    after(async () => {
      await sender?.stop()
      await deleteCeleryQueues(broker, url, [queue])
    })

    it('every send that resolved before the kill is in the broker', async () => {
      sender = new Sender(url, queue)
      await within(sender.isReady, 60_000, 'not ready')
      await sender.waitResolved(KILL_AFTER, 120_000)
      assert.ok(sender.resolved.size >= KILL_AFTER, `fewer than ${KILL_AFTER} sends resolved before the bound:\n${sender.logTail()}`)
      sender.kill9()
      const ended = await within(sender.exited, 10_000, 'still running')
      assert.equal(ended, 'SIGKILL', `the sender was not killed by SIGKILL (${String(ended)}):\n${sender.logTail()}`)
      // The pipe's last ids are read once the process is gone.
      await sleep(200)
      const resolvedIds = [...sender.resolved]
      const inBroker = broker === 'amqp' ? await idsInRabbit(queue) : await idsInRedis(queue)
      const lost = resolvedIds.filter((id) => !inBroker.has(id))
      process.stderr.write(
        `${broker}: ${resolvedIds.length} of ${SENDS} sends resolved before kill -9; ${inBroker.size} messages in the queue; ${lost.length} resolved sends missing\n`,
      )
      assert.deepEqual(lost.slice(0, 10), [], `${lost.length} sends resolved but are not in the broker`)
      assert.ok(inBroker.size >= resolvedIds.length)
    })
  })
}
