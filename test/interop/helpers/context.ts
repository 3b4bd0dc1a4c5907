// What the interop suites share for one broker: the peer app's environment,
// the one Python worker every case talks to, and what to clean up afterwards.
import { AMQP_URL, REDIS_URL, uniqueName } from '../../helpers/brokers.js'
import { deleteCeleryQueues, deleteResults, type InteropBroker } from './cleanup.js'
import {
  parseJsonOut,
  purgeQueue,
  runCelery,
  runTsq,
  startPythonWorker,
  type PeerEnv,
  type PythonWorker,
  type RunResult,
} from './python-worker.js'

/** tsq result reads the Redis backend, so both brokers store results there. */
export const RESULT_BACKEND = process.env.TSQ_TEST_RESULT_BACKEND ?? 'redis://127.0.0.1:6379/1'

/** Seconds each remote-control call may stall; generous because with -d it never waits it out. */
export const RC_TIMEOUT = '5'

export class InteropContext {
  readonly kind: InteropBroker
  readonly peer: PeerEnv
  private current: PythonWorker | undefined
  /** Queues created by the run besides peer.queue (add_consumer targets). */
  readonly extraQueues: string[] = []
  readonly taskIds: string[] = []
  readonly extraWorkers: PythonWorker[] = []

  constructor(kind: InteropBroker) {
    this.kind = kind
    this.peer = {
      broker: kind === 'amqp' ? AMQP_URL : REDIS_URL,
      backend: RESULT_BACKEND,
      queue: uniqueName(`tsq-interop-${kind}`),
    }
  }

  get worker(): PythonWorker {
    if (!this.current) throw new Error('the Python worker is not running (setup failed?)')
    return this.current
  }

  get node(): string {
    return this.worker.nodename
  }

  /** A queue name for this run, removed in teardown. */
  scratchQueue(label: string): string {
    const q = `${this.peer.queue}-${label}`
    if (!this.extraQueues.includes(q)) this.extraQueues.push(q)
    return q
  }

  async setUp(): Promise<void> {
    await purgeQueue(this.peer)
    this.current = await startPythonWorker({ peer: this.peer })
  }

  async tearDown(): Promise<void> {
    const workers = [...this.extraWorkers, ...(this.current ? [this.current] : [])]
    await Promise.all(workers.map((w) => w.stop()))
    await deleteCeleryQueues(this.kind, this.peer.broker, [this.peer.queue, ...this.extraQueues])
    await deleteResults(RESULT_BACKEND, this.taskIds)
  }

  /** tsq with this broker, e.g. tsq(['inspect', 'ping', '-d', node, '--json']). */
  tsq(args: readonly string[], timeoutMs = 30_000): Promise<RunResult> {
    return runTsq([...args, '-b', this.peer.broker], { timeoutMs })
  }

  celery(args: readonly string[], timeoutMs = 30_000): Promise<RunResult> {
    return runCelery(args, this.peer, { timeoutMs })
  }

  /** `<tool> inspect|control <method> [args] -d node -t T --json`, parsed; throws with both streams on failure. */
  async remote(
    tool: 'tsq' | 'celery',
    kind: 'inspect' | 'control',
    method: string,
    args: readonly string[] = [],
    node = this.node,
  ): Promise<unknown> {
    const argv = [kind, method, ...args, '-d', node, '-t', RC_TIMEOUT, '--json']
    const res = tool === 'tsq' ? await this.tsq(argv) : await this.celery(argv)
    if (res.code !== 0) {
      throw new Error(`${tool} ${argv.join(' ')} exited ${res.code}\nstdout: ${res.stdout}\nstderr: ${res.stderr}`)
    }
    return parseJsonOut(res, `${tool} ${kind} ${method}`)
  }

  async startExtraWorker(): Promise<PythonWorker> {
    const w = await startPythonWorker({ peer: this.peer })
    this.extraWorkers.push(w)
    return w
  }
}
