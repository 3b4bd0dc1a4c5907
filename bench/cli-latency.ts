// CLI latency, tsq beside Python Celery in the same run:
//   inspect-ping-<broker>: `tsq inspect ping -d <node>` vs `celery inspect ping -d <node>`,
//                          both against one Python Celery worker this bench starts;
//   cli-start:             `tsq --version` vs `node -e 0` (Node's own floor).
// Usage: node --import tsx bench/cli-latency.ts [--repeats N] [--warmup N] [--broker amqp|redis] [--json]
// Needs `npm run build` first (it runs bin/run.js as a shell script would;
// TSQ_INTEROP_TSQ_BIN=<path>/bin/run.js measures another build).
import { existsSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { AMQP_URL, REDIS_URL, brokerAvailable, uniqueName } from '../test/helpers/brokers.js'
import { deleteCeleryQueues } from '../test/interop/helpers/cleanup.js'
import { PY_DIR, PYTHON, REPO_ROOT, TSQ_BIN, startPythonWorker, type PeerEnv, type PythonWorker } from '../test/interop/helpers/python-worker.js'
import { benchEnv, formatEnv } from './lib/env.js'
import { measurePair, type Command, type MeasureOptions } from './lib/measure.js'
import { formatLine, toJson, type Figure } from './lib/report.js'

type Broker = 'amqp' | 'redis'

const { values } = parseArgs({
  options: {
    repeats: { type: 'string', default: '9' },
    warmup: { type: 'string', default: '2' },
    broker: { type: 'string', multiple: true },
    json: { type: 'boolean', default: false },
  },
})

const opts: MeasureOptions = { repeats: Number(values.repeats), warmup: Number(values.warmup) }
if (!(opts.repeats >= 1 && opts.warmup >= 0)) throw new Error('--repeats must be >= 1 and --warmup >= 0')
const brokers = (values.broker ?? ['redis', 'amqp']) as Broker[]

function say(line: string): void {
  // In --json mode stdout carries only the document.
  if (values.json) process.stderr.write(`${line}\n`)
  else process.stdout.write(`${line}\n`)
}

function tsqCmd(args: readonly string[]): Command {
  return { cmd: process.execPath, args: [TSQ_BIN, ...args], cwd: REPO_ROOT, env: { ...process.env, NO_COLOR: '1' } }
}

function celeryCmd(peer: PeerEnv, args: readonly string[]): Command {
  return {
    cmd: PYTHON,
    args: ['-m', 'celery', '-A', 'tasks', ...args],
    cwd: PY_DIR,
    env: { ...process.env, PYTHONPATH: PY_DIR, TSQ_INTEROP_BROKER: peer.broker, TSQ_INTEROP_BACKEND: peer.backend, TSQ_INTEROP_QUEUE: peer.queue },
  }
}

async function pingFigure(broker: Broker): Promise<Figure | undefined> {
  if (!(await brokerAvailable(broker))) {
    say(`inspect-ping-${broker}  skipped: broker not reachable on 127.0.0.1`)
    return undefined
  }
  const peer: PeerEnv = {
    broker: broker === 'amqp' ? AMQP_URL : REDIS_URL,
    // Db 1 of the bench's Redis (TSQ_TEST_REDIS_URL): ping stores no result, but the peer app wants a backend.
    backend: REDIS_URL.replace(/\/\d*$/, '') + '/1',
    queue: uniqueName(`tsq-bench-${broker}`),
  }
  let worker: PythonWorker | undefined
  try {
    worker = await startPythonWorker({ peer, concurrency: 1 })
    const node = worker.nodename
    const [tsq, celery] = await measurePair(
      tsqCmd(['inspect', 'ping', '-d', node, '-b', peer.broker]),
      celeryCmd(peer, ['inspect', 'ping', '-d', node]),
      opts,
    )
    return { name: `inspect-ping-${broker}`, peerLabel: 'celery inspect ping', tsq, peer: celery }
  } finally {
    await worker?.stop()
    await deleteCeleryQueues(broker, peer.broker, [peer.queue]).catch(() => {})
  }
}

async function main(): Promise<void> {
  if (!existsSync(resolve(dirname(TSQ_BIN), '../dist'))) {
    process.stderr.write('bench: dist/ is missing; run `npm run build` first\n')
    process.exitCode = 64
    return
  }
  const env = benchEnv(PYTHON)
  say(`# cli-latency  ${formatEnv(env)}  repeats=${opts.repeats} warmup=${opts.warmup}`)
  const figures: Figure[] = []
  const report = (f: Figure | undefined) => {
    if (!f) return
    figures.push(f)
    say(formatLine(f))
  }
  const [version, node0] = await measurePair(tsqCmd(['--version']), { cmd: process.execPath, args: ['-e', '0'] }, opts)
  report({ name: 'cli-start', peerLabel: 'node -e 0', tsq: version, peer: node0 })
  for (const b of brokers) report(await pingFigure(b))
  if (values.json) process.stdout.write(`${toJson(figures, env)}\n`)
}

await main()
