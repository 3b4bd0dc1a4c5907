// The worker's remote-control table: every command of Celery 5.2.6
// (celery/worker/control.py) with its reply shape, plus the app's own commands.
import { cpuUsage, memoryUsage, resourceUsage } from 'node:process'
import { NoReply, type ControlHandler, type LamportClock } from '../../transport/index.js'
import type { App } from '../../app/index.js'
import type { QueueDefinition } from '../../config/index.js'
import type { EventDispatcher } from '../events.js'
import type { LimitedSet } from './limited-set.js'
import type { Pool } from '../pools/pool.js'
import { heldLockOf } from '../../app/index.js'
import { RateLimitError } from '../task-path/limits.js'
import type { TaskRunner } from '../task-path/task-runner.js'
import { queryTaskEntry } from './task-whereabouts.js'

export interface QueueDeclaration {
  name: string
  exchange: string
  exchangeType: string
  routingKey: string
  /** How the app's task_queues declares it, when it does (flags, arguments, bindings). */
  definition?: QueueDefinition
}

export interface ControlTarget {
  hostname: string
  app: App
  clock: LamportClock
  runner: TaskRunner
  pool: Pool
  revoked: LimitedSet
  events: EventDispatcher
  startedAt: number
  prefetchCount(): number
  brokerInfo(): Record<string, unknown>
  conf(withDefaults: boolean): Record<string, unknown>
  queues(): QueueDeclaration[]
  addConsumer(q: QueueDeclaration): Promise<void>
  cancelConsumer(queue: string): Promise<void>
  autoscale?: { readonly max: number; readonly min: number; set(max: number, min: number): void; info(): Record<string, number> }
  shutdown(reason: string): void
  report(): string
}

const ok = (value: unknown) => ({ ok: value })
const nok = (value: unknown) => ({ error: value })

function queueInfo(q: QueueDeclaration): Record<string, unknown> {
  const d = q.definition
  return {
    name: q.name,
    exchange: {
      name: q.exchange,
      type: q.exchangeType,
      arguments: null,
      durable: d?.exchange.durable ?? true,
      passive: false,
      auto_delete: d?.exchange.autoDelete ?? false,
      delivery_mode: d?.deliveryMode ?? null,
      no_declare: false,
    },
    routing_key: q.routingKey,
    queue_arguments: d?.queue.arguments ?? null,
    binding_arguments: null,
    consumer_arguments: d?.consumerArguments ?? null,
    durable: d?.queue.durable ?? true,
    exclusive: d?.queue.exclusive ?? false,
    auto_delete: d?.queue.autoDelete ?? false,
    no_ack: false,
    alias: null,
    bindings: [],
    no_declare: null,
    expires: null,
    message_ttl: null,
    max_length: null,
    max_length_bytes: null,
    max_priority: null,
  }
}

function signalName(raw: unknown): NodeJS.Signals | number {
  if (typeof raw === 'number') return raw
  if (raw === undefined || raw === null || raw === '') return 'SIGTERM'
  const s = String(raw)
  if (/^\d+$/.test(s)) return Number(s)
  if (s !== s.toUpperCase()) throw new TypeError('signal name must be uppercase string.')
  return (s.startsWith('SIG') ? s : `SIG${s}`) as NodeJS.Signals
}

function ids(raw: unknown): string[] {
  if (Array.isArray(raw)) return raw.map(String)
  if (raw === undefined || raw === null) return []
  return [String(raw)]
}

function rusage(): Record<string, unknown> {
  const r = resourceUsage()
  const cpu = cpuUsage()
  return {
    utime: cpu.user / 1e6,
    stime: cpu.system / 1e6,
    maxrss: r.maxRSS,
    ixrss: r.sharedMemorySize,
    idrss: r.unsharedDataSize,
    isrss: r.unsharedStackSize,
    minflt: r.minorPageFault,
    majflt: r.majorPageFault,
    nswap: r.swappedOut,
    inblock: r.fsRead,
    oublock: r.fsWrite,
    msgsnd: r.ipcSent,
    msgrcv: r.ipcReceived,
    nsignals: r.signalsCount,
    nvcsw: r.voluntaryContextSwitches,
    nivcsw: r.involuntaryContextSwitches,
  }
}

export function controlHandlers(w: ControlTarget): (method: string) => ControlHandler | undefined {
  const revoke = (taskIds: string[], terminate: boolean, signal: unknown) => {
    for (const id of taskIds) w.revoked.add(id)
    if (terminate) {
      const sig = signalName(signal)
      const hit: string[] = []
      for (const id of taskIds) if (w.pool.terminate(id, sig)) hit.push(id)
      return ok(hit.length ? `terminate: ${hit.join(', ')}` : 'terminate: tasks unknown')
    }
    // A running task is told through its AbortSignal, as Celery's revoke leaves it running; one
    // staged in a pool slot (not started) is taken back, and the worker then discards it as revoked.
    for (const id of taskIds) w.pool.abort(id)
    return ok(`tasks ${taskIds.join(', ')} flagged as revoked`)
  }

  const builtins: Record<string, ControlHandler> = {
    ping: () => ok('pong'),
    clock: () => ({ clock: w.clock.value }),
    hello: (args) => {
      if (args.from_node === w.hostname) return null
      w.revoked.merge(args.revoked as Record<string, unknown> | null)
      return { revoked: w.revoked.toWire(), clock: w.clock.forward() }
    },
    stats: () => {
      const slots = w.pool.slots()
      const pool: Record<string, unknown> = { 'max-concurrency': w.autoscale ? w.autoscale.max : w.pool.size }
      if (w.pool.kind === 'prefork') {
        Object.assign(pool, {
          processes: slots.map((s) => s.pid),
          'max-tasks-per-child': 'N/A',
          'put-guarded-by-semaphore': false,
          timeouts: [0, 0],
          writes: {
            total: w.runner.processed,
            avg: '1.00',
            all: '1.00',
            raw: String(w.runner.processed),
            strategy: 'fair',
            inqueues: { total: slots.length, active: w.runner.active.size },
          },
        })
      } else if (w.pool.kind === 'threads') {
        pool.threads = slots.length
      } else {
        // Celery's solo pool's keys, so a monitor tells the pool by them as it does Python's (its one process is the worker).
        Object.assign(pool, { processes: [process.pid], 'max-tasks-per-child': null, 'put-guarded-by-semaphore': true, timeouts: [] })
      }
      return {
        total: { ...w.runner.total },
        pid: process.pid,
        clock: String(w.clock.value),
        uptime: Math.floor((Date.now() - w.startedAt) / 1000),
        pool,
        broker: w.brokerInfo(),
        prefetch_count: w.prefetchCount(),
        rusage: rusage(),
        ...(w.autoscale ? { autoscaler: w.autoscale.info() } : {}),
      }
    },
    active: (args) => {
      const infos = [...w.runner.active.values()].map((r) => ({ r, info: r.info(args.safe === true) }))
      // A task with the `lock` option shows the lock its run holds (tsq's addition to Celery's entry).
      if (!infos.some(({ r }) => w.app.tasks.get(r.name)?.options.lock)) return infos.map(({ info }) => info)
      return Promise.all(
        infos.map(async ({ r, info }) => {
          const lock = await heldLockOf(w.app, { id: r.id, name: r.name, args: r.message.args, kwargs: r.message.kwargs })
          return lock ? { ...info, lock } : info
        }),
      )
    },
    reserved: () => w.runner.reserved.map((r) => r.info()),
    scheduled: () =>
      [...w.runner.scheduled.values()].map(({ request }) => ({
        eta: awareIso(request.message.eta, w.app.conf),
        priority: 6,
        request: request.info(),
      })),
    revoked: () => w.revoked.ids(),
    registered: (args) => {
      // Celery's DEFAULT_TASK_INFO_ITEMS when none are asked for, so a rate-limited task shows it in plain `inspect registered`.
      const items =
        Array.isArray(args.taskinfoitems) && args.taskinfoitems.length
          ? (args.taskinfoitems as string[])
          : ['exchange', 'routing_key', 'rate_limit']
      // A `control rate_limit` change shows here, as it sets task.rate_limit in Celery.
      const attr = (t: { name: string; options: object }, item: string): unknown => {
        if (item === 'name') return t.name
        if (item === 'rate_limit')
          return w.runner.rateLimits.has(t.name) ? w.runner.rateLimits.get(t.name)?.rate : (t.options as Record<string, unknown>).rateLimit
        const value = (t.options as Record<string, unknown>)[TASK_ATTRS[item] ?? item]
        // Celery prints each attribute with str(): Python's True/False.
        return typeof value === 'boolean' ? (value ? 'True' : 'False') : value
      }
      return [...w.app.tasks.values()]
        .filter((t) => args.builtins === true || !t.name.startsWith('celery.'))
        .map((t) => {
          const attrs = items.map((item) => [item, attr(t, item)] as const).filter(([, v]) => v !== undefined && v !== null)
          return attrs.length ? `${t.name} [${attrs.map(([k, v]) => `${k}=${v}`).join(' ')}]` : t.name
        })
        .sort()
    },
    query_task: (args) => {
      const out: Record<string, unknown> = {}
      for (const id of ids(args.ids)) {
        const entry = queryTaskEntry(w.runner, id, (eta) => awareIso(eta, w.app.conf))
        if (entry) out[id] = entry
      }
      return out
    },
    conf: (args) => w.conf(args.with_defaults === true),
    report: () => ok(w.report()),
    active_queues: () => w.queues().map(queueInfo),
    // Read from the store: the cluster's numbers for the keys of this worker's tasks, not this worker's share.
    concurrency: async () => (await w.runner.concurrencyStats()).map((s) => ({ ...s, keys: s.keys.slice(0, 1000) })),
    memsample: () => `${Math.round(memoryUsage.rss() / 1024)}kB`,
    memdump: () => `- rss: ${Math.round(memoryUsage.rss() / 1024)}kB, heap used: ${Math.round(memoryUsage().heapUsed / 1024)}kB.\n`,
    objgraph: () => nok("ImportError('Requires the objgraph library')"),

    revoke: (args) => revoke(ids(args.task_id), args.terminate === true, args.signal),
    terminate: (args) => revoke(ids(args.task_id), true, args.signal),
    rate_limit: async (args) => {
      const name = String(args.task_name ?? '')
      if (!w.app.tasks.has(name)) return nok('unknown task')
      const rate = (args.rate_limit ?? null) as string | number | null
      try {
        // A cluster-wide limit answers once the cluster's store has the new rate.
        await w.runner.setRateLimit(name, rate)
      } catch (error) {
        if (error instanceof RateLimitError) return nok(`Invalid rate limit string: ValueError(${JSON.stringify(String(rate))})`)
        // The cluster's store out of reach: this worker has the rate, the cluster does not.
        return nok(`rate limit not set for the cluster: ${(error as Error).message}`)
      }
      return ok(rate ? 'new rate limit set successfully' : 'rate limit disabled successfully')
    },
    time_limit: (args) => {
      const name = String(args.task_name ?? '')
      if (!w.app.tasks.has(name)) return nok('unknown task')
      const num = (v: unknown) => (v === undefined || v === null ? null : Number(v))
      w.runner.timeLimits.set(name, { soft: num(args.soft), hard: num(args.hard) })
      return ok('time limits set successfully')
    },
    enable_events: () => {
      if (w.events.taskEvents) return ok('task events already enabled')
      w.events.taskEvents = true
      return ok('task events enabled')
    },
    disable_events: () => {
      if (!w.events.taskEvents) return ok('task events already disabled')
      w.events.taskEvents = false
      return ok('task events disabled')
    },
    heartbeat: async () => {
      await w.events.sendControlHeartbeat()
      return null
    },
    add_consumer: async (args) => {
      const queue = String(args.queue ?? '')
      if (!queue) return nok('add_consumer needs a queue')
      const exchange = args.exchange ? String(args.exchange) : queue
      const routingKey = args.routing_key ? String(args.routing_key) : queue
      const exchangeType = args.exchange_type ? String(args.exchange_type) : 'direct'
      if (!w.queues().some((q) => q.name === queue)) {
        // Celery answers first and consumes asynchronously; errors go to the log.
        void w.addConsumer({ name: queue, exchange, exchangeType, routingKey }).catch(() => undefined)
      }
      return ok(`add consumer ${queue}`)
    },
    cancel_consumer: async (args) => {
      const queue = String(args.queue ?? '')
      await w.cancelConsumer(queue)
      return ok(`no longer consuming from ${queue}`)
    },
    pool_grow: async (args) => {
      if (w.autoscale) return nok('pool_grow is not supported with autoscale. Adjust autoscale range instead.')
      await w.pool.grow(Number(args.n ?? 1) || 1)
      w.runner.pump()
      return ok('pool will grow')
    },
    pool_shrink: async (args) => {
      if (w.autoscale) return nok('pool_shrink is not supported with autoscale. Adjust autoscale range instead.')
      await w.pool.shrink(Number(args.n ?? 1) || 1)
      return ok('pool will shrink')
    },
    pool_restart: () => nok("ValueError('Pool restarts not enabled')"),
    autoscale: (args) => {
      if (!w.autoscale) return nok("ValueError('Autoscale not enabled')")
      const max = Number(args.max ?? w.autoscale.max)
      const min = Number(args.min ?? w.autoscale.min)
      try {
        w.autoscale.set(max, min)
      } catch (error) {
        return nok(`ValueError('${(error as Error).message}')`)
      }
      return ok(`autoscale now max=${max} min=${min}`)
    },
    election: () => null,
    shutdown: (args) => {
      w.shutdown(args.msg ? String(args.msg) : 'Got shutdown from remote')
      throw new NoReply()
    },
  }
  const aliases: Record<string, string> = {
    dump_conf: 'conf',
    dump_schedule: 'scheduled',
    dump_reserved: 'reserved',
    dump_active: 'active',
    dump_revoked: 'revoked',
    dump_tasks: 'registered',
  }

  return (method) => {
    const builtin = builtins[aliases[method] ?? method]
    if (builtin) return builtin
    const custom = w.app.controlCommands.get(method)
    if (custom) return (args) => custom.handler(args, { hostname: w.hostname })
    return undefined
  }
}

/** Celery's Task attribute names (inspect registered's taskinfoitems) for tsq's task options. */
const TASK_ATTRS: Record<string, string> = {
  ignore_result: 'ignoreResult',
  acks_late: 'acksLate',
  max_retries: 'maxRetries',
  default_retry_delay: 'defaultRetryDelay',
  time_limit: 'timeLimit',
  soft_time_limit: 'softTimeLimit',
  track_started: 'trackStarted',
  reject_on_worker_lost: 'rejectOnWorkerLost',
}

/**
 * A message's eta as Celery's Request.eta.isoformat() gives it: a time with
 * no offset is in the app's timezone (UTC unless enable_utc is off and
 * timezone names another, left as sent), `Z` spelled `+00:00`.
 */
export function awareIso(eta: string | null | undefined, conf: Record<string, unknown> | undefined): string | null {
  if (!eta) return eta ?? null
  if (eta.endsWith('Z')) return `${eta.slice(0, -1)}+00:00`
  if (/[+-]\d\d:\d\d$/.test(eta)) return eta
  const tz = conf?.timezone
  const utc = conf?.enable_utc !== false ? tz === undefined || tz === null || tz === 'UTC' || tz === 'Etc/UTC' : tz === 'UTC'
  return utc ? `${eta}+00:00` : eta
}
