// tsq-test: slow
// `tsq list bindings` (issue 26 item 2): on Redis, the bindings a Python
// Celery app declared, the same rows as `celery list bindings` prints; on the
// shared RabbitMQ (management plugin off) one line naming the plugin to
// enable; on a RabbitMQ node of this test's own, with `rabbitmq-plugins enable
// rabbitmq_management`, the table and --json from its management API.
import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName } from '../helpers/brokers.js'
import { runTsq, tempTsqHome } from '../helpers/cli.js'
import { GroupProcess, sleep } from '../helpers/process-group.js'
import { PYTHON, run } from '../interop/helpers/python-worker.js'
import { RABBITMQCTL, RABBITMQ_SERVER, freePort } from '../interop/helpers/tls-brokers.js'

const execFileP = promisify(execFile)
const RABBITMQ_PLUGINS = '/usr/lib/rabbitmq/bin/rabbitmq-plugins'
const NO_BROKER_ENV = { TSQ_BROKER_URL: '', CELERY_BROKER_URL: '', TSQ_RESULT_BACKEND: '', CELERY_RESULT_BACKEND: '' }
const home = tempTsqHome()

// A Celery app with three queues on two exchanges (direct and topic), as an operator's would be.
const PY_APP = `
import os
from celery import Celery
from kombu import Exchange, Queue
app = Celery('lbapp', broker=os.environ['LB_BROKER'])
p = os.environ['LB_PREFIX']
app.conf.task_queues = [
    Queue(p + '-images', Exchange(p + '-media', type='direct'), routing_key='image.resize'),
    Queue(p + '-video', Exchange(p + '-media', type='direct'), routing_key='video.encode'),
    Queue(p + '-logs', Exchange(p + '-logs-x', type='topic'), routing_key='log.#'),
]
`

function rows(stdout: string): string[] {
  const lines = stdout.trimEnd().split('\n')
  assert.equal(lines[0], `${'Queue'.padEnd(28)} ${'Exchange'.padEnd(28)} Routing Key`)
  assert.equal(lines[1], `${'-'.repeat(16).padEnd(28)} ${'-'.repeat(16).padEnd(28)} ${'-'.repeat(16)}`)
  return lines.slice(2).sort()
}

const redisSkip = await brokerSkipReason('redis')
describe('tsq list bindings on Redis', { skip: redisSkip }, () => {
  const prefix = uniqueName('lb')
  after(async () => {
    const redis = new Redis(REDIS_URL)
    await redis.del(`_kombu.binding.${prefix}-media`, `_kombu.binding.${prefix}-logs-x`).catch(() => undefined)
    redis.disconnect()
  })

  it('shows the bindings a Python Celery app declared, as celery list bindings does', { timeout: 120_000 }, async () => {
    writeFileSync(join(home, 'lbapp.py'), PY_APP)
    const env = { ...process.env, ...NO_BROKER_ENV, LB_BROKER: REDIS_URL, LB_PREFIX: prefix, PYTHONDONTWRITEBYTECODE: '1' }
    const declared = await run(
      PYTHON,
      ['-c', 'from lbapp import app\nwith app.connection_for_write() as conn:\n    app.amqp.TaskConsumer(conn).declare()'],
      { cwd: home, env, timeoutMs: 60_000 },
    )
    assert.equal(declared.code, 0, declared.stderr)
    const ts = await runTsq(['-b', REDIS_URL, 'list', 'bindings'], { env: NO_BROKER_ENV })
    assert.equal(ts.code, 0, ts.stderr)
    const mine = rows(ts.stdout).filter((line) => line.startsWith(prefix))
    assert.deepEqual(mine, [
      `${`${prefix}-images`.padEnd(28)} ${`${prefix}-media`.padEnd(28)} image.resize`,
      `${`${prefix}-logs`.padEnd(28)} ${`${prefix}-logs-x`.padEnd(28)} log.#`,
      `${`${prefix}-video`.padEnd(28)} ${`${prefix}-media`.padEnd(28)} video.encode`,
    ])
    const py = await run(PYTHON, ['-m', 'celery', '-A', 'lbapp', 'list', 'bindings'], { cwd: home, env, timeoutMs: 60_000 })
    assert.equal(py.code, 0, py.stderr)
    assert.deepEqual(
      mine,
      rows(py.stdout).filter((line) => line.startsWith(prefix)),
    )

    const json = await runTsq(['list', 'bindings', '-b', REDIS_URL, '--json'], { env: NO_BROKER_ENV })
    assert.equal(json.code, 0, json.stderr)
    const parsed = (JSON.parse(json.stdout) as Array<{ queue: string; exchange: string; routingKey: string }>).filter((b) =>
      b.queue.startsWith(prefix),
    )
    assert.deepEqual(
      parsed.sort((a, b) => a.queue.localeCompare(b.queue)),
      [
        { queue: `${prefix}-images`, exchange: `${prefix}-media`, routingKey: 'image.resize' },
        { queue: `${prefix}-logs`, exchange: `${prefix}-logs-x`, routingKey: 'log.#' },
        { queue: `${prefix}-video`, exchange: `${prefix}-media`, routingKey: 'video.encode' },
      ],
    )
  })
})

describe('tsq list bindings on file://', () => {
  it("reads the embedded broker's bindings", { timeout: 60_000 }, async () => {
    const broker = `file://${join(home, 'lb-broker')}`
    const made = await runTsq(['-b', broker, 'amqp', 'repl'], {
      input: 'queue.declare fq\nexchange.declare fx topic\nqueue.bind fq fx a.#\n',
      env: NO_BROKER_ENV,
    })
    assert.equal(made.code, 0, made.stderr)
    const ts = await runTsq(['-b', broker, 'list', 'bindings'], { env: NO_BROKER_ENV })
    assert.equal(ts.code, 0, ts.stderr)
    assert.deepEqual(rows(ts.stdout), [`${'fq'.padEnd(28)} ${'fx'.padEnd(28)} a.#`])
  })
})

const amqpSkip = await brokerSkipReason('amqp')
describe('tsq list bindings on RabbitMQ', { skip: amqpSkip }, () => {
  it('without the management plugin: one line naming the plugin to enable, exit 69', { timeout: 60_000 }, async () => {
    // The shared broker runs without the plugin; an address where nothing listens stands for it wherever it is on.
    const closed = await freePort()
    for (const extra of [[], ['--management-url', `http://127.0.0.1:${closed}`]]) {
      const r = await runTsq(['-b', AMQP_URL, 'list', 'bindings', ...extra], { env: NO_BROKER_ENV })
      if (extra.length === 0 && r.code === 0) continue // this machine's broker has the plugin on
      assert.equal(r.code, 69, r.stderr)
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
      assert.match(
        r.stderr,
        /^Error: RabbitMQ's management API is not answering at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\): enable it with `rabbitmq-plugins enable rabbitmq_management`/,
      )
    }
  })

  describe('on a node of its own with rabbitmq_management enabled', () => {
    const base = join(home, 'mgmt-rabbit')
    const nodename = `tsq-mgmt-${process.pid}@localhost`
    let env: NodeJS.ProcessEnv = {}
    let proc: GroupProcess | undefined
    let amqpPort = 0
    let mgmtPort = 0

    before(async () => {
      mkdirSync(join(base, 'home'), { recursive: true })
      ;[amqpPort, mgmtPort] = [await freePort(), await freePort()]
      const distPort = await freePort()
      writeFileSync(
        join(base, 'rabbitmq.conf'),
        [
          `listeners.tcp.default = 127.0.0.1:${amqpPort}`,
          `management.tcp.port = ${mgmtPort}`,
          'management.tcp.ip = 127.0.0.1',
          'loopback_users = none',
          '',
        ].join('\n'),
      )
      writeFileSync(join(base, 'enabled_plugins'), '[].\n')
      env = {
        ...process.env,
        HOME: join(base, 'home'),
        RABBITMQ_NODENAME: nodename,
        RABBITMQ_NODE_PORT: String(amqpPort),
        RABBITMQ_DIST_PORT: String(distPort),
        RABBITMQ_MNESIA_BASE: join(base, 'mnesia'),
        RABBITMQ_LOG_BASE: join(base, 'log'),
        RABBITMQ_CONFIG_FILE: join(base, 'rabbitmq.conf'),
        RABBITMQ_ENABLED_PLUGINS_FILE: join(base, 'enabled_plugins'),
        RABBITMQ_PLUGINS_EXPAND_DIR: join(base, 'plugins-expand'),
        RABBITMQ_PID_FILE: join(base, 'pid'),
      }
      // The operator's step, on this node's own enabled_plugins file.
      await execFileP(RABBITMQ_PLUGINS, ['-n', nodename, 'enable', '--offline', 'rabbitmq_management'], { env, timeout: 120_000 })
      proc = new GroupProcess(spawn(RABBITMQ_SERVER, [], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] }))
      for (let i = 0; i < 120 && !existsSync(join(base, 'pid')); i++) {
        if (proc.hasExited) throw new Error(`rabbitmq-server exited:\n${proc.logTail()}`)
        await sleep(500)
      }
      await execFileP(RABBITMQCTL, ['-n', nodename, 'wait', '--timeout', '200', join(base, 'pid')], { env, timeout: 240_000 })
      // The management listener starts with the plugin, after the node reports running.
      for (let i = 0; i < 120; i++) {
        if (
          await fetch(`http://127.0.0.1:${mgmtPort}/api/overview`).then(
            () => true,
            () => false,
          )
        )
          break
        await sleep(500)
      }
    })

    after(async () => {
      if (proc && !proc.hasExited) await execFileP(RABBITMQCTL, ['-n', nodename, 'stop'], { env, timeout: 60_000 }).catch(() => undefined)
      await proc?.stopWith(() => process.kill(proc!.pid, 'SIGTERM'), 15_000)
    })

    it('prints the table and --json from the management API', { timeout: 120_000 }, async () => {
      const broker = `amqp://guest:guest@127.0.0.1:${amqpPort}//`
      const made = await runTsq(['-b', broker, 'amqp', 'repl'], {
        input: 'queue.declare mq\nexchange.declare mx topic\nqueue.bind mq mx b.#\n',
        env: NO_BROKER_ENV,
      })
      assert.equal(made.code, 0, made.stderr)
      const management = `http://127.0.0.1:${mgmtPort}`
      const ts = await runTsq(['-b', broker, 'list', 'bindings', '--management-url', management], { env: NO_BROKER_ENV })
      assert.equal(ts.code, 0, ts.stderr)
      // RabbitMQ also lists every queue's binding to the default exchange, by its name.
      assert.deepEqual(rows(ts.stdout), [`${'mq'.padEnd(28)} ${''.padEnd(28)} mq`, `${'mq'.padEnd(28)} ${'mx'.padEnd(28)} b.#`].sort())
      const json = await runTsq(['-b', broker, 'list', 'bindings', '--management-url', management, '--json'], { env: NO_BROKER_ENV })
      assert.equal(json.code, 0, json.stderr)
      assert.deepEqual(JSON.parse(json.stdout), [
        { queue: 'mq', exchange: '', routingKey: 'mq' },
        { queue: 'mq', exchange: 'mx', routingKey: 'b.#' },
      ])
      const refused = await runTsq(['-b', broker, 'list', 'bindings', '--management-url', `http://guest:wrong@127.0.0.1:${mgmtPort}`], {
        env: NO_BROKER_ENV,
      })
      assert.equal(refused.code, 69)
      assert.match(refused.stderr, /^Error: RabbitMQ's management API at http:\/\/127\.0\.0\.1:\d+ refused the login \(401\)/)
    })
  })
})
