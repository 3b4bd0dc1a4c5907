// tsq-test: slow 2
// TLS: a tsq worker and `tsq inspect ping`, `call` and `result`
// work over mutual TLS beside a Python Celery 5.2.6 worker configured as
// Celery documents (rediss:// URL parameters for Redis, broker_use_ssl for
// RabbitMQ); a client certificate from another CA, none at all, and a server
// the client cannot verify are refused with one line naming the broker
// (password masked) and the reason; no password or key is ever printed.
// The brokers are this file's own (helpers/tls-brokers.ts), started once and
// stopped also on failure.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { BIN, ROOT, runTsq, type CliResult } from '../helpers/cli.js'
import type { GroupProcess } from '../helpers/process-group.js'
import { PY_DIR, PYTHON } from './helpers/python-worker.js'
import {
  makeCerts,
  RABBITMQ_SERVER,
  startLogged,
  startTlsRabbit,
  startTlsRedis,
  type Certs,
  type TlsRabbit,
  type TlsRedis,
} from './helpers/tls-brokers.js'

const TASKS = resolve(ROOT, 'test/fixtures/tasks/tls-tasks.js')

/** What this file needs beyond Node; in CI a missing one fails the file, elsewhere it is skipped saying why. */
function missingTool(): string | false {
  const has = (cmd: string, args: string[]) => {
    try {
      execFileSync(cmd, args, { stdio: 'ignore', timeout: 30_000 })
      return true
    } catch {
      return false
    }
  }
  if (!has('openssl', ['version'])) return 'openssl is not installed'
  if (!has('redis-server', ['--version'])) return 'redis-server is not installed'
  if (!existsSync(RABBITMQ_SERVER)) return `RabbitMQ is not installed (${RABBITMQ_SERVER})`
  if (!has(PYTHON, ['-c', 'import celery, redis']))
    return 'Python Celery with redis-py is not installed (apt-get install python3-celery python3-redis)'
  return false
}

const missing = missingTool()
if (missing && process.env.CI) throw new Error(`CI requires the TLS test's tools: ${missing}`)
if (missing) process.stderr.write(`SKIP: ${missing}\n`)

const REDIS_PASSWORD = `Rtls-s3cret-${process.pid}`
const AMQP_PASSWORD = `Atls-s3cret-${process.pid}`
/** Broker and backend variables of the caller's shell must not steer these runs. */
const CLEAN_ENV: NodeJS.ProcessEnv = {
  TSQ_BROKER_URL: '',
  CELERY_BROKER_URL: '',
  TSQ_RESULT_BACKEND: '',
  CELERY_RESULT_BACKEND: '',
  TSQ_CONFIG_MODULE: '',
}
const SECRETS = [REDIS_PASSWORD, AMQP_PASSWORD, 'tok-should-not-print']

/** No output of any run may hold a password, the app's token or a private key. */
function assertNoSecrets(text: string, what: string): void {
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `${what} printed a secret (${secret.slice(0, 4)}…):\n${text}`)
  assert.ok(!text.includes('PRIVATE KEY'), `${what} printed key material:\n${text}`)
}

/** A refused connection: exit 69, one line on stderr naming the masked broker and the reason. */
function assertRefused(r: CliResult, broker: RegExp, reason: RegExp): void {
  assertNoSecrets(r.stdout + r.stderr, 'a refused command')
  assert.equal(r.code, 69, `exit code 69 expected:\n${r.stderr}`)
  const lines = r.stderr.trim().split('\n')
  assert.equal(lines.length, 1, `one line expected:\n${r.stderr}`)
  assert.match(lines[0]!, broker)
  assert.match(lines[0]!, reason)
}

function query(params: Record<string, string>): string {
  return Object.entries(params)
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .join('&')
}

describe('TLS with a private CA and client certificates (issue 29)', { skip: missing || false, timeout: 600_000 }, () => {
  let dir: string
  let certs: Certs
  let redis: TlsRedis | undefined
  let rabbit: TlsRabbit | undefined
  const procs: GroupProcess[] = []
  let redisUrl: (db: number, params?: Record<string, string>) => string

  const stopAll = async () => {
    await Promise.all(procs.splice(0).map((p) => p.stopWith(() => process.kill(p.pid, 'SIGTERM'), 15_000)))
  }

  const pyWorker = (env: NodeJS.ProcessEnv, node: string, queue: string) =>
    startLogged(
      PYTHON,
      [
        '-m',
        'celery',
        '-A',
        'tls_app',
        'worker',
        '-P',
        'solo',
        '-n',
        node,
        '-Q',
        queue,
        '-l',
        'INFO',
        '--without-mingle',
        '--without-gossip',
      ],
      {
        cwd: PY_DIR,
        env: { ...process.env, ...CLEAN_ENV, PYTHONPATH: PY_DIR, PYTHONDONTWRITEBYTECODE: '1', ...env },
        readyText: `${node} ready.`,
      },
    )

  const tsqWorker = (
    env: NodeJS.ProcessEnv,
    node: string,
    queue: string,
    extra: string[] = [],
    readyText: string | undefined = `${node} ready.`,
  ) =>
    startLogged(process.execPath, [BIN, 'worker', '-A', TASKS, '-P', 'solo', '-n', node, '-Q', queue, '-l', 'INFO', ...extra], {
      cwd: ROOT,
      env: { ...process.env, ...CLEAN_ENV, ...env },
      readyText,
    })

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tsq-tls-'))
    certs = await makeCerts(dir)
    // The RabbitMQ node boots while the Redis half runs.
    rabbit = await startTlsRabbit(certs, AMQP_PASSWORD)
    redis = await startTlsRedis(certs, REDIS_PASSWORD)
    const port = redis.port
    redisUrl = (
      db,
      params = { ssl_cert_reqs: 'required', ssl_ca_certs: certs.ca, ssl_certfile: certs.clientCert, ssl_keyfile: certs.clientKey },
    ) => `rediss://:${REDIS_PASSWORD}@127.0.0.1:${port}/${db}?${query(params)}`
  })

  after(async () => {
    await stopAll()
    await redis?.stop()
    await rabbit?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  describe('Redis: rediss:// URL parameters, as redis-py reads them', () => {
    const q = `tls-redis-${process.pid}`
    let env: NodeJS.ProcessEnv

    before(async () => {
      env = { TSQ_TLS_BROKER: redisUrl(0), TSQ_TLS_BACKEND: redisUrl(1), TSQ_TLS_QUEUE: q, TSQ_TLS_BROKER_USE_SSL: '' }
      procs.push(
        ...(await Promise.all([
          tsqWorker(env, `tsq-r-${process.pid}@tls`, `${q}-tsq`),
          pyWorker(env, `py-r-${process.pid}@tls`, `${q}-py`),
        ])),
      )
    })
    after(stopAll)

    it('inspect ping reaches the tsq and the Python worker over mutual TLS', async () => {
      const r = await runTsq(['inspect', 'ping', '-j', '-b', redisUrl(0)], { env: CLEAN_ENV, timeoutMs: 60_000 })
      assertNoSecrets(r.stdout + r.stderr, 'inspect ping')
      assert.equal(r.code, 0, r.stderr)
      const replies = JSON.parse(r.stdout) as Record<string, unknown>
      assert.deepEqual(Object.keys(replies).sort(), [`py-r-${process.pid}@tls`, `tsq-r-${process.pid}@tls`])
    })

    it('NODE_EXTRA_CA_CERTS is trusted as Node trusts it, also when the `tsq` launcher keeps it from Node for inspect ping', async () => {
      // No ssl_ca_certs: the private CA comes from NODE_EXTRA_CA_CERTS only.
      const url = redisUrl(0, { ssl_cert_reqs: 'required', ssl_certfile: certs.clientCert, ssl_keyfile: certs.clientKey })
      const nodes = [`py-r-${process.pid}@tls`, `tsq-r-${process.pid}@tls`]
      const args = ['inspect', 'ping', '-j', '-b', url]
      // Run as a shell runs it (bin/run.js's sh lines defer the file; test/e2e/cli-launcher.test.ts), then through node.
      for (const [how, r] of [
        ['launcher', await runTsq(args, { asExecutable: true, env: { ...CLEAN_ENV, NODE_EXTRA_CA_CERTS: certs.ca }, timeoutMs: 60_000 })],
        ['node bin/run.js', await runTsq(args, { env: { ...CLEAN_ENV, NODE_EXTRA_CA_CERTS: certs.ca }, timeoutMs: 60_000 })],
      ] as const) {
        assertNoSecrets(r.stdout + r.stderr, how)
        assert.equal(r.code, 0, `${how}: ${r.stderr}`)
        assert.deepEqual(Object.keys(JSON.parse(r.stdout) as object).sort(), nodes, how)
      }
      // Without it the server cannot be verified: the CA above came from the variable.
      assertRefused(
        await runTsq(args, { asExecutable: true, env: { ...CLEAN_ENV, NODE_EXTRA_CA_CERTS: '' }, timeoutMs: 60_000 }),
        new RegExp(`cannot connect to rediss://:\\*\\*@127\\.0\\.0\\.1:${redis!.port}/0`),
        /not signed by a trusted CA/,
      )
    })

    it('call and result: a task on each worker, its result read back over TLS', async () => {
      for (const [queue, task, args, expected] of [
        [`${q}-tsq`, 'tls.add', '[2, 3]', '5'],
        [`${q}-py`, 'tls.who', '[]', 'python'],
      ] as const) {
        const sent = await runTsq(['call', task, '-a', args, '-Q', queue, '-b', redisUrl(0)], { env: CLEAN_ENV, timeoutMs: 60_000 })
        assertNoSecrets(sent.stdout + sent.stderr, 'call')
        assert.equal(sent.code, 0, sent.stderr)
        const id = sent.stdout.trim()
        const got = await runTsq(['result', id, '-t', '60', '--result-backend', redisUrl(1)], { env: CLEAN_ENV, timeoutMs: 90_000 })
        assertNoSecrets(got.stdout + got.stderr, 'result')
        assert.equal(got.code, 0, got.stderr)
        assert.equal(got.stdout.trim(), expected, `${task} on ${queue}`)
      }
    })

    it('inspect conf shows the URLs and settings masked as Celery masks them', async () => {
      const r = await runTsq(['inspect', 'conf', '-j', '-d', `tsq-r-${process.pid}@tls`, '-b', redisUrl(0)], {
        env: CLEAN_ENV,
        timeoutMs: 60_000,
      })
      assertNoSecrets(r.stdout + r.stderr, 'inspect conf')
      assert.equal(r.code, 0, r.stderr)
      const conf = (JSON.parse(r.stdout) as Record<string, Record<string, unknown>>)[`tsq-r-${process.pid}@tls`]!
      assert.match(String(conf.broker_url), /^rediss:\/\/:\*{8}@127\.0\.0\.1:/)
      assert.match(String(conf.result_backend), /^rediss:\/\/:\*{8}@127\.0\.0\.1:/)
      assert.equal(conf.tls_test_api_token, '********')
    })

    it('refused with one line: no client certificate, one from another CA, an unverifiable server, and on the result backend', async () => {
      const masked = new RegExp(`cannot connect to rediss://:\\*\\*@127\\.0\\.0\\.1:${redis!.port}/0`)
      assertRefused(
        await runTsq(['inspect', 'ping', '-b', redisUrl(0, { ssl_ca_certs: certs.ca })], { env: CLEAN_ENV, timeoutMs: 60_000 }),
        masked,
        /requires a client certificate/,
      )
      assertRefused(
        await runTsq(
          ['inspect', 'ping', '-b', redisUrl(0, { ssl_ca_certs: certs.ca, ssl_certfile: certs.otherCert, ssl_keyfile: certs.otherKey })],
          { env: CLEAN_ENV, timeoutMs: 60_000 },
        ),
        masked,
        /refused our client certificate \(unknown CA\)/,
      )
      assertRefused(
        await runTsq(['inspect', 'ping', '-b', redisUrl(0, { ssl_certfile: certs.clientCert, ssl_keyfile: certs.clientKey })], {
          env: CLEAN_ENV,
          timeoutMs: 60_000,
        }),
        masked,
        /not signed by a trusted CA/,
      )
      const backend = await runTsq(
        ['result', '00000000-0000-0000-0000-000000000000', '-t', '5', '--result-backend', redisUrl(1, { ssl_ca_certs: certs.ca })],
        { env: CLEAN_ENV, timeoutMs: 60_000 },
      )
      assertRefused(backend, new RegExp(`rediss://:\\*\\*@127\\.0\\.0\\.1:${redis!.port}/1`), /requires a client certificate/)
      const json = await runTsq(['inspect', 'ping', '-j', '-b', redisUrl(0, { ssl_ca_certs: certs.ca })], {
        env: CLEAN_ENV,
        timeoutMs: 60_000,
      })
      assertNoSecrets(json.stdout + json.stderr, 'a refused --json run')
      assert.equal(json.code, 69)
      assert.match((JSON.parse(json.stdout) as { error: { message: string } }).error.message, /requires a client certificate/)
    })

    it('a worker that is refused retries with the reason, and its banner says cert_reqs=none turned verification off', async () => {
      const node = `tsq-refused-${process.pid}@tls`
      const refusedEnv = { ...env, TSQ_TLS_BROKER: redisUrl(0, { ssl_cert_reqs: 'none' }) }
      const w = await tsqWorker(refusedEnv, node, `${q}-refused`, [], 'Trying again in 2.00 seconds... (1/100)')
      procs.push(w)
      assert.match(
        w.log,
        /\.> transport: +rediss:\/\/:\*\*@127\.0\.0\.1:\d+\/0\?ssl_cert_reqs=none \(TLS, certificate verification OFF \(cert_reqs=none\)\)/,
      )
      assert.match(
        w.log,
        /consumer: cannot connect to rediss:\/\/:\*\*@.*: the server requires a client certificate \(no client certificate sent\)\. Trying again/,
      )
      process.kill(w.pid, 'SIGTERM')
      assert.equal(await w.exited, 0, w.logTail())
      assertNoSecrets(w.log, 'the refused worker')
    })
  })

  describe('RabbitMQ: broker_use_ssl (as Celery documents it) and amqps:// URL parameters', () => {
    const q = `tls-amqp-${process.pid}`
    let env: NodeJS.ProcessEnv
    let amqps: (params: Record<string, string>, user?: string) => string

    before(async () => {
      // The node's default user is the client certificate's CN, so EXTERNAL logs in as it with no password.
      await rabbit!.ready
      const port = rabbit!.tlsPort
      amqps = (params, user = `tsq-tls:${AMQP_PASSWORD}@`) => `amqps://${user}127.0.0.1:${port}//?${query(params)}`
      env = {
        TSQ_TLS_BROKER: `amqp://tsq-tls:${AMQP_PASSWORD}@127.0.0.1:${port}//`,
        TSQ_TLS_BROKER_USE_SSL: JSON.stringify({
          ca_certs: certs.ca,
          certfile: certs.clientCert,
          keyfile: certs.clientKey,
          cert_reqs: 'required',
        }),
        TSQ_TLS_BACKEND: redisUrl(2),
        TSQ_TLS_QUEUE: q,
      }
      procs.push(
        ...(await Promise.all([
          tsqWorker(env, `tsq-a-${process.pid}@tls`, `${q}-tsq`),
          pyWorker(env, `py-a-${process.pid}@tls`, `${q}-py`),
        ])),
      )
    })
    after(stopAll)

    const full = () => ({ ssl_ca_certs: certs.ca, ssl_certfile: certs.clientCert, ssl_keyfile: certs.clientKey })

    it('inspect ping with -A (broker_use_ssl from the app) and with amqps:// parameters, and EXTERNAL login by certificate', async () => {
      const nodes = [`py-a-${process.pid}@tls`, `tsq-a-${process.pid}@tls`]
      for (const args of [
        ['-A', TASKS, 'inspect', 'ping', '-j'],
        ['inspect', 'ping', '-j', '-b', amqps(full())],
        ['inspect', 'ping', '-j', '-b', amqps({ ...full(), login_method: 'EXTERNAL' }, '')],
      ]) {
        const r = await runTsq(args, { env: { ...CLEAN_ENV, ...env }, timeoutMs: 60_000 })
        assertNoSecrets(r.stdout + r.stderr, `tsq ${args.join(' ')}`)
        assert.equal(r.code, 0, r.stderr)
        assert.deepEqual(Object.keys(JSON.parse(r.stdout) as object).sort(), nodes, args.join(' '))
      }
    })

    it('call and result: a task on each worker over mutual TLS', async () => {
      for (const [queue, expected] of [
        [`${q}-py`, 'python'],
        [`${q}-tsq`, 'tsq'],
      ] as const) {
        const sent = await runTsq(['call', 'tls.who', '-Q', queue, '-b', amqps(full())], { env: CLEAN_ENV, timeoutMs: 60_000 })
        assertNoSecrets(sent.stdout + sent.stderr, 'call')
        assert.equal(sent.code, 0, sent.stderr)
        const got = await runTsq(['result', sent.stdout.trim(), '-t', '60', '--result-backend', redisUrl(2)], {
          env: CLEAN_ENV,
          timeoutMs: 90_000,
        })
        assert.equal(got.code, 0, got.stderr)
        assert.equal(got.stdout.trim(), expected)
      }
    })

    it('refused with one line: no client certificate, one from another CA', async () => {
      const masked = new RegExp(`cannot connect to amqps://tsq-tls:\\*\\*@127\\.0\\.0\\.1:${rabbit!.tlsPort}//`)
      assertRefused(
        await runTsq(['inspect', 'ping', '-b', amqps({ ssl_ca_certs: certs.ca })], { env: CLEAN_ENV, timeoutMs: 60_000 }),
        masked,
        /requires a client certificate/,
      )
      assertRefused(
        await runTsq(
          ['call', 'tls.who', '-b', amqps({ ssl_ca_certs: certs.ca, ssl_certfile: certs.otherCert, ssl_keyfile: certs.otherKey })],
          { env: CLEAN_ENV, timeoutMs: 60_000 },
        ),
        masked,
        /refused our client certificate \(unknown CA\)/,
      )
    })
  })
})
