// Secrets stay secret and values from messages cannot forge log lines, probed
// as an operator and an attacker would: a prefork worker on a password-protected
// Redis of the test's own, its broker and backend given through TSQ_* variables
// and its conf holding URL-valued custom settings. `tsq inspect conf` and Python
// Celery's `celery inspect conf` see every password masked; a pool process's
// /proc environ and cmdline hold none, nor does `env` run by a task; DEBUG=ioredis:*
// prints AUTH without its argument; `tsq report` and a start-up error mask theirs;
// a task id with a newline and a name with an ESC give one escaped log line each,
// and escaped `tsq events --dump` lines.
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createApp, type App } from '../../src/index.js'
import { brokerSkipReason, waitFor } from '../helpers/brokers.js'
import { BIN, ROOT, runTsq, startWorker, type SpawnedWorker } from '../helpers/cli.js'
import type { GroupProcess } from '../helpers/process-group.js'
import { hasRedisServer, startRedisServer } from '../helpers/redis-server.js'
import { freePort } from './helpers/tls-brokers.js'
import { PYTHON } from './helpers/python-worker.js'

const skip = (await brokerSkipReason('redis')) || (hasRedisServer ? false : 'redis-server not installed')
const FIXTURE = join(ROOT, 'test/fixtures/tasks/secrets-tasks.js')

describe('secrets masked and log lines unforgeable (prefork worker, password-protected Redis)', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsq-secrets-'))
  const tag = `${process.pid}${Date.now().toString(36)}`
  const PW = `brokerPw${tag}`
  const DSN_PW = `dsnPw${tag}`
  const LIST_PW = `listPw${tag}`
  const QUERY_PW = `queryPw${tag}`
  const RBT_PW = `rbtPw${tag}`
  const SECRETS = [PW, DSN_PW, LIST_PW, QUERY_PW, RBT_PW]
  const nodename = `secrets-${process.pid}@${hostname()}`
  let port: number
  let broker: string
  let backend: string
  let server: GroupProcess | undefined
  let worker: SpawnedWorker | undefined
  let app: App
  let env: NodeJS.ProcessEnv

  const leaked = (text: string): string[] => SECRETS.filter((s) => text.includes(s))
  const withLog = (msg: string) => `${msg}\n--- worker ---\n${worker?.output().slice(-6000) ?? ''}`

  before(async () => {
    port = await freePort()
    server = await startRedisServer(port, dir, ['--requirepass', PW])
    broker = `redis://:${PW}@127.0.0.1:${port}/0`
    backend = `redis://:${PW}@127.0.0.1:${port}/1`
    const confFile = join(dir, 'conf.json')
    writeFileSync(
      confFile,
      JSON.stringify({
        lock_url: `redis://:${PW}@127.0.0.1:${port}/2`,
        my_dsn: `postgresql://bob:${DSN_PW}@127.0.0.1/db`,
        my_urls: [`redis://:${LIST_PW}@127.0.0.1/0`, `amqp://u:${LIST_PW}@h//`],
        my_query_url: `redis://127.0.0.1/0?password=${QUERY_PW}`,
      }),
    )
    env = {
      TSQ_BROKER_URL: broker,
      TSQ_RESULT_BACKEND: backend,
      CELERY_BROKER_URL: '',
      CELERY_RESULT_BACKEND: '',
      TSQ_SECRETS_CONF: confFile,
    }
    worker = await startWorker(['-A', FIXTURE, '-P', 'prefork', '-c', '1', '-l', 'INFO', '-E', '--without-gossip', '--without-mingle'], {
      env: { ...env, DEBUG: 'ioredis:*' },
      nodename,
    })
    app = createApp({ name: 'proj', broker, resultBackend: backend })
  })

  after(async () => {
    await app?.close()
    await worker?.stop()
    await server?.stopWith(() => process.kill(server!.pid, 'SIGTERM'), 5_000)
    rmSync(dir, { recursive: true, force: true })
  })

  it("a pool process's environment and command line hold no password, and a subprocess a task starts sees none", async () => {
    const children = execFileSync('pgrep', ['-P', String(worker!.child.pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean)
    assert.ok(children.length >= 1, withLog('no pool process'))
    for (const pid of children) {
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8')
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      assert.deepEqual(leaked(environ + cmdline), [], `pool process ${pid}`)
      assert.ok(!/TSQ_BROKER_URL|TSQ_RESULT_BACKEND|TSQ_SLOT_DATA/.test(environ), `pool process ${pid} environ names a secret variable`)
    }
    const seen = (await (await app.sendTask('proj.env')).get({ timeout: 30 })) as string
    assert.match(seen, /TSQ_POOL_INDEX=/, 'the task ran in a prefork pool process')
    assert.deepEqual(leaked(seen), [], seen)
    assert.ok(!/TSQ_BROKER_URL|TSQ_RESULT_BACKEND/.test(seen), seen)
  })

  it("a subprocess started by a task of the threads pool sees no TSQ_* secret either (the worker's own environment is cleared)", async () => {
    // A broker database of its own, so the prefork worker cannot take the task.
    const threadsBroker = `redis://:${PW}@127.0.0.1:${port}/5`
    const threadsBackend = `redis://:${PW}@127.0.0.1:${port}/6`
    const threads = await startWorker(['-A', FIXTURE, '-P', 'threads', '-c', '1', '-l', 'INFO', '--without-gossip', '--without-mingle'], {
      env: { ...env, TSQ_BROKER_URL: threadsBroker, TSQ_RESULT_BACKEND: threadsBackend },
      nodename: `threads-${nodename}`,
    })
    const client = createApp({ name: 'proj', broker: threadsBroker, resultBackend: threadsBackend })
    try {
      const seen = (await (await client.sendTask('proj.env')).get({ timeout: 30 })) as string
      assert.match(seen, /TSQ_SECRETS_CONF=/, seen)
      assert.deepEqual(leaked(seen), [], seen)
      assert.ok(!/TSQ_BROKER_URL|TSQ_RESULT_BACKEND/.test(seen), seen)
    } finally {
      await client.close()
      await threads.stop()
    }
  })

  it('tsq inspect conf masks the broker, the backend and every URL-valued setting', async () => {
    const r = await runTsq(['inspect', 'conf', '-d', nodename, '--json', '-t', '10'], { env })
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(leaked(r.stdout + r.stderr), [], r.stdout)
    const conf = (JSON.parse(r.stdout) as Record<string, Record<string, unknown>>)[nodename]!
    assert.equal(conf.broker_url, `redis://:********@127.0.0.1:${port}/0`)
    assert.equal(conf.result_backend, `redis://:********@127.0.0.1:${port}/1`)
    assert.equal(conf.lock_url, `redis://:********@127.0.0.1:${port}/2`)
    assert.equal(conf.my_dsn, 'postgresql://bob:********@127.0.0.1/db')
    assert.deepEqual(conf.my_urls, ['redis://:********@127.0.0.1/0', 'amqp://u:********@h//'])
    assert.equal(conf.my_query_url, 'redis://127.0.0.1/0?password=********')
  })

  it("Python Celery's `celery inspect conf` gets the same masked conf from the tsq worker", async () => {
    const out = execFileSync(PYTHON, ['-m', 'celery', '-b', broker, 'inspect', 'conf', '-d', nodename, '--json', '-t', '10'], {
      encoding: 'utf8',
      cwd: dir,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
    })
    assert.deepEqual(leaked(out), [], out)
    const conf = (JSON.parse(out) as Record<string, Record<string, unknown>>)[nodename]!
    assert.equal(conf.broker_url, `redis://:********@127.0.0.1:${port}/0`)
    assert.equal(conf.lock_url, `redis://:********@127.0.0.1:${port}/2`)
    assert.equal(conf.my_query_url, 'redis://127.0.0.1/0?password=********')
  })

  it("DEBUG=ioredis:* shows the worker's AUTH without its argument", () => {
    assert.match(worker!.output(), /-> auth\(\[\*\*\]\)/, withLog('no AUTH line: DEBUG output missing'))
    assert.deepEqual(leaked(worker!.output()), [], withLog('a secret in the worker output'))
  })

  it('tsq report masks the broker URL (?password= too) and the settings', async () => {
    const r = await runTsq(['report', '-A', FIXTURE], { env: { ...env, TSQ_BROKER_URL: `${broker}?password=${QUERY_PW}` } })
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(leaked(r.stdout + r.stderr), [], r.stdout)
    assert.match(r.stdout, new RegExp(`broker_url: "redis://:\\*{8}@127\\.0\\.0\\.1:${port}/0\\?password=\\*{8}"`), r.stdout)
  })

  it('a start-up error about result_backend_transport_options.password shows it masked', async () => {
    const confFile = join(dir, 'bad-conf.json')
    writeFileSync(confFile, JSON.stringify({ result_backend_transport_options: { password: RBT_PW, master_name: 'mymaster' } }))
    const r = await runTsq(['worker', '-A', FIXTURE, '-n', `bad-${nodename}`, '-P', 'solo'], {
      env: { ...env, TSQ_SECRETS_CONF: confFile },
      timeoutMs: 30_000,
    })
    assert.notEqual(r.code, 0, r.stdout + r.stderr)
    assert.match(r.stderr, /result_backend_transport_options\.password = \*{8}:/, r.stderr)
    assert.deepEqual(leaked(r.stdout + r.stderr), [], r.stderr)
  })

  it('a task id with a newline and a name with an ESC give one escaped log line each, and escaped events --dump lines', async () => {
    const dump = spawn(process.execPath, [BIN, 'events', '--dump'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let dumped = ''
    dump.stdout.on('data', (d) => (dumped += d))
    dump.stderr.on('data', (d) => (dumped += d))
    try {
      // The first event from the worker (a heartbeat, every 2 s) says the dump is subscribed.
      await waitFor(() => dumped.includes(nodename), { timeoutMs: 20_000, what: 'events --dump to show the worker' })
      const id = `lf-${tag}\n[2026-01-01 00:00:00,000: WARNING/MainProcess] forged`
      const r = await app.sendTask('proj.red\x1b[31m', [], {}, { id })
      assert.equal(await r.get({ timeout: 30 }), 'red', withLog(''))
      await waitFor(() => worker!.output().includes(`lf-${tag}\\n`) && worker!.output().includes('succeeded in'), {
        timeoutMs: 20_000,
        what: 'the log lines',
      })
      const log = worker!.output()
      assert.deepEqual(
        log.split('\n').filter((line) => line.includes('\x1b')),
        [],
        'a raw ESC in the worker log',
      )
      assert.ok(!log.split('\n').some((line) => line.startsWith('[2026-01-01 00:00:00,000')), withLog('a forged line'))
      assert.match(
        log,
        new RegExp(`Task proj\\.red\\\\x1b\\[31m\\[lf-${tag}\\\\n\\[2026-01-01 00:00:00,000: WARNING/MainProcess\\] forged\\] received`),
        withLog(''),
      )
      await waitFor(() => dumped.includes('task succeeded') && dumped.includes(`lf-${tag}`), {
        timeoutMs: 20_000,
        what: 'the task events in the dump',
      })
      assert.ok(!dumped.includes('\x1b'), `a raw ESC in events --dump:\n${dumped}`)
      assert.ok(
        !dumped.split('\n').some((line) => line.startsWith('[2026-01-01 00:00:00,000')),
        `a forged line in events --dump:\n${dumped}`,
      )
      assert.match(dumped, new RegExp(`proj\\.red\\\\x1b\\[31m\\(lf-${tag}\\\\n\\[2026-01-01`), dumped)
      assert.deepEqual(leaked(dumped), [], dumped)
    } finally {
      dump.kill('SIGTERM')
    }
  })
})
