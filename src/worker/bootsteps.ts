// The worker's start-up, as data: each component, what it needs started first,
// and when it is part of a worker at all (Celery's conditional steps, drawn
// with ∘ by `celery graph bootsteps`). Worker.start() runs exactly these, in
// bootOrder(), each through its own method (worker.ts's `bootsteps`), so
// `tsq graph bootsteps` draws what the worker really does.
import type { WorkerOptions } from './worker-options.js'

export const BOOTSTEP_NAMES = [
  'Connection',
  'Bus',
  'Backend',
  'Pool',
  'Events',
  'Tasks',
  'ConnectionGuard',
  'StateDB',
  'Autoscaler',
  'Control',
  'Mingle',
  'Gossip',
  'Consumer',
  'Heart',
] as const
export type BootstepName = (typeof BOOTSTEP_NAMES)[number]

export interface BootstepContext {
  options: Pick<WorkerOptions, 'resultBackend' | 'statedb' | 'autoscale' | 'mingle' | 'gossip' | 'heartbeat'>
  brokerKind: 'amqp' | 'redis' | 'file'
  /** The app is an events app (src/bus). */
  hasBus: boolean
  /** worker_enable_remote_control: False leaves the mailbox out, so inspect and control get no answer, as from Celery's worker. */
  remoteControl: boolean
}

export interface Bootstep {
  name: BootstepName
  requires: readonly BootstepName[]
  /** What the step starts, for `tsq graph bootsteps --json` and the docs. */
  description: string
  /** Absent: every worker runs it. */
  when?: (ctx: BootstepContext) => boolean
  /**
   * The step says nothing under the worker's name and reads nothing the
   * previous worker of that name leaves behind, so it may start while that
   * worker still runs: `tsq worker --watch` starts a reload's worker up to the
   * first step without it, then waits for the old one to stop.
   */
  beforeSwap?: true
}

export const WORKER_BOOTSTEPS: readonly Bootstep[] = [
  { name: 'Connection', requires: [], description: 'the broker connection, retried at start-up as kombu does', beforeSwap: true },
  { name: 'Bus', requires: ['Connection'], description: "an events app's topology (src/bus)", when: (c) => c.hasBus, beforeSwap: true },
  {
    name: 'Backend',
    requires: ['Connection'],
    description: 'the result backend (rpc:// over the broker connection)',
    when: (c) => !!c.options.resultBackend,
    beforeSwap: true,
  },
  { name: 'Pool', requires: [], description: 'the execution pool (prefork, threads or solo)', beforeSwap: true },
  { name: 'Events', requires: ['Connection'], description: 'the event dispatcher (task-* and worker-* events)', beforeSwap: true },
  {
    name: 'Tasks',
    requires: ['Pool', 'Events', 'Backend'],
    description: 'the task runner: requests, ETA, acks, results',
    beforeSwap: true,
  },
  {
    name: 'ConnectionGuard',
    requires: ['Tasks'],
    description: 'broker-loss handling: prefetch reduction and restart',
    beforeSwap: true,
  },
  { name: 'StateDB', requires: [], description: 'the persistent revoked set (--statedb)', when: (c) => !!c.options.statedb },
  {
    name: 'Autoscaler',
    requires: ['Pool', 'Tasks'],
    description: 'pool growth and shrink (--autoscale)',
    when: (c) => !!c.options.autoscale,
  },
  {
    name: 'Control',
    requires: ['Connection', 'Tasks'],
    description: "the remote-control mailbox (Celery's pidbox)",
    when: (c) => c.remoteControl,
  },
  {
    name: 'Mingle',
    requires: ['Control'],
    description: 'revoked ids and clock from the peers at start-up',
    when: (c) => c.options.mingle && c.brokerKind !== 'file',
  },
  {
    name: 'Gossip',
    requires: ['Mingle', 'Events'],
    description: "the peers' worker-* events",
    when: (c) => c.options.gossip && c.brokerKind !== 'file',
  },
  { name: 'Consumer', requires: ['Tasks', 'Control', 'Gossip'], description: 'the task queue consumers' },
  {
    name: 'Heart',
    requires: ['Events', 'Consumer'],
    description: 'worker-online, then a worker-heartbeat every interval',
    when: (c) => c.options.heartbeat,
  },
]

/**
 * The steps in the order they start: each after what it requires, otherwise
 * in declared order. A step left out (its `when` is false) satisfies what
 * requires it. Throws on a cycle or an unknown name (a mistake in the list).
 */
export function bootOrder(steps: readonly Bootstep[] = WORKER_BOOTSTEPS): Bootstep[] {
  const byName = new Map(steps.map((s) => [s.name, s]))
  const done = new Set<BootstepName>()
  const order: Bootstep[] = []
  const visit = (step: Bootstep, path: BootstepName[]) => {
    if (done.has(step.name)) return
    if (path.includes(step.name)) throw new Error(`bootstep cycle: ${[...path, step.name].join(' → ')}`)
    for (const name of step.requires) {
      const required = byName.get(name)
      if (!required) throw new Error(`bootstep ${step.name} requires unknown step ${name}`)
      visit(required, [...path, step.name])
    }
    done.add(step.name)
    order.push(step)
  }
  for (const step of steps) visit(step, [])
  return order
}

/** The steps a worker with these options runs, in order. */
export function activeBootsteps(ctx: BootstepContext): Bootstep[] {
  return bootOrder().filter((step) => step.when?.(ctx) ?? true)
}
