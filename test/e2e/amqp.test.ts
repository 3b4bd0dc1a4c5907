// tsq-test: slow
// `tsq amqp` (issue 26 item 1) side by side with `python3 -m celery amqp`:
// on RabbitMQ the same calls print the same lines; where Celery's exits 0 on
// an error, tsq's prints one line and exits non-zero; on Redis tsq's
// basic.publish works where Celery's fails, and its bindings are kombu's; the
// repl keeps one connection (basic.get then basic.ack), from a script on stdin
// and in a terminal (a pty from script(1)) with Tab completion and history.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { AMQP_URL, REDIS_URL, brokerSkipReason, uniqueName, waitFor } from '../helpers/brokers.js'
import { BIN, ROOT, runTsq, tempTsqHome } from '../helpers/cli.js'
import { PYTHON, run } from '../interop/helpers/python-worker.js'

const NO_BROKER_ENV = { TSQ_BROKER_URL: '', CELERY_BROKER_URL: '', TSQ_RESULT_BACKEND: '', CELERY_RESULT_BACKEND: '' }
const home = tempTsqHome()
const amqpQueues: string[] = []
const amqpExchanges: string[] = []
const redisNames: string[] = []

function celeryAmqp(broker: string, words: string[]) {
  // From an empty folder, so no celeryconfig of the repo's is picked up.
  return run(PYTHON, ['-m', 'celery', '-b', broker, 'amqp', ...words], {
    cwd: home,
    env: { ...process.env, ...NO_BROKER_ENV },
    timeoutMs: 60_000,
  })
}

function tsqAmqp(broker: string, words: string[], input?: string) {
  return runTsq(['-b', broker, 'amqp', ...words], {
    env: { ...NO_BROKER_ENV, TSQ_HOME: home },
    timeoutMs: 60_000,
    ...(input !== undefined ? { input } : {}),
  })
}

after(async () => {
  const cleanup = [...amqpQueues.map((q) => ['queue.delete', q]), ...amqpExchanges.map((x) => ['exchange.delete', x, 'no'])]
  for (const words of cleanup) await tsqAmqp(AMQP_URL, words).catch(() => undefined)
  if (redisNames.length) {
    const redis = new Redis(REDIS_URL)
    for (const name of redisNames)
      await redis
        .del(name, ...[1, 2, 3, 4, 5, 6, 7, 8, 9].map((s) => `${name}\x06\x16${s}`), `_kombu.binding.${name}`)
        .catch(() => undefined)
    redis.disconnect()
  }
})

describe('tsq amqp: bad command lines (no broker needed)', () => {
  it('a value that is not a boolean, a missing argument, an unknown command: one line each, exit 64', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['queue.declare', 'q', 'maybe'], /^Error: Invalid value for '\[PASSIVE\]': 'maybe' is not a valid boolean\.$/],
      [['exchange.delete', 'x'], /^Error: Missing argument 'IF_UNUSED'\. \(usage: exchange\.delete EXCHANGE IF_UNUSED\)$/],
      [['basic.ack', 'one'], /^Error: Invalid value for 'DELIVERY_TAG': 'one' is not a valid integer\.$/],
      [['queue.nuke', 'q'], /^Error: No such command 'queue\.nuke'/],
      [['queue.purge', 'q', 'extra'], /^Error: Got unexpected extra argument \(extra\)/],
    ]
    for (const [words, line] of cases) {
      const r = await tsqAmqp('amqp://guest:guest@127.0.0.1:1//', words)
      assert.equal(r.code, 64, `${words.join(' ')}: ${r.stderr}`)
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr)
      assert.match(r.stderr.trim(), line)
    }
  })

  it('no subcommand with stdin not a terminal: one line naming the commands, exit 64', async () => {
    const r = await tsqAmqp('amqp://guest:guest@127.0.0.1:1//', [])
    assert.equal(r.code, 64)
    assert.match(r.stderr, /^Error: Missing command: one of exchange\.declare, .*, or repl/)
  })
})

const amqpSkip = await brokerSkipReason('amqp')
describe('tsq amqp on RabbitMQ, side by side with celery amqp', { skip: amqpSkip }, () => {
  it('the same calls print the same lines', { timeout: 300_000 }, async () => {
    const script = (q: string, x: string): string[][] => [
      ['queue.declare', q],
      ['queue.declare', q, 'yes'],
      ['exchange.declare', x, 'direct', 'no', 'no', 'no'],
      ['exchange.declare', x, 'direct', 'True'],
      ['queue.bind', q, x, 'rk'],
      ['basic.publish', 'hello world', x, 'rk'],
      ['basic.publish', 'second', x, 'rk', 'off'],
      ['queue.declare', q, 'Y'],
      ['basic.get', q],
      // The first get was not acked: the broker hands it back when that connection closes.
      ['basic.get', q, '1'],
      ['basic.get', q, 'on'],
      ['basic.get', q, 'true'],
      ['basic.get', q],
      ['basic.publish', 'third', '', q],
      ['queue.purge', q],
      ['basic.publish', 'fourth', '', q],
      ['queue.delete', q, 'f', 'n'],
      ['exchange.delete', x, '0'],
    ]
    const names = {
      py: [uniqueName('amqpcli-py-q'), uniqueName('amqpcli-py-x')],
      ts: [uniqueName('amqpcli-ts-q'), uniqueName('amqpcli-ts-x')],
    }
    amqpQueues.push(names.py[0]!, names.ts[0]!)
    amqpExchanges.push(names.py[1]!, names.ts[1]!)
    const pyScript = script(names.py[0]!, names.py[1]!)
    const tsScript = script(names.ts[0]!, names.ts[1]!)
    for (const [i, pyWords] of pyScript.entries()) {
      const py = await celeryAmqp(AMQP_URL, pyWords)
      const ts = await tsqAmqp(AMQP_URL, tsScript[i]!)
      assert.equal(py.code, 0, py.stderr)
      assert.equal(ts.code, 0, `${tsScript[i]!.join(' ')}: ${ts.stderr}`)
      const normal = (out: string, [q, x]: string[]) => out.split(q!).join('QUEUE').split(x!).join('EXCHANGE')
      assert.equal(normal(ts.stdout, names.ts), normal(py.stdout, names.py), `${pyWords.join(' ')}`)
    }
  })

  it('where Celery prints ERROR and exits 0, tsq prints the same refusal on one line and exits 1', { timeout: 120_000 }, async () => {
    const missing = uniqueName('amqpcli-missing')
    const py = await celeryAmqp(AMQP_URL, ['queue.bind', missing, 'amq.direct', 'rk'])
    const ts = await tsqAmqp(AMQP_URL, ['queue.bind', missing, 'amq.direct', 'rk'])
    assert.equal(py.code, 0)
    const pyLine = /^ERROR: (Queue\.bind: \(404\) NOT_FOUND - no queue .*)$/m.exec(py.stderr + py.stdout)
    assert.ok(pyLine, py.stderr)
    assert.equal(ts.code, 1)
    assert.equal(ts.stderr, `Error: ${pyLine[1]}\n`)
    // An unknown delivery tag: Celery's one-shot says OK (the refusal comes after it exits); tsq's waits for it.
    const ack = await tsqAmqp(AMQP_URL, ['basic.ack', '7'])
    assert.equal(ack.code, 1)
    assert.equal(ack.stderr, 'Error: Basic.ack: (406) PRECONDITION_FAILED - unknown delivery tag 7\n')
  })

  it(
    'repl from a script on stdin: one connection, so basic.get then basic.ack removes the message; a failed line is reported and the exit is 1',
    { timeout: 120_000 },
    async () => {
      const q = uniqueName('amqpcli-repl')
      amqpQueues.push(q)
      const r = await tsqAmqp(
        AMQP_URL,
        ['repl'],
        [
          `queue.declare ${q}`,
          `basic.publish "a message" "" ${q}`,
          `basic.get ${q}`,
          'basic.ack 1',
          'basic.ack 9',
          `queue.declare ${q} yes`,
        ].join('\n'),
      )
      assert.equal(r.code, 1)
      assert.equal(r.stderr, 'ERROR: Basic.ack: (406) PRECONDITION_FAILED - unknown delivery tag 9\n')
      assert.match(r.stdout, /'body': 'a message'/)
      assert.match(r.stdout, new RegExp(`queue:${q} messages:0 consumers:0\\nOK\\n$`))
    },
  )

  it('no subcommand in a terminal: the shell completes command names on Tab and keeps history', { timeout: 120_000 }, async () => {
    const q = uniqueName('amqpcli-pty')
    amqpQueues.push(q)
    const history = join(home, 'amqp-history')
    const env = { ...process.env, ...NO_BROKER_ENV, TSQ_AMQP_HISTORY: history }
    const screen = spawn('script', ['-qfec', `'${process.execPath}' '${BIN}' -b '${AMQP_URL}' amqp`, '/dev/null'], {
      cwd: ROOT,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let output = ''
    screen.stdout.on('data', (d: Buffer) => (output += d.toString('utf8')))
    const exited = new Promise<number | null>((resolve) => screen.once('exit', (code) => resolve(code)))
    try {
      // Typing before the prompt would meet the terminal still in line mode, which holds a Tab until Enter.
      const afterConnected = () => output.slice(output.indexOf('-> connected.') + '-> connected.'.length)
      await waitFor(() => output.includes('-> connected.') && afterConnected().includes('> '), { what: 'the prompt', timeoutMs: 30_000 })
      // Key by key, as typed: readline takes a chunk with a Tab in it for a paste and does not complete it.
      screen.stdin.write('queue.decl')
      await waitFor(() => output.includes('queue.decl'), { what: 'the typed word echoed', timeoutMs: 20_000 })
      screen.stdin.write('\t')
      await waitFor(() => output.includes('queue.declare'), { what: 'the completed command name', timeoutMs: 20_000 })
      screen.stdin.write(` ${q}\r`)
      await waitFor(() => output.includes(`queue:${q} messages:0 consumers:0`), { what: 'the completed command run', timeoutMs: 20_000 })
      screen.stdin.write('exit\r')
      const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 15_000))])
      assert.equal(code, 0, output.slice(-2000))
      assert.equal(readFileSync(history, 'utf8'), `queue.declare ${q}\nexit\n`)
    } finally {
      screen.kill('SIGKILL')
    }
  })
})

const redisSkip = await brokerSkipReason('redis')
describe("tsq amqp on Redis (kombu's layout)", { skip: redisSkip }, () => {
  it(
    "basic.publish works where Celery's fails; the binding is kombu's; basic.get and queue.delete follow",
    { timeout: 180_000 },
    async () => {
      const q = uniqueName('amqpcli-rq')
      const x = uniqueName('amqpcli-rx')
      redisNames.push(q, x)
      const py = await celeryAmqp(REDIS_URL, ['basic.publish', 'hello', '', q])
      assert.equal(py.code, 0)
      assert.match(py.stderr, /^ERROR: string indices must be integers/m)

      for (const words of [
        ['exchange.declare', x, 'direct'],
        ['queue.bind', q, x, 'rk'],
      ]) {
        const r = await tsqAmqp(REDIS_URL, words)
        assert.equal(r.code, 0, r.stderr)
      }
      const redis = new Redis(REDIS_URL)
      try {
        assert.deepEqual(await redis.smembers(`_kombu.binding.${x}`), [`rk\x06\x16\x06\x16${q}`])
      } finally {
        redis.disconnect()
      }
      const published = await tsqAmqp(REDIS_URL, ['basic.publish', 'hello', x, 'rk'])
      assert.equal(published.code, 0, published.stderr)
      assert.match(published.stdout, /\nOK\n$/)
      // Celery's Redis side reads what tsq wrote: its queue.declare counts it.
      const counted = await celeryAmqp(REDIS_URL, ['queue.declare', q])
      assert.match(counted.stdout, new RegExp(`queue:${q} messages:1 consumers:0`))
      const got = await tsqAmqp(REDIS_URL, ['basic.get', q, 'yes'])
      assert.equal(got.code, 0, got.stderr)
      assert.match(got.stdout, /^\{'body': 'hello',$/m)
      assert.match(got.stdout, new RegExp(`'exchange': '${x}'`))
      const passive = await tsqAmqp(REDIS_URL, ['queue.declare', uniqueName('amqpcli-none'), 'yes'])
      assert.equal(passive.code, 1)
      assert.match(passive.stderr, /^Error: Queue\.declare: \(404\) NOT_FOUND - no queue '.*' in vhost '\d+'\n$/)
      const deleted = await tsqAmqp(REDIS_URL, ['queue.delete', q])
      assert.equal(deleted.code, 0, deleted.stderr)
      const redis2 = new Redis(REDIS_URL)
      try {
        assert.equal(await redis2.exists(`_kombu.binding.${x}`), 0)
      } finally {
        redis2.disconnect()
      }
    },
  )
})

describe('tsq amqp on file://', () => {
  it('the same commands on the embedded broker; if_empty and if_unused refuse as RabbitMQ does', { timeout: 60_000 }, async () => {
    const broker = `file://${join(home, 'amqp-broker')}`
    const r = await tsqAmqp(
      broker,
      ['repl'],
      [
        'queue.declare fq',
        'exchange.declare fx topic',
        'queue.bind fq fx a.*',
        'basic.publish hi fx a.b',
        'queue.delete fq no yes',
        'exchange.delete fx yes',
        'basic.get fq',
        'basic.ack 1',
        'queue.delete fq no yes',
        'exchange.delete fx yes',
      ].join('\n'),
    )
    assert.equal(r.code, 1)
    assert.deepEqual(r.stderr.trim().split('\n'), [
      `ERROR: Queue.delete: (406) PRECONDITION_FAILED - queue 'fq' in vhost '${join(home, 'amqp-broker')}' not empty`,
      `ERROR: Exchange.delete: (406) PRECONDITION_FAILED - exchange 'fx' in vhost '${join(home, 'amqp-broker')}' in use`,
    ])
    assert.match(r.stdout, /'routing_key': 'a\.b'/)
    assert.match(r.stdout, /0 messages deleted\.\nOK\nOK\n$/)
    const json = await tsqAmqp(broker, ['queue.declare', 'jq', '--json'])
    assert.equal(json.code, 0, json.stderr)
    assert.deepEqual(JSON.parse(json.stdout), {
      command: 'queue.declare',
      lines: ['queue:jq messages:0 consumers:0', 'OK'],
      result: { queue: 'jq', messageCount: 0, consumerCount: 0 },
    })
  })
})
