// What a user's task module imports: `createApp`, `app.task`, `app.remote`,
// sending, results and custom remote-control commands. Nothing here runs
// tasks, the worker does, but for the eager runs of tests (`task.apply()`,
// task_always_eager: eager.ts). A task itself is task.ts, a task defined
// elsewhere remote-task.ts; how a chain, group or chord is sent,
// canvas-sends.ts; signatures, their kinds and freezing are the protocol's
// (protocol/messages/canvas.ts); what each send derives from the conf
// (routes included), send-plan.ts.
import {
  closeConcurrencyStores,
  closeDedupStores,
  closeLockStores,
  closeRateStores,
  type AppLockOptions,
  type Lease,
} from '../locks/index.js'
import { sendDeduplicated, withAppLock } from './locking.js'
import { randomUUID } from 'node:crypto'
import { type BodyDecoder, type BodyEncoder, type ResultOf, type Signature, type TaskEmbed } from '../protocol/index.js'
import {
  checkSecurityConf,
  loadSecurity,
  resultCodecSettings,
  taskDecoder,
  taskEncoder,
  type LoadedSecurity,
  type SecurityOptions,
  backendSentinelFromConf,
  backendSslFromConf,
  loadConfig,
  transportSettingsFromConf,
  type ResolvedConfig,
  type Route,
  type QueueSettings,
  annotationsFor,
} from '../config/index.js'
import {
  createTransport,
  LamportClock,
  urlListSetting,
  type SentinelSettings,
  type SslSettings,
  type Transport,
  type TransportSettings,
} from '../transport/index.js'
import { AsyncResult, type GroupResult } from './async-result.js'
import { registerBuiltinTasks } from './builtins.js'
import {
  backendOptionsFromConf,
  createResultBackend,
  RpcResultBackend,
  type BackendOptions,
  type ResultBackend,
  type ResultCodec,
} from '../backends/index.js'
import { DEFAULT_QUEUE, sendTaskAs, type SendTaskOptions, AppControl } from '../client/index.js'
import { ConfWatch } from './conf-watch.js'
import { runningTask, type TaskContext } from './task-context.js'
import { AppSignals, type SignalName, type SignalReceiver } from './app-signals.js'
import { applyAsyncEagerly, isAlwaysEager } from './eager.js'
import { Task, taskDefaultsFromConf, type AfterFirst, type TaskFunction, type TaskOptions } from './task.js'
import type { ApplyOptions } from './task-handle.js'
import { RemoteTask } from './remote-task.js'
import { SendPlan } from './send-plan.js'
import { addToChord, sendChain, sendChord, sendGroup, sendMany, type CanvasSender } from './canvas-sends.js'

/** A chain's result: typed by its last signature's result when that is known, else a task's or a group's. */
export type ChainResult<R> = unknown extends R ? AsyncResult | GroupResult : AsyncResult<R>

/** What each signature of a list returns: a group's get() gives that list. */
export type ResultsOf<S extends unknown[]> = { [K in keyof S]: ResultOf<S[K]> }

export type ControlCommandKind = 'inspect' | 'control'
export type ControlCommandHandler = (args: Record<string, unknown>, worker: { hostname: string }) => unknown | Promise<unknown>

export interface AppOptions {
  name?: string
  /** A URL, or a failover list: `'amqp://a//;amqp://b//'` or an array of URLs (Celery's broker_url). */
  broker?: string | string[]
  resultBackend?: string
  /** Periodic tasks for `tsq beat` (Celery's beat_schedule). */
  beatSchedule?: Record<string, unknown>
  /**
   * Celery settings by their Python names, reported by `inspect conf`. The
   * worker acts on `worker_direct`, `worker_enable_prefetch_count_reduction`,
   * `worker_cancel_long_running_tasks_on_connection_loss` and `result_extended`.
   */
  conf?: Record<string, unknown>
  /**
   * Celery's `task_default_queue`: where a task goes when nothing names a
   * queue (sendTask, delay, chain, and in a worker the links, chain steps and
   * chord bodies that arrive without one), and what `tsq worker` consumes
   * without -Q. Default `celery`.
   */
  defaultQueue?: string
}

export class App {
  readonly name: string
  readonly options: AppOptions
  readonly tasks = new Map<string, Task>()
  /** Receivers of Celery's signals, registered with on(). */
  readonly signals = new AppSignals()
  /** Remote control of the app's workers (Celery's `app.control`): revoke, ping, inspect, broadcast. */
  readonly control = new AppControl(
    () => this.config.brokerUrl,
    () => this.transportSettings,
  )
  readonly controlCommands = new Map<string, { kind: ControlCommandKind; handler: ControlCommandHandler }>()
  private overrides: { broker?: string; resultBackend?: string; timezone?: string; brokerRead?: string; brokerWrite?: string } = {}
  private transportPromise: Promise<Transport> | undefined
  private backendPromise: Promise<ResultBackend> | undefined
  private rpcReplyTo: string | undefined
  /** The Lamport clock of the events this app sends (task-sent), as Celery's app.clock. */
  private readonly clock = new LamportClock()
  private security: LoadedSecurity | undefined
  private allowedSerializers: string[] | undefined
  private readonly watch = new ConfWatch()
  private plan: SendPlan | undefined
  /** The producer transport once connected, and whether the rpc backend is up: a send needs no await then. */
  private openTransport: Transport | undefined
  private backendOpen = false
  private readonly resultOf = (id: string): AsyncResult => new AsyncResult(id, this)
  /** What canvas-sends.ts needs of this app that is not public. */
  private readonly canvas: CanvasSender = { app: this, plan: () => this.sendPlan(), resultOf: this.resultOf }

  constructor(options: AppOptions = {}) {
    this.options = this.watch.watchOptions(options)
    this.name = options.name ?? 'tsq'
    registerBuiltinTasks(this)
  }

  /** The send plan for the options and conf as they are now. */
  private sendPlan(): SendPlan {
    // conf first: its getter creates an empty conf when there is none, a write.
    const conf = this.conf
    const version = this.watch.version
    if (this.plan?.version !== version) this.plan = new SendPlan(version, this, conf, this.clock)
    return this.plan
  }

  /**
   * The Celery settings given as `conf`, to read or change (Celery's
   * `app.conf`): `app.conf.task_always_eager = true` in a test's set-up.
   */
  get conf(): Record<string, unknown> {
    return (this.options.conf ??= {})
  }

  get defaultQueue(): string {
    const fromConf = this.options.conf?.task_default_queue
    return this.options.defaultQueue || (typeof fromConf === 'string' && fromConf ? fromConf : DEFAULT_QUEUE)
  }

  /** Celery's broker settings in `conf`, as far as tsq's transports take them (TLS, login method, Redis's visibility_timeout); the other transport options are checked at start-up (settings.ts). */
  get transportSettings(): TransportSettings {
    return transportSettingsFromConf(this.options.conf ?? {})
  }

  /** Celery's redis_backend_use_ssl in `conf`. */
  get backendSsl(): SslSettings | boolean | null {
    return backendSslFromConf(this.options.conf ?? {})
  }

  /** Celery's result_backend_transport_options in `conf` (master_name, sentinel_kwargs for sentinel://). */
  /** Everything a result backend takes from this app's settings but its codec. */
  get backendOptions(): Omit<BackendOptions, 'codec'> {
    return backendOptionsFromConf(this.options.conf ?? {})
  }

  get backendSentinel(): SentinelSettings {
    return backendSentinelFromConf(this.options.conf ?? {})
  }

  /**
   * Celery's app.setup_security(): task_serializer must be 'auth' and
   * accept_content ['auth'] (ImproperlyConfigured otherwise, with Celery's
   * words); the key, certificate and store come from the arguments or from
   * security_key, security_certificate, security_cert_store, security_digest.
   * From then on this app signs every task it sends, and a worker running it
   * verifies every task it receives before decoding the body.
   */
  setupSecurity(options: SecurityOptions = {}): void {
    checkSecurityConf(this.conf)
    this.security = loadSecurity(this.conf, options)
    this.allowedSerializers = options.allowedSerializers
    this.watch.touch()
  }

  /** The loaded security settings: set up explicitly, or from conf when it names the auth serializer. */
  securitySettings(): LoadedSecurity | undefined {
    const conf = this.conf
    const accept = conf.accept_content
    const wantsAuth = conf.task_serializer === 'auth' || (Array.isArray(accept) && accept.includes('auth'))
    if (!this.security && wantsAuth && conf.security_cert_store !== undefined) this.security = loadSecurity(conf)
    return this.security
  }

  /** How this app's task bodies are written (task_serializer, signed under auth). */
  taskEncoder(): BodyEncoder {
    return taskEncoder(this.conf, this.securitySettings())
  }

  /** What this app's workers accept (accept_content) and how they verify signed bodies. */
  taskDecoder(): BodyDecoder {
    return taskDecoder(this.conf, this.securitySettings(), this.allowedSerializers)
  }

  /** result_serializer and result_accept_content. */
  resultCodec(): ResultCodec {
    return resultCodecSettings(this.conf)
  }

  /**
   * Where a task goes when its sender names no queue: the app's task_routes
   * (Celery's setting, in `conf`), else the default queue. Sends from here,
   * beat's and a worker's links and chain steps all ask this.
   */
  routeFor(taskName: string): Route {
    return this.sendPlan().routeFor(taskName)
  }

  /** How this app's sends publish, the worker's follow-ups too: task_publish_retry_policy and task_send_sent_event. */
  publishing(): Pick<SendTaskOptions, 'retryPolicy' | 'sentEvent'> {
    return this.sendPlan().publishing()
  }

  /** task_queues and the task_default_* settings that shape queues (config/queues.ts), as the conf says now. */
  get queueSettings(): QueueSettings {
    return this.sendPlan().settings
  }

  /** The worker and CLI flags win over env, which wins over the module's own options. */
  configure(overrides: { broker?: string; resultBackend?: string; brokerRead?: string; brokerWrite?: string }): void {
    this.overrides = { ...this.overrides, ...overrides }
    this.watch.touch()
  }

  get config(): ResolvedConfig {
    const conf = this.options.conf ?? {}
    const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined)
    return loadConfig({
      ...this.overrides,
      appBroker: urlListSetting(this.options.broker) ?? urlListSetting(conf.broker_url),
      appResultBackend: this.options.resultBackend ?? str(conf.result_backend),
      timezone: this.overrides.timezone ?? str(conf.timezone),
      appBrokerRead: str(conf.broker_read_url),
      appBrokerWrite: str(conf.broker_write_url),
    })
  }

  /**
   * Registers a task of this app, typed by its function: `app.task('proj.add',
   * (x: number, y: number) => x + y)` is a `Task<[number, number], number>`
   * (an async function's result is its promise's value). With `bind: true`
   * the function's first parameter is the running task's context, not an
   * argument of the task.
   */
  task<F extends (ctx: TaskContext, ...args: any[]) => unknown>(
    name: string,
    fn: F,
    options: TaskOptions & { bind: true },
  ): Task<AfterFirst<Parameters<F>>, Awaited<ReturnType<F>>>
  task<F extends TaskFunction>(name: string, fn: F, options?: TaskOptions & { bind?: false }): Task<Parameters<F>, Awaited<ReturnType<F>>>
  task(name: string, fn: TaskFunction, options?: TaskOptions): Task
  task(name: string, fn: TaskFunction, options: TaskOptions = {}): Task {
    if (typeof fn !== 'function') throw new TypeError(`task ${name}: expected a function`)
    const conf = this.options.conf ?? {}
    // task_annotations win over the task's own options, as Celery's do over a Task's attributes.
    const task = new Task(this, name, fn, { ...taskDefaultsFromConf(conf), ...options, ...annotationsFor(conf.task_annotations, name) })
    this.tasks.set(name, task)
    return task
  }

  /**
   * A task defined elsewhere (a Python worker's), declared once with its
   * arguments and result: `app.remote<[number, number], number>('proj.add')`
   * sends by name as sendTask does, typed; `options` are each send's defaults.
   */
  remote<A extends unknown[] = unknown[], R = unknown>(name: string, options: ApplyOptions = {}): RemoteTask<A, R> {
    return new RemoteTask<A, R>(this, name, options)
  }

  /**
   * Runs `receiver` on one of Celery's signals (`app.on('task_prerun',
   * ({ sender, taskId }) => ...)`, `app.on('worker_ready', ...)`), in the
   * process that sends it (see app-signals.ts). Returns the function that
   * disconnects it.
   */
  on<K extends SignalName>(signal: K, receiver: SignalReceiver<K>): () => void {
    return this.signals.connect(signal, receiver)
  }

  controlCommand(name: string, handler: ControlCommandHandler, options: { kind?: ControlCommandKind } = {}): void {
    this.controlCommands.set(name, { kind: options.kind ?? 'control', handler })
  }

  /** The producer connection, opened on first send: to broker_write_url when the conf has one (Celery's connection_for_write). */
  async transport(): Promise<Transport> {
    this.transportPromise ??= (async () => {
      const t = await createTransport(this.config.brokerWriteUrl, this.transportSettings)
      // The app has no log of its own: a broker alarm holding its sends is said on stderr, once each way.
      t.on('connection:blocked', (reason) =>
        process.emitWarning(
          `the broker blocks publishing (${reason}): sends wait until it clears${this.sendPlan().publishTimeout === null ? ' (task_publish_timeout gives up sooner)' : ''}`,
          'TsqBrokerBlocked',
        ),
      )
      t.on('connection:unblocked', () => process.emitWarning('the broker publishes again', 'TsqBrokerBlocked'))
      await t.connect()
      this.openTransport = t
      return t
    })()
    return this.transportPromise
  }

  async backend(): Promise<ResultBackend> {
    this.backendPromise ??= (async () => {
      const url = this.config.resultBackend
      if (url?.startsWith('rpc://')) {
        const backend = new RpcResultBackend(await this.transport(), this.replyTo(), this.resultCodec())
        await backend.start()
        this.backendOpen = true
        return backend
      }
      return createResultBackend(url, { ...this.backendOptions, codec: this.resultCodec() })
    })()
    return this.backendPromise
  }

  /** The rpc reply queue name, sent as `reply_to` with every task (Celery's thread oid). */
  replyTo(): string {
    this.rpcReplyTo ??= randomUUID()
    return this.rpcReplyTo
  }

  /**
   * Sends a task by name (Celery's send_task), for a task this process may not
   * have; `R` types what it returns: `app.sendTask<number>('proj.add', [2, 2])`.
   */
  sendTask<R = unknown>(
    name: string,
    args: unknown[] = [],
    kwargs: Record<string, unknown> = {},
    options: ApplyOptions = {},
  ): Promise<AsyncResult<R>> {
    return this.sendOwned(name, args, kwargs, { ...options }) as Promise<AsyncResult<R>>
  }

  /**
   * sendTask with options the caller made for this send alone (delay() and
   * applyAsync() do): they become the send's options, written in place.
   * Once the transport is up, everything to the publish runs in this turn.
   */
  sendOwned(name: string, args: unknown[], kwargs: Record<string, unknown>, options: ApplyOptions): Promise<AsyncResult> {
    // Under task_always_eager a task this app has runs here (Celery's send_task
    // would still publish it); a name it does not have is sent as always.
    const eagerTask = isAlwaysEager(this) ? this.tasks.get(name) : undefined
    if (eagerTask) return applyAsyncEagerly(this, eagerTask, args, kwargs, options)
    // The option `dedup` (docs/deduplication.md): the store first, then this send again without it.
    if (options.dedup) return sendDeduplicated(this, name, args, kwargs, options)
    let plan: SendPlan
    try {
      plan = this.sendPlan()
    } catch (error) {
      return Promise.reject(error)
    }
    const transport = this.openTransport
    // The rpc backend must be listening before the reply can arrive.
    if (!transport || (plan.rpc && !this.backendOpen)) return this.sendWhenOpen(name, args, kwargs, options)
    const o = options as SendTaskOptions & ApplyOptions
    const { link, linkError } = o
    // Celery's send_task inside a running task: the task is the parent, and with
    // task_inherit_parent_priority its priority is the default. Task.applyAsync
    // always passes a priority key (Celery's exec options carry one, None when
    // unset), so there, as in Celery 5.2.6, only send_task inherits.
    const parent = runningTask()
    if (parent) {
      o.rootId ??= parent.rootId ?? parent.id
      o.parentId ??= parent.id
      const parentPriority = parent.deliveryInfo?.priority
      if (this.conf.task_inherit_parent_priority === true && !('priority' in options) && typeof parentPriority === 'number')
        o.priority = parentPriority
    }
    if (link || linkError) {
      const embed: Partial<TaskEmbed> = {}
      if (link) embed.callbacks = (Array.isArray(link) ? link : [link]) as TaskEmbed['callbacks']
      if (linkError) embed.errbacks = (Array.isArray(linkError) ? linkError : [linkError]) as TaskEmbed['errbacks']
      o.embed = embed
    } else o.embed = undefined
    try {
      plan.routeInto(o, name)
    } catch (error) {
      return Promise.reject(error)
    }
    o.args = args
    o.kwargs = kwargs
    o.replyTo = o.replyTo ?? this.replyTo()
    return sendTaskAs(transport, name, o, this.signals, plan.encoder, this.resultOf)
  }

  /** The first send (or one after close): opens the transport, and the rpc backend, then sends. */
  private async sendWhenOpen(name: string, args: unknown[], kwargs: Record<string, unknown>, options: ApplyOptions): Promise<AsyncResult> {
    await this.transport()
    if (this.config.resultBackend?.startsWith('rpc://')) await this.backend()
    if (!this.openTransport) throw new Error('the app was closed while a send was opening its connection')
    return this.sendOwned(name, args, kwargs, options)
  }

  /**
   * `chain(a.s(1), b.s(), c.s())`: the first task carries the rest (canvas-sends.ts).
   * The result is the last step's: an AsyncResult typed by its task's result
   * when the last signature's type says it (`mul.s(10)`), else an AsyncResult
   * or, for a chain ending in a group, that group's GroupResult.
   */
  chain<R>(...signatures: [...Signature[], Signature<R>]): Promise<ChainResult<R>>
  chain(...signatures: Signature[]): Promise<AsyncResult | GroupResult>
  chain(...signatures: Signature[]): Promise<AsyncResult | GroupResult> {
    return sendChain(this.canvas, signatures)
  }

  /**
   * `group(a.s(1), b.s(2))`: every task sent at once under one group id, each
   * to its own queue or the default; its get() lists their results, typed.
   */
  group<S extends Signature[]>(...signatures: S): Promise<GroupResult<ResultsOf<S>>> {
    return sendGroup(this.canvas, signatures) as Promise<GroupResult<ResultsOf<S>>>
  }

  /**
   * Sends every signature at once (their own queue, or the default): each
   * message is the one `sendTask` would send, and all are written together
   * (one pipeline on Redis, one write per tick on RabbitMQ). Resolves once the
   * broker has confirmed every one; if any was not, rejects with a
   * SendManyError whose `outcomes` say, message by message, which the broker
   * has (`sent`), which it refused and which went with the connection.
   */
  sendMany<S extends Signature[]>(signatures: [...S]): Promise<{ [K in keyof S]: AsyncResult<ResultOf<S[K]>> }> {
    return sendMany(this.canvas, signatures) as Promise<{ [K in keyof S]: AsyncResult<ResultOf<S[K]>> }>
  }

  /**
   * Celery's `Task.add_to_chord(sig)`, for a task that is a header part of a
   * chord, called through `currentTask().addToChord(sig)`.
   */
  addToChord(
    sig: Signature,
    part: { group: string | null; groupIndex: number | null; chord: unknown; rootId: string | null; parentId: string },
  ): Promise<void> {
    return addToChord(this.canvas, sig, part)
  }

  /**
   * `chord([a.s(1), a.s(2)], tsum.s())`: the header tasks, then, once the last
   * of them ends, the body with their results in order (canvas-sends.ts); the
   * result is the body's, typed by its signature.
   */
  chord<R>(header: Signature[], body: Signature<R>): Promise<AsyncResult<R>> {
    return sendChord(this.canvas, header, body) as Promise<AsyncResult<R>>
  }

  /**
   * Runs `fn` holding the lock `name` (docs/locks.md, "One task at a time"):
   * renewed while it runs, freed when it ends; LockedError if another holds it
   * (after `wait` seconds of trying, when given).
   */
  lock<T>(name: string, options: AppLockOptions, fn: (lease: Lease) => T | Promise<T>): Promise<T> {
    return withAppLock(this, name, options, fn)
  }

  asyncResult(id: string): AsyncResult {
    return new AsyncResult(id, this)
  }

  async close(): Promise<void> {
    const backend = this.backendPromise
    const transport = this.transportPromise
    this.backendPromise = undefined
    this.transportPromise = undefined
    this.openTransport = undefined
    this.backendOpen = false
    // Always resolves: a connection that never opened (its error already reached
    // whoever sent) has nothing to close, and a script's `finally { await app.close() }`
    // must not die of the same error again.
    await closeOpened(backend)
    await closeOpened(transport)
    // app.lock()'s store connection would keep a script's event loop alive.
    await closeLockStores().catch(() => undefined)
    await closeDedupStores().catch(() => undefined)
    // So would a worker's cluster rate limits' store.
    await closeRateStores().catch(() => undefined)
    await closeConcurrencyStores().catch(() => undefined)
  }
}

/** Closes a connection that opened; one whose opening failed, or whose close fails, is let go. */
async function closeOpened(opening: Promise<{ close(): Promise<void> }> | undefined): Promise<void> {
  if (!opening) return
  try {
    await (await opening).close()
  } catch {
    // Nothing left to release.
  }
}

export function createApp(options: AppOptions = {}): App {
  return new App(options)
}
