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
import {
  PY_DIR,
  PYTHON,
  REPO_ROOT,
  TSQ_BIN,
  startPythonWorker,
  type PeerEnv,
  type PythonWorker,
} from '../test/interop/helpers/python-worker.js'
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

/** bin/run.js executed itself, as the `tsq` a shell finds: its first line (sh) starts Node. */
function tsqCmd(args: readonly string[], env: NodeJS.ProcessEnv = process.env): Command {
  return { cmd: TSQ_BIN, args: [...args], cwd: REPO_ROOT, env: { ...env, NO_COLOR: '1' } }
}

// Node 20 reads NODE_EXTRA_CA_CERTS's file at every start, whatever the program
// does (a system bundle of ~150 certificates: 40-80 ms of `node -e 0` on this
// VM, where the variable is set for every process); Python does not read it.
// tsq's launcher keeps it from Node for the one-shot remote commands (bin/run.js)
// but not for `--version`. Where it is set, each figure is measured a second
// time without it, so the line shows what tsq costs apart from that file.
const EXTRA_CA = process.env.NODE_EXTRA_CA_CERTS
const withoutExtraCa: NodeJS.ProcessEnv = { ...process.env }
delete withoutExtraCa.NODE_EXTRA_CA_CERTS

function celeryCmd(peer: PeerEnv, args: readonly string[]): Command {
  return {
    cmd: PYTHON,
    args: ['-m', 'celery', '-A', 'tasks', ...args],
    cwd: PY_DIR,
    env: {
      ...process.env,
      PYTHONPATH: PY_DIR,
      TSQ_INTEROP_BROKER: peer.broker,
      TSQ_INTEROP_BACKEND: peer.backend,
      TSQ_INTEROP_QUEUE: peer.queue,
    },
  }
}

async function pingFigures(broker: Broker): Promise<Figure[]> {
  if (!(await brokerAvailable(broker))) {
    say(`inspect-ping-${broker}  skipped: broker not reachable on 127.0.0.1`)
    return []
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
    const args = ['inspect', 'ping', '-d', node, '-b', peer.broker]
    const [tsq, celery] = await measurePair(tsqCmd(args), celeryCmd(peer, ['inspect', 'ping', '-d', node]), opts)
    const figures: Figure[] = [{ name: `inspect-ping-${broker}`, peerLabel: 'celery inspect ping', tsq, peer: celery }]
    if (EXTRA_CA) {
      const [bare, celeryAgain] = await measurePair(tsqCmd(args, withoutExtraCa), celeryCmd(peer, ['inspect', 'ping', '-d', node]), opts)
      figures.push({
        name: `inspect-ping-${broker}-no-extra-ca`,
        peerLabel: 'celery inspect ping; tsq without NODE_EXTRA_CA_CERTS',
        tsq: bare,
        peer: celeryAgain,
      })
    }
    return figures
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
  if (EXTRA_CA) {
    say(
      `# NODE_EXTRA_CA_CERTS=${EXTRA_CA} is set: every node process reads it at start; the -no-extra-ca lines run tsq and node without it`,
    )
    const [bareVersion, bareNode] = await measurePair(
      tsqCmd(['--version'], withoutExtraCa),
      { cmd: process.execPath, args: ['-e', '0'], env: withoutExtraCa },
      opts,
    )
    report({ name: 'cli-start-no-extra-ca', peerLabel: 'node -e 0, both without NODE_EXTRA_CA_CERTS', tsq: bareVersion, peer: bareNode })
  }
  for (const b of brokers) for (const f of await pingFigures(b)) report(f)
  if (values.json) process.stdout.write(`${toJson(figures, env)}\n`)
}

await main()
