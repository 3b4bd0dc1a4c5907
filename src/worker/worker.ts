// The worker: connects, starts the pool, consumes the task queues, answers the
// mailbox and sends events, then shuts down in Celery's phases. Its lifecycle
// is one state with one way to move (transitionTo), not a set of flags.
import { releaseLostSlotLocks } from '../app/index.js'
import { createResultBackend, RpcResultBackend, type ResultBackend } from '../backends/index.js'
import {
  createTransport,
  LamportClock,
  MailboxClient,
  MailboxServer,
  maskUrl,
  type DeliveriesLost,
  type Transport,
} from '../transport/index.js'
import { BusWorker } from '../bus/index.js'
import { Autoscaler } from './autoscaler.js'
import { connectFirst, notPastBlock, sayBlocked } from './broker-connection.js'
import { ConnectionGuard } from './connection-guard.js'
import { controlHandlers, type ControlTarget, type QueueDeclaration } from './control/control-handlers.js'
import { EventDispatcher } from './events.js'
import { Gossip } from './control/gossip.js'
import { LimitedSet } from './control/limited-set.js'
import type { Pool } from './pools/pool.js'
import { PreforkPool } from './pools/prefork-pool.js'
import { SoloPool } from './pools/solo-pool.js'
import { ThreadsPool } from './pools/threads-pool.js'
import { StateDb } from './control/state-db.js'
import { bootOrder, type Bootstep, type BootstepContext, type BootstepName } from './bootsteps.js'
import type { App } from '../app/index.js'
import { TaskRunner } from './task-path/task-runner.js'
import { brokerInfo, workerConf, workerReport } from './worker-info.js'
import { consumedQueues, type WorkerOptions } from './worker-options.js'
import { TaskConsumers } from './task-consumers.js'
import { taskLabel } from '../protocol/index.js'
import { canMove, type WorkerState } from './worker-states.js'

export { WorkerStates, type WorkerState } from './worker-states.js'

export type { WorkerOptions } from './worker-options.js'

/** How long an async worker_shutdown receiver may hold up the stop. */
const WORKER_SHUTDOWN_RECEIVERS_MS = 4000

export class Worker {
  state: WorkerState = 'CREATED'
  readonly clock = new LamportClock()
  readonly revoked = new LimitedSet()
  readonly startedAt = Date.now()
  private transport!: Transport
  /** broker_write_url's connection when it is not the one consumed from (Celery's connection_for_write): events and the tasks the worker sends. */
  private writer: Transport | undefined
  private backend: ResultBackend | null = null
  private pool!: Pool
  private runner!: TaskRunner
  private events!: EventDispatcher
  private mailbox: MailboxServer | undefined
  /** The task queues' consumers (from the Tasks bootstep on). */
  private consumers: TaskConsumers | undefined
  private autoscaler: Autoscaler | null = null
  private guard: ConnectionGuard | null = null
  private statedb: StateDb | null = null
  private gossip: Gossip | null = null
  /** An events app's side of the worker (src/bus): its topology, handler queues and due retries. */
  private bus: BusWorker | undefined
  private heartbeatTimer: NodeJS.Timeout | undefined
  private stopping: Promise<void> | undefined
  private resolveStopped!: () => void
  /** Resolves when the worker has stopped, by whatever path. */
  readonly stopped = new Promise<void>((resolve) => (this.resolveStopped = resolve))

  constructor(readonly o: WorkerOptions) {}

  get hostname(): string {
    return this.o.hostname
  }

  private transitionTo(next: WorkerState, cause: string): void {
    if (this.state === next) return
    if (!canMove(this.state, next)) throw new Error(`illegal worker transition ${this.state} → ${next} (${cause})`)
    this.o.log.debug(`worker state ${this.state} → ${next} (${cause})`)
    this.state = next
  }

  private get basePrefetch(): number {
    return this.o.prefetchMultiplier * (this.autoscaler?.max ?? this.o.autoscale?.max ?? this.o.concurrency)
  }

  prefetchCount(): number {
    const base = this.guard ? this.guard.reduce(this.basePrefetch) : this.basePrefetch
    return base + (this.runner?.scheduled.size ?? 0)
  }

  private makePool(): Pool {
    const log = (level: 'info' | 'warning' | 'error', message: string) => this.o.log[level](message)
    const size = this.o.autoscale ? Math.max(1, this.o.autoscale.min) : this.o.concurrency
    const slotOptions = {
      size,
      modulePath: this.o.modulePath,
      includePaths: this.o.includePaths,
      nodename: this.o.hostname,
      logfile: this.o.logfile,
      broker: this.o.brokerUrl,
      resultBackend: this.o.resultBackend ?? null,
      brokerReadUrl: this.o.brokerReadUrl,
      brokerWriteUrl: this.o.brokerWriteUrl,
      loglevel: this.o.loglevel,
      redirectStdouts: this.o.redirectStdouts,
      maxTasksPerChild: this.o.maxTasksPerChild,
      maxMemoryPerChild: this.o.maxMemoryPerChild,
      log,
      onLost: (pid: number, threadId?: number) =>
        releaseLostSlotLocks(
          this.o.app,
          { brokerUrl: this.o.brokerUrl, resultBackend: this.o.resultBackend ?? null },
          this.o.hostname,
          pid,
          (m) => this.o.log.warning(m),
          threadId,
        ),
    }
    switch (this.o.pool) {
      case 'prefork':
        return new PreforkPool(slotOptions)
      case 'threads':
        return new ThreadsPool(slotOptions)
      case 'solo':
        return new SoloPool(this.o.app, size, this.o.hostname, (message) => this.o.log.warning(message))
    }
  }

  /** The steps still to start, in order; set by the first call of start() or startBeforeSwap(). */
  private pendingSteps: Array<{ step: Bootstep; run: () => Promise<boolean | void> }> | undefined

  async start(): Promise<void> {
    if (!(await this.runSteps(() => true))) return
    this.transitionTo('RUNNING', 'started')
    this.o.log.info(`${this.o.hostname} ready.`)
    this.o.app.signals.send('worker_ready', { sender: this.o.hostname })
  }

  /**
   * Starts the steps that may run beside a live worker of the same name
   * (bootsteps.ts's `beforeSwap`: the connection, the pool with the app loaded
   * in it...), and stops before the first that may not; start() goes on from
   * there. False when a shutdown came first.
   */
  startBeforeSwap(): Promise<boolean> {
    return this.runSteps((step) => step.beforeSwap === true)
  }

  private async runSteps(allowed: (step: Bootstep) => boolean): Promise<boolean> {
    if (!this.pendingSteps) {
      this.transitionTo('STARTING', 'start')
      // Security settings are read before the broker is touched: a bad key or store stops the worker with one line.
      const decoder = this.o.app.taskDecoder()
      const resultCodec = this.o.app.resultCodec()
      for (const id of this.o.app.securitySettings()?.expired ?? [])
        this.o.log.warning(`Expired certificate in security_cert_store: '${id}' (messages it signed are refused)`)
      // The declared list (bootsteps.ts) decides what starts and in which order; `tsq graph bootsteps` draws the same list.
      const steps = this.bootsteps(decoder, resultCodec)
      this.pendingSteps = bootOrder().map((step) => ({ step, run: steps[step.name] }))
    }
    if (this.state !== 'STARTING') return false
    while (this.pendingSteps.length > 0 && allowed(this.pendingSteps[0]!.step)) {
      const { step, run } = this.pendingSteps.shift()!
      if (step.when && !step.when(this.bootContext())) continue
      this.o.log.debug(`| Worker: Starting ${step.name}`)
      if ((await run()) === false) return false
    }
    return true
  }

  private bootContext(): BootstepContext {
    return {
      options: this.o,
      brokerKind: this.transport?.kind ?? 'amqp',
      hasBus: BusWorker.defaultQueues(this.o.app) !== undefined,
      remoteControl: this.o.app.conf.worker_enable_remote_control !== false,
    }
  }

  /** Each bootstep's start; false stops the start-up (a shutdown came first). */
  private bootsteps(
    decoder: ReturnType<App['taskDecoder']>,
    resultCodec: ReturnType<App['resultCodec']>,
  ): Record<BootstepName, () => Promise<boolean | void>> {
    return {
      Connection: async () => {
        if (!(await this.connectBroker())) return false
        this.o.log.info(`Connected to ${this.transport.connectedUrl ?? maskUrl(this.readUrl)}`)
        // broker_write_url: publishes (results over rpc aside, events, retries) go to their own broker.
        if (this.o.brokerWriteUrl && this.o.brokerWriteUrl !== this.readUrl) {
          this.writer = await createTransport(this.o.brokerWriteUrl, this.o.app.transportSettings)
          sayBlocked(this.writer, this.o.log)
          await this.writer.connect()
          this.o.log.info(`Publishing to ${maskUrl(this.o.brokerWriteUrl)}`)
        }
      },
      // Before anything else starts: a topology the broker refuses stops the worker with one line.
      Bus: async () => {
        this.bus = BusWorker.for(this.o.app, this.transport, this.o.log, this.o.hostname)
        await this.bus?.declare()
      },
      Backend: async () => {
        if (this.o.resultBackend?.startsWith('rpc://')) {
          this.backend = new RpcResultBackend(this.transport, undefined, resultCodec)
        } else if (this.o.resultBackend) {
          const onConnection = (event: 'lost' | 'restored', line: string) =>
            event === 'lost' ? this.o.log.warning(line) : this.o.log.info(line)
          this.backend = await createResultBackend(this.o.resultBackend, { ...this.o.app.backendOptions, codec: resultCodec, onConnection })
        }
      },
      Pool: async () => {
        this.pool = this.makePool()
        await this.pool.start({ eager: this.o.eagerPool })
      },
      Events: async () => {
        this.events = new EventDispatcher(
          this.writer ?? this.transport,
          this.o.hostname,
          this.clock,
          { taskEvents: this.o.taskEvents },
          (e) => this.o.log.debug(`event not sent: ${e.message}`),
        )
      },
      Tasks: async () => {
        this.runner = new TaskRunner({
          app: this.o.app,
          decoder,
          transport: this.writer ?? this.transport,
          pool: this.pool,
          backend: this.backend,
          events: this.events,
          revoked: this.revoked,
          log: this.o.log,
          hostname: this.o.hostname,
          acksLate: this.o.acksLate,
          timeLimit: this.o.timeLimit,
          softTimeLimit: this.o.softTimeLimit,
          onScheduledChange: () => void this.applyPrefetch(),
          onTaskDone: () => this.guard?.taskDone(),
          etaDelay: this.o.etaDelay,
        })
        this.consumers = new TaskConsumers({
          options: this.o,
          transport: this.transport,
          bus: () => this.bus,
          deliver: (d) => this.runner.onDelivery(d),
          prefetchCount: () => this.prefetchCount(),
          running: () => this.state === 'RUNNING',
        })
        this.transport.on('deliveries:lost', (lost) => this.onDeliveriesLost(lost))
      },
      ConnectionGuard: async () => {
        this.guard = this.makeGuard()
        this.guard.start()
      },
      StateDB: async () => {
        this.statedb = new StateDb(this.o.statedb!, this.revoked, this.clock, (m) => this.o.log.warning(m))
        this.statedb.load()
        this.statedb.startPeriodicSave()
      },
      Autoscaler: async () => {
        this.autoscaler = new Autoscaler({
          ...this.o.autoscale!,
          pool: this.pool,
          qty: () => this.runner.active.size + this.runner.reserved.length,
          log: (m) => this.o.log.info(m),
          onRangeChange: () => void this.applyPrefetch(),
        })
      },
      Control: async () => {
        this.mailbox = new MailboxServer(
          this.transport,
          this.o.hostname,
          controlHandlers(this.controlTarget()),
          this.clock,
          undefined,
          (e) => this.o.log.error(`mailbox: ${e.message}`),
        )
        await this.mailbox.start()
      },
      Mingle: () => this.mingle(),
      Gossip: async () => {
        this.gossip = new Gossip(this.transport, this.o.hostname, this.clock, this.o.log)
        await this.gossip.start()
      },
      Consumer: async () => {
        for (const queue of consumedQueues(this.o)) await this.addConsumer(queue)
        this.bus?.start()
        this.autoscaler?.start()
      },
      Heart: async () => {
        // Sent, but not waited for past a broker alarm: the worker consumes and acks meanwhile.
        await notPastBlock(this.writer ?? this.transport, this.sendHeartbeat('worker-online'))
        this.heartbeatTimer = setInterval(() => void this.sendHeartbeat('worker-heartbeat'), this.o.heartbeatInterval * 1000)
      },
    }
  }

  private readonly startAborted = new AbortController()

  private get readUrl(): string {
    return this.o.brokerReadUrl ?? this.o.brokerUrl
  }

  /** The first connection (broker-connection.ts); false when a shutdown came first. */
  private async connectBroker(): Promise<boolean> {
    const transport = await connectFirst({
      url: this.readUrl,
      // The solo pool runs tasks on the thread that reads the claims, which is where overlapping claims pays (transport/redis/tricks/claim-overlap.ts).
      // separatePublisher: events, results and replies publish on a connection of their own, so a RabbitMQ alarm blocking them leaves acks and consuming alone.
      settings: { ...this.o.app.transportSettings, overlapClaims: this.o.pool === 'solo', separatePublisher: true },
      log: this.o.log,
      starting: () => this.state === 'STARTING',
      aborted: this.startAborted.signal,
    })
    if (!transport) return false
    this.transport = transport
    this.transport.on('error', (e) => this.o.log.error(`broker: ${e.message}`))
    sayBlocked(transport, this.o.log)
    return true
  }

  /** Celery's Heart sends heartbeat_sent with each of its events. */
  private sendHeartbeat(type: 'worker-online' | 'worker-heartbeat' | 'worker-offline'): Promise<void> {
    this.o.app.signals.send('heartbeat_sent', { sender: this.o.hostname })
    return this.events.sendWorker(type, this.heartbeatState())
  }

  private heartbeatState() {
    return { freq: this.o.heartbeatInterval, active: this.runner.active.size, processed: this.runner.processed }
  }

  /** Celery's mingle: ask the peers for their revoked ids and clock at start-up. */
  private async mingle(): Promise<void> {
    const client = new MailboxClient(this.transport, undefined, this.clock)
    const replies = await client
      .broadcast('hello', { arguments: { from_node: this.o.hostname, revoked: this.revoked.toWire() }, timeout: 1.0 })
      .catch(() => [])
    let peers = 0
    for (const reply of replies) {
      for (const [node, body] of Object.entries(reply)) {
        if (node === this.o.hostname || !body || typeof body !== 'object') continue
        peers += 1
        const b = body as { revoked?: Record<string, unknown>; clock?: number }
        this.revoked.merge(b.revoked)
        this.clock.adjust(b.clock)
      }
    }
    this.o.log.info(peers ? `mingle: sync with ${peers} nodes` : 'mingle: all alone')
  }

  private async applyPrefetch(): Promise<void> {
    await this.consumers?.applyPrefetch()
  }

  async addConsumer(decl: QueueDeclaration): Promise<void> {
    await this.consumers?.add(decl)
  }

  private makeGuard(): ConnectionGuard {
    return new ConnectionGuard({
      transport: this.transport,
      log: this.o.log,
      cancelLongRunningOnLoss: this.o.cancelLongRunningOnLoss,
      prefetchReduction: this.o.prefetchReduction,
      activeRequests: () => [...this.runner.active.values()],
      isAcksLate: (r) => this.o.app.tasks.get(r.name)?.options.acksLate ?? this.o.acksLate,
      cancel: (r) => {
        r.restored = true
        this.pool.terminate(r.id, 'SIGKILL')
      },
      consumers: () => this.consumers?.watched() ?? [],
      held: () => this.runner.active.size + this.runner.reserved.length + this.runner.scheduled.size,
      prefetchCount: () => this.prefetchCount(),
      basePrefetch: () => this.basePrefetch,
      applyPrefetch: () => this.applyPrefetch(),
    })
  }

  /**
   * The broker took back what one consumer's channel held: the held copies go
   * at once (it delivers them again). An ack timeout (RabbitMQ's
   * consumer_timeout) is one warning naming the task held longest, and from
   * then on ETAs that far away go to the broker's delayed delivery.
   */
  private onDeliveriesLost(lost: DeliveriesLost): void {
    const dropped = this.runner.dropLost()
    if (dropped.length > 0) {
      this.o.log.info(
        `Dropped ${dropped.length} held task(s) of ${lost.queue} (waiting for an ETA, a rate limit or a pool slot): the broker took them back with their channel and delivers them again`,
      )
      void this.applyPrefetch()
    }
    if (lost.ackTimeoutMs === undefined) return
    const held = [
      ...dropped,
      ...[...this.runner.active.values()].filter((r) => r.delivery.queue === lost.queue && r.delivery.isLive?.() === false),
    ]
    const oldest = held.sort((a, b) => a.receivedAt - b.receivedAt)[0]
    const timeout = lost.ackTimeoutMs > 0 ? `${lost.ackTimeoutMs / 1000} s` : 'its length not given'
    const policy = this.o.etaDelay
    if (lost.ackTimeoutMs > 0)
      policy.afterSeconds = Math.min(policy.afterSeconds, Math.max(1, Math.floor((lost.ackTimeoutMs / 1000) * 0.8)))
    const what = oldest ? `Task ${taskLabel(oldest.name, oldest.id)}` : `A delivery of ${lost.queue}`
    const advice =
      policy.enabled && this.transport.publishDelayed
        ? `ETAs more than ${policy.afterSeconds} s away now wait in the broker's delayed delivery instead of in this worker.`
        : `Raise RabbitMQ's consumer_timeout above the longest countdown, or turn on worker_eta_broker_delay.`
    this.o.log.warning(
      `${what} was held unacknowledged past RabbitMQ's consumer_timeout (${timeout}): the broker closed its channel and delivers it again; the worker goes on. ${advice}`,
    )
  }

  async cancelConsumer(queue: string): Promise<void> {
    await this.consumers?.cancel(queue)
  }

  /** Built once the pool, runner and events exist (the mailbox starts after them). */
  private controlTarget(): ControlTarget {
    return {
      hostname: this.o.hostname,
      app: this.o.app,
      clock: this.clock,
      runner: this.runner,
      pool: this.pool,
      revoked: this.revoked,
      events: this.events,
      startedAt: this.startedAt,
      prefetchCount: () => this.prefetchCount(),
      brokerInfo: () => brokerInfo(this.o, this.transport),
      conf: (withDefaults: boolean) => workerConf(this.o, this.events.taskEvents, withDefaults),
      queues: () => this.consumers?.declarations ?? [],
      addConsumer: (q: QueueDeclaration) => this.addConsumer(q),
      cancelConsumer: (q: string) => this.cancelConsumer(q),
      autoscale: this.o.autoscale ? this.autoscaleControl() : undefined,
      // Celery logs the command's msg argument itself, 'Got shutdown from remote' by default.
      shutdown: (message: string) => {
        this.o.log.warning(message)
        void this.shutdown('warm', 'remote shutdown')
      },
      report: () => workerReport(this.o, this.transport.kind),
    }
  }

  private autoscaleControl(): NonNullable<ControlTarget['autoscale']> {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the getters below have the returned object as `this`
    const self = this
    return {
      get max() {
        return self.autoscaler?.max ?? 0
      },
      get min() {
        return self.autoscaler?.min ?? 0
      },
      set: (max: number, min: number) => this.autoscaler?.set(max, min),
      info: () => this.autoscaler?.info() ?? {},
    }
  }

  /**
   * Warm: stop consuming, hand back what has not started, let running tasks finish.
   * Soft: the same within --soft-shutdown-timeout, then cold. Cold: cancel the
   * running tasks and restore their messages. Each call may only escalate.
   */
  shutdown(mode: 'warm' | 'soft' | 'cold', cause: string): Promise<void> {
    this.startAborted.abort()
    if (this.state === 'STOPPED') return this.stopped
    if (this.state === 'CREATED') {
      this.transitionTo('STOPPED', cause)
      this.resolveStopped()
      return this.stopped
    }
    if (mode === 'soft') {
      const idle = !this.runner || (this.runner.active.size === 0 && this.runner.scheduled.size === 0)
      if (this.o.softShutdownTimeout <= 0 || (idle && !this.o.softShutdownOnIdle)) mode = 'cold'
    }
    const target: WorkerState = mode === 'warm' ? 'WARM_SHUTDOWN' : mode === 'soft' ? 'SOFT_SHUTDOWN' : 'COLD_SHUTDOWN'
    if (!canMove(this.state, target)) return this.stopping ?? this.stopped
    this.transitionTo(target, cause)
    this.o.app.signals.send('worker_shutting_down', {
      sender: this.o.hostname,
      sig: cause.startsWith('SIG') ? cause : null,
      how: mode === 'warm' ? 'Warm' : mode === 'soft' ? 'Soft' : 'Cold',
    })
    if (mode === 'soft') {
      this.softDeadline = Date.now() + this.o.softShutdownTimeout * 1000
      this.o.log.console(`worker: Initiating Soft Shutdown, terminating in ${this.o.softShutdownTimeout} seconds`)
      this.softTimer = setTimeout(() => void this.shutdown('cold', 'soft shutdown timeout'), this.o.softShutdownTimeout * 1000)
    }
    if (mode === 'cold') {
      if (this.softTimer) clearTimeout(this.softTimer)
      void this.cancelRunningTasks()
    }
    this.stopping ??= this.stopSequence()
    return this.stopping
  }

  /**
   * Closes what startBeforeSwap() started, without a word under the worker's
   * name (no events, no shutdown signals): a live worker of that name may
   * still be running. Nothing was consumed yet, so nothing is given back.
   */
  async discard(): Promise<void> {
    this.startAborted.abort()
    this.guard?.stop()
    await this.pool?.close({ cold: true }).catch(() => undefined)
    await this.backend?.close().catch(() => undefined)
    await this.transport?.close({ requeueUnacked: true }).catch(() => undefined)
    await this.writer?.close().catch(() => undefined)
    this.transitionTo('STOPPED', 'discarded')
    this.resolveStopped()
  }

  /** QUIT during soft shutdown: the tasks go, the soft window still runs out. */
  cancelTasksKeepWindow(): void {
    this.cancelledDuringSoft = true
    void this.cancelRunningTasks()
  }

  private softTimer: NodeJS.Timeout | undefined
  private softDeadline = 0
  private cancelledDuringSoft = false

  private readonly beforeStopHooks: Array<() => Promise<void>> = []

  /**
   * Starts `hook` first thing in any shutdown, warm or cold (an embedded beat
   * stops sending there); the worker's own steps do not wait for it, the
   * final stop does.
   */
  beforeStop(hook: () => Promise<void>): void {
    this.beforeStopHooks.push(hook)
  }

  private async stopSequence(): Promise<void> {
    const hooksDone = Promise.all(
      this.beforeStopHooks.splice(0).map((hook) => hook().catch((e: Error) => this.o.log.error(`shutdown: ${e.message}`))),
    )
    await this.consumers?.cancelAll()
    const handedBack = await this.runner?.releaseUnstarted()
    if (handedBack) this.o.log.info(`Returned ${handedBack} prefetched message(s) to the broker`)
    await this.runner?.idle()
    if (this.state === 'SOFT_SHUTDOWN' && (this.o.softShutdownOnIdle || this.cancelledDuringSoft)) {
      const left = this.softDeadline - Date.now()
      if (left > 0) await new Promise((r) => setTimeout(r, left))
    }
    if (this.softTimer) clearTimeout(this.softTimer)
    await hooksDone
    await this.finalStop()
  }

  /** Cold: running tasks are killed and their messages go back to the queue. */
  private async cancelRunningTasks(): Promise<void> {
    if (!this.runner) return
    const { requests, handedBack } = this.runner.handBackRunning()
    if (requests.length) this.o.log.console(`Restoring ${requests.length} unacknowledged message(s)`)
    await handedBack
    for (const r of requests) this.pool.terminate(r.id, 'SIGKILL')
  }

  private finalized = false
  private async finalStop(): Promise<void> {
    if (this.finalized) return this.stopped
    this.finalized = true
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer)
    // An async receiver (a metrics flush) finishes while the pool and connections are still up.
    await this.o.app.signals.sendAndWait('worker_shutdown', { sender: this.o.hostname }, WORKER_SHUTDOWN_RECEIVERS_MS)
    this.autoscaler?.stop()
    this.guard?.stop()
    this.statedb?.close()
    if (this.o.heartbeat && this.events) await notPastBlock(this.writer ?? this.transport, this.sendHeartbeat('worker-offline'))
    if (this.events) await notPastBlock(this.writer ?? this.transport, this.events.flush())
    await this.pool?.close({ cold: this.state === 'COLD_SHUTDOWN' }).catch(() => undefined)
    await this.gossip?.stop()
    await this.bus?.stop()
    // The mailbox goes last, so `inspect active` answers while the worker drains.
    await this.mailbox?.stop().catch(() => undefined)
    await this.backend?.close().catch(() => undefined)
    await this.transport?.close({ requeueUnacked: true }).catch(() => undefined)
    await this.writer?.close().catch(() => undefined)
    this.transitionTo('STOPPED', 'stopped')
    this.resolveStopped()
  }

  get runnerForSignals(): TaskRunner {
    return this.runner
  }

  get poolForSignals(): Pool {
    return this.pool
  }

  /** What the health probes read (worker-health.ts): the broker connection, and whether it is up. */
  get probeView(): { transport: Transport | undefined; connected: boolean } {
    return { transport: this.transport, connected: this.guard?.connected !== false }
  }
}
