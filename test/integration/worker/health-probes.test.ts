// tsq-test: slow 3
// tsq-test: exclusive (latency bounds of 10 ms need the machine's cores for the probed worker, not a neighbour's tests)
// The health port of `tsq worker`, `tsq beat` and a bare health server: /healthz
// and /readyz answer within 10 ms (the median; never held by the task) while every pool slot (the main thread on
// the solo pool) runs a CPU-bound task; /readyz fails and /healthz holds while
// the broker is down, and both come back with it; /healthz fails once the event
// loop stops turning (a loop blocked outside any task, or a solo task past its
// time limit); a beat is ready as leader and as standby, not while its store is down.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { Agent, get } from 'node:http'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { brokerSkipReason, REDIS_URL, uniqueName, waitFor } from '../../helpers/brokers.js'
import { BIN, callTask, ROOT, startWorker } from '../../helpers/cli.js'
import { hasRedisServer, startRedisServer } from '../../helpers/redis-server.js'
import type { GroupProcess } from '../../helpers/process-group.js'
import { deleteCeleryQueues } from '../../interop/helpers/cleanup.js'

const APP = 'test/fixtures/tasks/probe-tasks.js'
const redisSkip = await brokerSkipReason('redis')
const queues: string[] = []
const scratch = mkdtempSync(join(tmpdir(), 'tsq-probes-'))
const agent = new Agent({ keepAlive: true, maxSockets: 4 })

after(async () => {
  agent.destroy()
  if (queues.length && !redisSkip) await deleteCeleryQueues('redis', REDIS_URL, queues)
  rmSync(scratch, { recursive: true, force: true })
})

const envFor = (broker: string): NodeJS.ProcessEnv => ({
  TSQ_BROKER_URL: broker,
  CELERY_BROKER_URL: '',
  TSQ_RESULT_BACKEND: '',
  CELERY_RESULT_BACKEND: '',
})

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

interface Answer {
  status: number
  body: string
  ms: number
}

function probe(port: number, path: string, timeoutMs = 2000): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const req = get({ host: '127.0.0.1', port, path, agent, timeout: timeoutMs }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => (body += d))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, ms: performance.now() - t0 }))
    })
    req.once('timeout', () => req.destroy(new Error(`GET ${path} gave no answer in ${timeoutMs} ms`)))
    req.once('error', reject)
  })
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

describe('health probes under CPU-bound tasks', { skip: redisSkip }, () => {
  for (const pool of ['solo', 'threads', 'prefork'] as const) {
    it(`${pool}: /healthz and /readyz answer in under 10 ms while every slot spins`, async () => {
      const port = await freePort()
      const queue = uniqueName(`tsq-probe-${pool}`)
      queues.push(queue)
      const env = envFor(REDIS_URL)
      // One slot: on a 2-core machine a second spinning slot would take the core the probes' answers run on.
      const slots = 1
      const worker = await startWorker(
        [
          '-A',
          APP,
          '-l',
          'INFO',
          '-P',
          pool,
          '-c',
          String(slots),
          '-Q',
          queue,
          '--prefetch-multiplier',
          '1',
          '--health-port',
          `127.0.0.1:${port}`,
        ],
        { env, nodename: uniqueName(`probe-${pool}`) + '@localhost' },
      )
      try {
        await waitFor(async () => (await probe(port, '/readyz')).status === 200, { what: '/readyz 200', timeoutMs: 10_000 })
        const dir = mkdtempSync(join(scratch, `${pool}-`))
        for (let i = 0; i < slots; i++) await callTask(env, 'probe.spin', [5000, dir, i], ['--queue', queue])
        await waitFor(() => readdirSync(dir).length === slots, { what: `${slots} spinning tasks`, timeoutMs: 15_000 })
        const times: number[] = []
        for (let i = 0; i < 20; i++) {
          for (const path of ['/healthz', '/readyz']) {
            const answer = await probe(port, path)
            assert.equal(answer.status, 200, `${path}: ${answer.body}`)
            times.push(answer.ms)
          }
          await sleep(40)
        }
        if (pool === 'solo') {
          // The main loop was held all along: the answers came from the health thread.
          const metrics = await probe(port, '/metrics')
          const age = Number(/^tsq_event_loop_last_tick_age_seconds (\S+)$/m.exec(metrics.body)?.[1])
          assert.ok(age > 0.5, `the solo task held the main loop (last tick ${age} s ago)`)
        }
        // The median bounds the probe's own cost; the tail is the machine's (2 cores shared by other
        // work): an answer that waited on the spinning slot would take the task's 5 s.
        const figures = times.map((t) => t.toFixed(1)).join(' ')
        assert.ok(median(times) < 10, `answers in ms: ${figures}`)
        assert.ok(Math.max(...times) < 1000, `answers in ms: ${figures}`)
      } finally {
        await worker.stop('SIGQUIT')
      }
    })
  }

  it('solo: /healthz fails once a task holds the loop past its time limit and --health-stuck-after', async () => {
    const port = await freePort()
    const queue = uniqueName('tsq-probe-stuck')
    queues.push(queue)
    const env = envFor(REDIS_URL)
    const worker = await startWorker(
      [
        '-A',
        APP,
        '-l',
        'INFO',
        '-P',
        'solo',
        '-Q',
        queue,
        '--time-limit',
        '1',
        '--health-port',
        `127.0.0.1:${port}`,
        '--health-stuck-after',
        '1',
      ],
      { env, nodename: uniqueName('probe-stuck') + '@localhost' },
    )
    try {
      await waitFor(async () => (await probe(port, '/readyz')).status === 200, { what: '/readyz 200' })
      await callTask(env, 'probe.spin', [8000, '', 0], ['--queue', queue])
      const stuck = await waitFor(
        async () => {
          const answer = await probe(port, '/healthz')
          return answer.status === 503 ? answer : null
        },
        { what: '/healthz 503', timeoutMs: 7000, intervalMs: 100 },
      )
      assert.match(stuck.body, /past its time limit/)
      assert.equal((await probe(port, '/readyz')).status, 503)
      // The task ends, the loop turns again: alive.
      await waitFor(async () => (await probe(port, '/healthz')).status === 200, { what: '/healthz 200 again', timeoutMs: 15_000 })
    } finally {
      await worker.stop('SIGQUIT')
    }
  })
})

describe('a health server whose event loop stops turning', () => {
  it('fails /healthz within --health-stuck-after, and answers meanwhile', async () => {
    const port = await freePort()
    const script = [
      `import { HealthServer } from ${JSON.stringify(join(ROOT, 'src/process/health/index.ts'))}`,
      `const s = await HealthServer.start({ listen: '127.0.0.1:${port}', stuckAfterS: 0.5 })`,
      `s.setReady(true)`,
      `console.log('up')`,
      `setTimeout(() => { const end = Date.now() + 6000; while (Date.now() < end); console.log('free') }, 1500)`,
      `setTimeout(() => process.exit(0), 9000)`,
    ].join('\n')
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    try {
      let out = ''
      child.stdout!.on('data', (d) => (out += d))
      await waitFor(() => out.includes('up'), { what: 'the server', timeoutMs: 20_000 })
      await waitFor(async () => (await probe(port, '/healthz').catch(() => ({ status: 0 }))).status === 200, {
        what: '/healthz 200',
        timeoutMs: 1000,
      })
      const stuck = await waitFor(
        async () => {
          const answer = await probe(port, '/healthz').catch(() => null)
          return answer?.status === 503 ? answer : null
        },
        { what: '/healthz 503', timeoutMs: 5000 },
      )
      assert.match(stuck.body, /the event loop has not turned for/)
      assert.ok(stuck.ms < 10, `answered in ${stuck.ms} ms`)
      await waitFor(() => out.includes('free'), { what: 'the loop freed', timeoutMs: 6000 })
      await waitFor(async () => (await probe(port, '/healthz')).status === 200, { what: '/healthz 200 again' })
    } finally {
      stopChild(child)
    }
  })
})

function stopChild(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
}

describe('readiness follows the broker', { skip: hasRedisServer ? false : 'redis-server is not installed' }, () => {
  let redis: GroupProcess
  let redisPort = 0
  let url = ''
  before(async () => {
    redisPort = await freePort()
    url = `redis://127.0.0.1:${redisPort}/0`
    redis = await startRedisServer(redisPort, scratch)
  })
  after(async () => {
    await redis?.stopWith(() => process.kill(-redis.pid, 'SIGTERM'), 5000)
  })

  it('worker: /readyz fails and /healthz holds while the broker is down, both 200 once it is back', async () => {
    const port = await freePort()
    const worker = await startWorker(['-A', APP, '-l', 'INFO', '-P', 'threads', '-c', '1', '--health-port', `127.0.0.1:${port}`], {
      env: envFor(url),
      nodename: uniqueName('probe-down') + '@localhost',
    })
    try {
      await waitFor(async () => (await probe(port, '/readyz')).status === 200, { what: '/readyz 200' })
      await redis.stopWith(() => process.kill(-redis.pid, 'SIGTERM'), 5000)
      const down = await waitFor(
        async () => {
          const answer = await probe(port, '/readyz')
          return answer.status === 503 ? answer : null
        },
        { what: '/readyz 503', timeoutMs: 15_000, intervalMs: 100 },
      )
      assert.match(down.body, /broker connection is lost/)
      assert.equal((await probe(port, '/healthz')).status, 200)
      redis = await startRedisServer(redisPort, scratch)
      await waitFor(async () => (await probe(port, '/readyz')).status === 200, {
        what: '/readyz 200 again',
        timeoutMs: 30_000,
        intervalMs: 200,
      })
    } finally {
      await worker.stop('SIGQUIT')
    }
  })

  it('beat: ready as leader and as standby on one lease; not while the store is down', async () => {
    const ports = [await freePort(), await freePort()]
    const key = uniqueName('probe-beat')
    const beats = ports.map((port) =>
      spawn(
        process.execPath,
        [
          BIN,
          'beat',
          '-b',
          url,
          '--scheduler',
          'redis',
          '--key-prefix',
          `${key}:`,
          '--lock-timeout',
          '3',
          '--health-port',
          `127.0.0.1:${port}`,
          '-l',
          'INFO',
        ],
        { cwd: ROOT, env: { ...process.env, ...envFor(url) }, stdio: ['ignore', 'pipe', 'pipe'] },
      ),
    )
    let log = ''
    for (const b of beats) {
      b.stdout!.on('data', (d) => (log += d))
      b.stderr!.on('data', (d) => (log += d))
    }
    try {
      for (const port of ports)
        await waitFor(async () => (await probe(port, '/readyz').catch(() => ({ status: 0 }))).status === 200, {
          what: `beat :${port} ready`,
          timeoutMs: 20_000,
        })
      await waitFor(() => log.includes('took the lease'), { what: 'a leader' })
      await redis.stopWith(() => process.kill(-redis.pid, 'SIGTERM'), 5000)
      for (const port of ports) {
        await waitFor(async () => (await probe(port, '/readyz')).status === 503, {
          what: `beat :${port} unready`,
          timeoutMs: 25_000,
          intervalMs: 200,
        })
        assert.equal((await probe(port, '/healthz')).status, 200)
      }
      redis = await startRedisServer(redisPort, scratch)
      for (const port of ports)
        await waitFor(async () => (await probe(port, '/readyz')).status === 200, {
          what: `beat :${port} ready again`,
          timeoutMs: 30_000,
          intervalMs: 200,
        })
    } finally {
      for (const b of beats) b.kill('SIGTERM')
      await Promise.all(beats.map((b) => new Promise((r) => (b.exitCode !== null ? r(null) : b.once('exit', r)))))
    }
  })
})
