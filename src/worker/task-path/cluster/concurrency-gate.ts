// Concurrency per key, the worker's side (the store's is locks/concurrency.ts;
// docs/concurrency-keys.md). A keyed task's message from the broker runs at
// once when its key has a free slot and no backlog; else it is parked at the
// back of its key's sub-queue and acked, so the broker's next message (maybe
// another key's) comes in. A worker with room claims parked messages, keys in
// turn, and runs each as a delivery of its own, acked in the store. A slot is
// a lease renewed while its task is held here, freed when the run is over.
import { lockSettings } from '../../../app/index.js'
import {
  concurrencyRule,
  concurrencyStoreAt,
  concurrencyUrlFor,
  type ClaimedEntry,
  type ConcurrencyRule,
  type ConcurrencyScopeStats,
  type ConcurrencyStore,
} from '../../../locks/index.js'
import { DEFAULT_MESSAGE_LIMITS, decodeTaskMessage, taskLabel, type TaskRequest } from '../../../protocol/index.js'
import { decodeEnvelope, encodeEnvelope, type Delivery } from '../../../transport/index.js'
import { decompress } from '../admission.js'
import type { Request } from '../request.js'
import type { RunnerOptions } from '../runner-options.js'

/** How often a worker with room looks for parked messages another worker parked. */
const CLAIM_POLL_MS = 200

interface Slot {
  rule: ConcurrencyRule
  token: number
  taskId: string
  /** The run is over, or the request is no longer held here. */
  done: boolean
  /** A claimed message only: settled (acked or rejected) in the store. */
  settled: boolean
  released: boolean
}

export interface GateHost {
  /** The request this worker holds for a task id (running, reserved, waiting for its ETA). */
  held(id: string): Request | undefined
  /** Free pool slots less what is reserved: how many more requests may come in now. */
  room(): number
  /** The task path's own entry for a delivery (admission). */
  admit(delivery: Delivery): void | Promise<void>
}

export class ConcurrencyGate {
  private readonly rules = new Map<string, ConcurrencyRule>()
  private store: Promise<ConcurrencyStore> | null = null
  /** Slots held here, by the delivery whose request runs in it. */
  private readonly slots = new Map<Delivery, Slot>()
  private readonly renewers = new Map<string, NodeJS.Timeout>()
  private poller: NodeJS.Timeout | undefined
  private claiming = false
  private stopped = false
  /** Where the next claim starts among the scopes, so each scope gets its turn too. */
  private nextRule = 0
  private lastSaid = ''

  constructor(
    private readonly o: RunnerOptions,
    private readonly host: GateHost,
  ) {
    for (const [name, task] of o.app.tasks) {
      const rule = concurrencyRule(name, task.fn, task.options.concurrency, o.app.conf.task_concurrency)
      if (rule) this.rules.set(name, rule)
    }
    if (this.rules.size === 0) return
    const url = concurrencyUrlFor(lockSettings(o.app))
    this.store = concurrencyStoreAt(url)
    this.store.catch((e: Error) => o.log.error(`concurrency limits: store ${url} unavailable: ${e.message}`))
    this.poller = setInterval(() => void this.claim(), CLAIM_POLL_MS)
    this.poller.unref()
    for (const rule of new Map([...this.rules.values()].map((r) => [r.scope, r])).values()) {
      const timer = setInterval(() => void this.renew(rule), Math.max(50, Math.floor(rule.leaseMs / 3)))
      timer.unref()
      this.renewers.set(rule.scope, timer)
    }
  }

  /** The rule of a delivery's task (by its header), or null: not limited, straight to admission. */
  ruleOf(delivery: Delivery): ConcurrencyRule | null {
    if (this.store === null) return null
    const name = delivery.properties.headers?.task
    return typeof name === 'string' ? (this.rules.get(name) ?? null) : null
  }

  /** A keyed task's message from the broker: a slot and on to admission, or parked and acked. */
  async receive(delivery: Delivery, rule: ConcurrencyRule): Promise<void> {
    // Shutting down: not run unlimited, not parked either; the broker gives it to another worker.
    if (this.stopped) return delivery.reject({ requeue: true })
    let message: TaskRequest
    let key: string | null
    try {
      message = decodeTaskMessage({
        headers: delivery.properties.headers,
        body: decompress(delivery, this.o.decoder?.limits?.maxBytes ?? DEFAULT_MESSAGE_LIMITS.maxBytes),
        contentType: delivery.properties.contentType,
        contentEncoding: delivery.properties.contentEncoding,
        ...(this.o.decoder ? { decoder: this.o.decoder } : {}),
      })
      key = rule.keyOf(message.args, message.kwargs)
    } catch (error) {
      // Admission says why it cannot be read; a key function that throws leaves the run unlimited, said once per message.
      if (!(error instanceof Error && 'code' in error))
        this.o.log.warning(`concurrency key of ${rule.task}: ${(error as Error).message}; run unlimited`)
      return this.host.admit(delivery)
    }
    // A second copy of a task held here is admission's to settle (a retry, sent before its first run ends, is not).
    if (key === null || this.host.held(message.id)?.message.retries === message.retries) return this.host.admit(delivery)
    const entry = {
      id: message.id,
      queue: delivery.queue,
      envelope: encodeEnvelope(delivery.exchange, delivery.routingKey, { body: delivery.body, properties: delivery.properties }),
    }
    let admitted: Awaited<ReturnType<ConcurrencyStore['admit']>>
    try {
      admitted = await (await this.store!).admit(rule, key, entry)
    } catch (error) {
      // Not run unlimited: back to the broker after a pause, as a task whose lock store is down.
      this.say(
        `concurrency limits: store unavailable (${(error as Error).message}); ${taskLabel(message.task, message.id)} goes back to its queue`,
      )
      await new Promise((resolve) => setTimeout(resolve, 1000))
      return delivery.reject({ requeue: true })
    }
    if (!admitted.run) {
      if (this.o.log.enabled('DEBUG'))
        this.o.log.debug(`Task ${taskLabel(message.task, message.id)} parked: key ${JSON.stringify(key)} is at its limit of ${rule.limit}`)
      await delivery.ack()
      this.kick()
      return
    }
    this.hold(delivery, { rule, token: admitted.token, taskId: message.id, done: false, settled: true, released: false })
    await this.host.admit(delivery)
    this.checkHeld(delivery)
  }

  private hold(delivery: Delivery, slot: Slot): void {
    this.slots.set(delivery, slot)
  }

  /** Right after admission: a request discarded or settled there (revoked, expired, a duplicate) holds no slot. */
  private checkHeld(delivery: Delivery): void {
    const slot = this.slots.get(delivery)
    if (slot && this.host.held(slot.taskId)?.delivery !== delivery) this.finish(delivery, slot)
  }

  /** The run of a request is over (outcomes' release): its slot is freed once its message is settled too. */
  done(request: Request): void {
    const slot = this.slots.get(request.delivery)
    if (slot) this.finish(request.delivery, slot)
    this.kick()
  }

  private finish(delivery: Delivery, slot: Slot): void {
    slot.done = true
    if (slot.settled) this.release(delivery, slot)
  }

  private release(delivery: Delivery, slot: Slot): void {
    if (slot.released) return
    slot.released = true
    this.slots.delete(delivery)
    if (this.stopped && this.slots.size === 0) this.stopRenewing()
    void this.store!.then((s) => s.release(slot.rule, slot.token)).then(
      () => this.kick(),
      (e: Error) =>
        this.o.log.warning(
          `concurrency slot ${slot.token} of ${slot.rule.scope}: release failed (its lease runs out instead): ${e.message}`,
        ),
    )
  }

  /** Looks for parked work soon (a slot was freed, or something was parked). */
  private kick(): void {
    if (this.store !== null && !this.stopped) queueMicrotask(() => void this.claim())
  }

  /** While there is room: the next parked message, scopes and keys in turn, in as a delivery of its own. */
  private async claim(): Promise<void> {
    if (this.claiming || this.stopped || this.store === null) return
    this.claiming = true
    try {
      const store = await this.store
      const rules = [...this.rules.values()]
      let idle = 0
      while (!this.stopped && this.host.room() > 0 && idle < rules.length) {
        const rule = rules[this.nextRule++ % rules.length]!
        const got = await store.claim(rule)
        if (!got) {
          idle += 1
          continue
        }
        idle = 0
        await this.runClaimed(store, rule, got)
      }
    } catch (error) {
      this.say(`concurrency limits: claim failed: ${(error as Error).message}`)
    } finally {
      this.claiming = false
    }
  }

  private async runClaimed(store: ConcurrencyStore, rule: ConcurrencyRule, got: ClaimedEntry): Promise<void> {
    if (this.stopped) return store.requeue(rule, got.token)
    const message = decodeEnvelope(got.envelope)
    const slot: Slot = { rule, token: got.token, taskId: got.id, done: false, settled: false, released: false }
    const delivery: Delivery = {
      body: message.body,
      properties: message.properties,
      exchange: message.exchange,
      routingKey: message.routingKey,
      queue: got.queue,
      redelivered: false,
      deliveryTag: `concurrency:${rule.scope}:${got.token}`,
      ack: async () => {
        slot.settled = true
        await store.ack(rule, got.token)
        if (slot.done) this.release(delivery, slot)
      },
      reject: async ({ requeue }) => {
        slot.settled = true
        if (requeue) {
          // Back to the front of its key's backlog, slot and all, in one step.
          slot.released = true
          this.slots.delete(delivery)
          await store.requeue(rule, got.token)
          return
        }
        await store.ack(rule, got.token)
        if (slot.done) this.release(delivery, slot)
      },
    }
    this.hold(delivery, slot)
    // Not awaited: the claims go on while this one runs.
    const admitted = this.host.admit(delivery)
    if (admitted)
      void admitted.then(
        () => this.checkHeld(delivery),
        () => this.checkHeld(delivery),
      )
    else this.checkHeld(delivery)
  }

  /** Every third of the lease: the slots held here renewed; one lost (a stall past its lease) is said and forgotten. */
  private async renew(rule: ConcurrencyRule): Promise<void> {
    const mine = [...this.slots].filter(([, s]) => s.rule.scope === rule.scope && !s.released)
    // A request no longer held here (dropped when its delivery was taken back) holds no slot.
    for (const [delivery, slot] of mine) if (!slot.done && this.host.held(slot.taskId)?.delivery !== delivery) this.finish(delivery, slot)
    const live = mine.filter(([, s]) => !s.released)
    if (live.length === 0) return
    try {
      const store = await this.store!
      const lost = new Set(
        await store.renew(
          rule,
          live.map(([, s]) => s.token),
        ),
      )
      for (const [delivery, slot] of live) {
        if (!lost.has(slot.token)) continue
        this.slots.delete(delivery)
        slot.released = true
        this.o.log.warning(
          `Task ${taskLabel(rule.task, slot.taskId)}: its concurrency slot (key of ${rule.scope}, token ${slot.token}) was lost: its lease ran out`,
        )
      }
    } catch (error) {
      this.o.log.warning(`concurrency limits: renewal failed (retried within the lease): ${(error as Error).message}`)
    }
  }

  /** Each scope's keys, as `inspect concurrency` shows them. */
  async stats(): Promise<ConcurrencyScopeStats[]> {
    if (this.store === null) return []
    const store = await this.store
    const scopes = [...new Set([...this.rules.values()].map((r) => r.scope))].sort()
    return (await Promise.all(scopes.map((s) => store.stats(s)))).flat()
  }

  /** A store that stays down is said once, not at every poll. */
  private say(line: string): void {
    if (line === this.lastSaid) return
    this.lastSaid = line
    this.o.log.warning(line)
  }

  /** Shutdown: nothing more is claimed; held slots are released as their runs end. */
  stop(): void {
    this.stopped = true
    if (this.poller) clearInterval(this.poller)
    if (this.slots.size === 0) this.stopRenewing()
  }

  /** After shutdown handed back what had not started: their slots are freed now, not when their leases run out. */
  freeUnheld(): void {
    for (const [delivery, slot] of [...this.slots]) if (this.host.held(slot.taskId)?.delivery !== delivery) this.finish(delivery, slot)
    if (this.stopped && this.slots.size === 0) this.stopRenewing()
  }

  private stopRenewing(): void {
    for (const timer of this.renewers.values()) clearInterval(timer)
    this.renewers.clear()
  }
}
