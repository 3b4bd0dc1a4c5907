// The CLI as scripts see it: exit codes, one-line errors, single JSON
// documents, no colour off a terminal, no prompt without a terminal.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { spawn } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { embeddedBrokerEnv, ROOT, runOnBothPaths, runTsq, startWorker, tempTsqHome, type SpawnedWorker } from '../helpers/cli.js'

// eslint-disable-next-line no-control-regex -- matches the terminal escape (ESC) it strips
const ANSI = /\u001b\[/

describe('tsq CLI contract (embedded broker)', () => {
  const home = tempTsqHome()
  const env = embeddedBrokerEnv(home)
  let worker: SpawnedWorker
  const node = `e2e-${process.pid}@testhost`

  before(async () => {
    worker = await startWorker(['-A', 'examples/tasks.js', '-c', '2', '-l', 'INFO', '--without-heartbeat'], { env, nodename: node })
  })
  after(async () => {
    await worker?.stop()
  })

  it('--version answers without a broker', async () => {
    const r = await runTsq(['--version'])
    assert.equal(r.code, 0)
    assert.match(r.stdout, /^tsq\/\d+\.\d+\.\d+ /)
  })

  it('--help lists the commands, and each command has --help', async () => {
    const r = await runTsq(['--help'])
    assert.equal(r.code, 0)
    for (const cmd of ['inspect', 'control', 'status', 'call', 'result', 'purge', 'worker'])
      assert.match(r.stdout, new RegExp(`\\b${cmd}\\b`))
    const i = await runTsq(['inspect', '--help'])
    assert.equal(i.code, 0)
    assert.match(i.stdout, /--destination/)
  })

  it('[status] lists the worker; --json is one JSON document with {node: reply}', async () => {
    const r = await runTsq(['status', '--json'], { env })
    assert.equal(r.code, 0, r.stderr)
    const lines = r.stdout.trim().split('\n')
    assert.equal(lines.length, 1)
    assert.deepEqual(JSON.parse(lines[0]!)[node], { ok: 'pong' })
    assert.match(r.stderr, /node(s)? online/)
  })

  it('human output is Celery-shaped and has no colour off a terminal', async () => {
    const r = await runTsq(['inspect', 'ping', '-d', node], { env })
    assert.equal(r.code, 0, r.stderr)
    assert.ok(r.stdout.includes(`->  ${node}: OK`), r.stdout)
    assert.match(r.stdout, /^ {8}pong$/m)
    assert.match(r.stdout, /1 node online\./)
    assert.doesNotMatch(r.stdout, ANSI)
  })

  it('[-d] with one destination returns as soon as it answers, long timeout or not', async () => {
    const r = await runTsq(['inspect', 'ping', '-d', node, '-t', '30', '-j'], { env, timeoutMs: 15_000 })
    assert.equal(r.code, 0)
    assert.deepEqual(JSON.parse(r.stdout), { [node]: { ok: 'pong' } })
  })

  it('[call/result] runs a task and prints its result; a failure exits 1 with type and message', async () => {
    const call = await runTsq(['call', 'proj.add', '--args', '[2, 3]'], { env })
    assert.equal(call.code, 0, call.stderr)
    const id = call.stdout.trim()
    assert.match(id, /^[0-9a-f-]{36}$/)
    const result = await runTsq(['result', id, '-t', '20'], { env })
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stdout.trim(), '5')

    const failId = (await runTsq(['call', 'proj.fail', '--args', '["boom"]'], { env })).stdout.trim()
    const failed = await runTsq(['result', failId, '-t', '20'], { env })
    assert.equal(failed.code, 1)
    assert.equal(failed.stderr.trim(), 'Error: TypeError: boom')
    const asJson = await runTsq(['result', failId, '--json'], { env })
    assert.equal(asJson.code, 1)
    const meta = JSON.parse(asJson.stdout)
    assert.equal(meta.status, 'FAILURE')
    assert.deepEqual(meta.result, { exc_type: 'TypeError', exc_message: ['boom'], exc_module: 'builtins' })
  })

  it('an unknown task is reported as Celery reports it (NotRegistered)', async () => {
    const id = (await runTsq(['call', 'proj.nosuchtask'], { env })).stdout.trim()
    const r = await runTsq(['result', id, '-t', '20', '--json'], { env })
    assert.equal(r.code, 1)
    assert.deepEqual(JSON.parse(r.stdout).result, {
      exc_type: 'NotRegistered',
      exc_message: ['proj.nosuchtask'],
      exc_module: 'celery.exceptions',
    })
  })

  it('[custom command] app.controlCommand answers like a built-in', async () => {
    const r = await runTsq(['inspect', 'proj.hello', 'name=bob', '-d', node, '--json'], { env })
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), { [node]: { ok: `hello bob from ${node}` } })
  })

  it('an unknown method exits 64 and lists the valid ones', async () => {
    const r = await runTsq(['inspect', 'nosuchmethod', '-d', node], { env })
    assert.equal(r.code, 64)
    assert.match(r.stderr, /unknown method "nosuchmethod"; valid inspect methods: .*active_queues/)
    assert.equal(r.stderr.trim().split('\n').length, 1)
  })

  it('a control command used with inspect is a usage error', async () => {
    const r = await runTsq(['inspect', 'shutdown'], { env })
    assert.equal(r.code, 64)
  })

  it('[control] --json prints the raw list of replies', async () => {
    const r = await runTsq(['control', 'rate_limit', 'proj.add', '10/m', '-d', node, '--json'], { env })
    assert.equal(r.code, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), [{ [node]: { ok: 'new rate limit set successfully' } }])
  })

  it('no replies within the timeout exits 69, as Celery', async () => {
    const r = await runTsq(['inspect', 'ping', '-d', 'nobody@nowhere', '-t', '0.3'], { env })
    assert.equal(r.code, 69)
    assert.equal(
      r.stderr.trim(),
      `Error: No nodes replied within time constraint (asked file://${home}/broker, the embedded default: no -b, -A, --config or broker URL variable named one)`,
    )
    const j = await runTsq(['inspect', 'ping', '-d', 'nobody@nowhere', '-t', '0.3', '--json'], { env })
    assert.equal(j.code, 69)
    assert.equal(JSON.parse(j.stdout).error.code, 'NO_REPLIES')
  })

  it('malformed --args is a one-line usage error (64)', async () => {
    const r = await runTsq(['call', 'proj.add', '--args', '[2,'], { env })
    assert.equal(r.code, 64)
    assert.match(r.stderr, /^Error: Invalid value for '-a' \/ '--args': '\[2,' is not valid JSON: /)
    assert.equal(r.stderr.trim().split('\n').length, 1)
  })

  it('a .ts task module that Node loads as CommonJS is one line and exit 64, saying why', async () => {
    const dir = tempTsqHome()
    writeFileSync(join(dir, 'package.json'), '{ "type": "commonjs" }\n')
    writeFileSync(
      join(dir, 'tasks.ts'),
      `import { createApp } from ${JSON.stringify(join(ROOT, 'dist/index.js'))}\nexport const app = createApp({ name: 'p' })\n`,
    )
    const r = await runTsq(['worker', '-A', join(dir, 'tasks.ts'), '-P', 'solo'], { env })
    assert.equal(r.code, 64, r.stderr)
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
    assert.match(
      r.stderr,
      /^Error: cannot load .*tasks\.ts: .*\(a \.ts file outside a package with "type": "module" loads as CommonJS; task modules are ES modules: add "type": "module" to package\.json, or name the file \.mts\)$/m,
    )
  })

  it('an unknown flag and a bad --timeout are usage errors (64)', async () => {
    assert.equal((await runTsq(['status', '--nosuchflag'], { env })).code, 64)
    assert.equal((await runTsq(['status', '-t', 'soon'], { env })).code, 64)
  })

  it('a bad broker URL exits 64 with a hint', async () => {
    const r = await runTsq(['status', '-b', 'amqq://127.0.0.1//'], { env })
    assert.equal(r.code, 64)
    assert.match(r.stderr, /no such transport: amqq.*Did you mean amqp/)
  })

  it('an unreachable broker exits 69 in one line, password masked', async () => {
    const r = await runTsq(['status', '-b', 'amqp://guest:s3cret@127.0.0.1:1//'], { env, timeoutMs: 30_000 })
    assert.equal(r.code, 69)
    assert.doesNotMatch(r.stderr + r.stdout, /s3cret/)
    assert.match(r.stderr, /cannot connect to amqp:\/\/guest:\*\*@127\.0\.0\.1:1\/\//)
    assert.equal(r.stderr.trim().split('\n').length, 1)
    const redis = await runTsq(['status', '-b', 'redis://:s3cret@127.0.0.1:1/0'], { env, timeoutMs: 30_000 })
    assert.equal(redis.code, 69)
    assert.doesNotMatch(redis.stderr + redis.stdout, /s3cret/)
  })

  it('[fast path] inspect, control and status print exactly what the oclif path prints', async () => {
    // bin/run.js answers these without oclif (src/cli/fast-path.ts) when it can
    // parse the command line (whatever switches the run's environment sets); TSQ_NO_FAST_PATH=1 forces oclif for comparison.
    const lines: string[][] = [
      ['inspect', 'ping', '-d', node],
      ['inspect', 'ping', `--destination=${node}`, '--json'],
      ['inspect', 'registered', '-d', node, '-t', '5'],
      ['inspect', 'active_queues', '-d', node, '--no-color'],
      ['status', '-j', '--timeout', '2'],
      ['status', '-q'],
      ['control', 'rate_limit', 'proj.add', '10/m', '-d', node],
      ['control', 'revoke', 'no-such-id', '--terminate', '--signal', 'kill', '-d', node, '--json'],
      ['inspect', 'nosuchmethod', '-d', node],
      ['inspect', 'pnig', '-d', node],
      ['control', 'revok', 'x'],
      ['inspect', 'ping', '-d', 'nobody@nowhere', '-t', '0.3'],
      ['inspect', 'shutdown'],
      ['status', '-t', 'soon'],
      ['status', '--matcher', 'pcre'],
      ['inspect', 'ping', '--pattern', 'nobody*', '-t', '0.3', '--json'],
      ['inspect', 'ping', '--limit', '0'],
      ['control', 'rate_limit', 'proj.add', '10/m', '--terminate'],
      ['control', 'revoke', 'x', '--signal', 'KILL'],
      ['status', '-b', 'amqq://127.0.0.1//'],
      ['status', 'extra'],
      ['inspect'],
    ]
    for (const line of lines) await runOnBothPaths(line, env)
  })

  it(
    '[purge] on a terminal asks first, and purges only after yes',
    { skip: !existsSync('/usr/bin/script') && 'util-linux script(1) is not installed: no pseudo-terminal to test the prompt' },
    async () => {
      const queue = `tsq-e2e-prompt-${process.pid}`
      await runTsq(['call', 'proj.add', '--args', '[1, 1]', '-Q', queue], { env })
      const answer = (key: string) =>
        new Promise<string>((resolve) => {
          const child = spawn('/usr/bin/script', ['-qfc', `node bin/run.js purge -Q ${queue}`, '/dev/null'], {
            cwd: ROOT,
            env: { ...process.env, ...env },
          })
          let out = ''
          let answered = false
          // Once: a second write after the command ended is an EPIPE.
          child.stdin.on('error', () => {})
          child.stdout.on('data', (d) => {
            out += d
            if (answered || !out.includes('Are you sure')) return
            answered = true
            child.stdin.write(key)
          })
          // eslint-disable-next-line no-control-regex -- matches the terminal escape (ESC) it strips
          child.on('exit', () => resolve(out.replace(/\u001b\[[0-9;?]*[a-zA-Z]/g, '')))
        })
      assert.match(await answer('n\r'), /There is no undo for this operation!/)
      const yes = await answer('y\r')
      assert.match(yes, /Purged 1 message from 1 queue\./)
    },
  )

  it('[purge] refuses without -f when stdin is not a terminal, and never prompts', async () => {
    const r = await runTsq(['purge'], { env })
    assert.equal(r.code, 64)
    assert.match(r.stderr, /stdin is not a terminal, pass -f/)
    const f = await runTsq(['purge', '-f', '-Q', 'tsq-e2e-empty', '--json'], { env })
    assert.equal(f.code, 0, f.stderr)
    assert.deepEqual(JSON.parse(f.stdout), { purged: 0, queues: { 'tsq-e2e-empty': 0 } })
  })
})
