// The entry point of a pool slot (a prefork child or a worker thread): load the
// user's module once, then run the jobs the worker sends, one at a time, in
// the order sent. The worker may send jobs while one runs (a few, staged): the
// slot goes on to the next as soon as one ends, without a round trip, and
// hands the outcomes back in batches.
import '../young-generation-first.js'
import { closeSync, openSync } from 'node:fs'
import { parentPort, workerData, isMainThread } from 'node:worker_threads'
import { announceProcessInit, loadApp, executeJob, unsendableOutcome, type RunningJob, type Job, type Outcome } from '../../app/index.js'
import { trimMemoryWhenIdle } from '../memory-footprint.js'
import { withToJSONApplied } from './wire-value.js'
import { unpackJobs, type FromSlot, type ToSlot } from './slot-messages.js'
import type { SlotData, SlotInit } from './slot-entry.js'
import { Logger } from '../../process/index.js'
import { nodeFormat } from '../../protocol/index.js'
import { redirectConsole } from '../redirect-stdouts.js'
import { surviveStrayErrors } from '../stray-errors.js'

/** A prefork child's data is the first message on its IPC channel (never its environment: it holds the broker's password). */
function slotInit(): Promise<SlotData> {
  return new Promise((resolve) => {
    const onInit = (message: unknown): void => {
      if ((message as SlotInit | null)?.type !== 'slot-init') return
      process.off('message', onInit)
      resolve((message as SlotInit).data)
    }
    process.on('message', onInit)
  })
}

const data: SlotData = isMainThread ? await slotInit() : (workerData as SlotData)
// A process started ahead of its pool (prefork-pool.ts's startSlotsAhead) learns its index only now.
if (isMainThread) process.env.TSQ_POOL_INDEX = String(data.index)

/** Throws at once (nothing sent) when a message cannot be cloned. */
function send(batch: FromSlot[]): void {
  if (isMainThread) process.send?.(batch)
  else parentPort?.postMessage(batch)
}

function onMessage(listener: (batch: ToSlot[]) => void): void {
  if (isMainThread) process.on('message', listener as (m: unknown) => void)
  else parentPort?.on('message', listener)
}

// ---- the outbox: what goes to the worker, in order, one crossing per turn ----

/** Outcomes held at most this long while the slot runs more jobs of a batch. */
const FLUSH_AFTER_MS = 2
let outbox: FromSlot[] = []
let outboxSince = 0
let flushQueued = false

function post(message: FromSlot): void {
  if (outbox.length === 0) outboxSince = performance.now()
  outbox.push(message)
  if (!flushQueued) {
    flushQueued = true
    setImmediate(flush)
  }
}

/** A success joins the 'succeeded' run at the end of the outbox, or starts one. */
function postSucceeded(id: string, value: unknown, runtime: number): void {
  const last = outbox[outbox.length - 1]
  if (last?.type === 'succeeded') last.items.push(id, value, runtime)
  else post({ type: 'succeeded', items: [id, value, runtime] })
}

function flush(): void {
  flushQueued = false
  if (outbox.length === 0) return
  const batch = outbox
  outbox = []
  try {
    send(batch)
  } catch (error) {
    // One outcome that cannot be cloned (a result holding a function) must not take the others with it.
    for (const message of batch) {
      if (message.type === 'succeeded') {
        for (let i = 0; i < message.items.length; i += 3)
          sendOutcome(
            message.items[i] as string,
            { status: 'success', value: message.items[i + 1], runtime: message.items[i + 2] as number },
            error,
          )
        continue
      }
      try {
        send([message])
      } catch (itemError) {
        if (message.type === 'done') sendOutcome(message.id, message.outcome, itemError, message.rss)
      }
    }
  }
}

/** One outcome on its own; in its place, when it cannot be cloned, the failure the worker would record for it (nothing went out: the worker still waits for it). */
function sendOutcome(id: string, outcome: Outcome, error: unknown, rss?: number): void {
  try {
    send([{ type: 'done', id, outcome, rss }])
  } catch (itemError) {
    send([{ type: 'done', id, outcome: unsendableOutcome(outcome, itemError ?? error), rss }])
  }
}

trimMemoryWhenIdle()
// Celery's log lines name a prefork child ForkPoolWorker-N; its threads pool runs in MainProcess.
const slotLogfile = data.logfile ? nodeFormat(data.logfile, data.nodename, data.index) : null
// Created at start, as each Celery child opens its own (%i/%I) log file then, not at its first line.
if (slotLogfile) closeSync(openSync(slotLogfile, 'a'))
const slotLog = new Logger(data.loglevel, slotLogfile, isMainThread ? `ForkPoolWorker-${data.index}` : 'MainProcess')
if (data.redirectStdouts) redirectConsole(slotLog, data.redirectStdouts)
surviveStrayErrors((message) => slotLog.error(message))
/** What a slot gives async worker_process_shutdown receivers: the pool kills a slot 3 s after asking it to exit. */
const SHUTDOWN_RECEIVERS_MS = 2500
/** Sent, not started yet. */
const queue: Job[] = []
/** The job running across turns (a task that returned a promise). */
let current: { id: string; job: RunningJob } | null = null
/** An ended task whose end hooks this slot holds: the next job waits for the worker's 'stored'. */
let waitingFor: string | null = null
/** Ended tasks whose end hooks wait for the worker's 'stored'. */
const holding = new Map<string, RunningJob>()
/** Over --max-memory-per-child: no more jobs; the worker replaces this slot. */
let draining = false
let exiting = false

/** updateState() from a task in this slot: the worker stores it before the task's outcome, which follows on the same channel. */
function sendState(id: string, state: string, meta: unknown): void {
  // Sent at once, behind what is queued, so a meta that cannot be cloned fails its own updateState().
  flush()
  send([{ type: 'state', id, state, meta: withToJSONApplied(meta) }])
}

try {
  const app = await loadApp(data.modulePath, data.includePaths)
  app.configure({
    broker: data.broker,
    resultBackend: data.resultBackend ?? undefined,
    brokerRead: data.brokerReadUrl,
    brokerWrite: data.brokerWriteUrl,
  })
  const slot = { sender: data.nodename, pid: process.pid, index: data.index }
  const maxKiB = data.maxMemoryPerChild

  const ended = (id: string, job: RunningJob, outcome: Outcome): void => {
    if (outcome.endHooks) {
      holding.set(id, job)
      waitingFor = id
    }
    const value = outcome.status === 'success' ? withToJSONApplied(outcome.value) : undefined
    // The flat batch of successes carries no trace context (src/tracing/): a traced run goes as a whole outcome.
    if (outcome.status === 'success' && !outcome.endHooks && !outcome.trace && maxKiB === undefined)
      postSucceeded(id, value, outcome.runtime)
    else {
      const handedOver = outcome.status === 'success' && value !== outcome.value ? { ...outcome, value } : outcome
      const done: FromSlot = { type: 'done', id, outcome: handedOver }
      if (maxKiB !== undefined) {
        done.rss = process.memoryUsage.rss()
        if (done.rss / 1024 > maxKiB) stopTaking()
      }
      post(done)
    }
    if (performance.now() - outboxSince > FLUSH_AFTER_MS) flush()
  }

  const pump = (): void => {
    while (current === null && waitingFor === null && queue.length > 0 && !exiting) {
      const job = queue.shift()!
      const running = executeJob(app, job, sendState, { holdEndHooks: true })
      if (running.immediate) {
        ended(job.id, running, running.immediate)
        continue
      }
      current = { id: job.id, job: running }
      void running.outcome.then((outcome) => {
        current = null
        ended(job.id, running, outcome)
        pump()
      })
    }
  }

  /** Gives back every job not started; from now on jobs that arrive go back too. */
  const stopTaking = (): void => {
    draining = true
    if (queue.length > 0) post({ type: 'unstaged', ids: queue.splice(0).map((j) => j.id), reply: false })
  }

  const unstage = (ids: string[]): void => {
    const wanted = new Set(ids)
    const taken = queue.filter((j) => wanted.has(j.id))
    if (taken.length > 0) queue.splice(0, queue.length, ...queue.filter((j) => !wanted.has(j.id)))
    post({ type: 'unstaged', ids: taken.map((j) => j.id), reply: true })
    flush()
  }

  const exit = async (): Promise<void> => {
    if (exiting) return
    exiting = true
    flush()
    // Hooks still held at exit (a cold shutdown) run late rather than never.
    for (const job of holding.values()) job.releaseEndHooks()
    // Inside the 3 s the pool gives a slot to exit before it is killed.
    await app.signals.sendAndWait('worker_process_shutdown', slot, SHUTDOWN_RECEIVERS_MS)
    process.exit(0)
  }

  onMessage((batch) => {
    for (const message of batch) {
      switch (message.type) {
        case 'packed-jobs':
        case 'jobs': {
          const jobs = message.type === 'jobs' ? message.jobs : unpackJobs(message)
          if (draining || exiting) post({ type: 'unstaged', ids: jobs.map((j) => j.id), reply: false })
          else for (const job of jobs) queue.push(job)
          break
        }
        case 'stored':
          holding.get(message.id)?.releaseEndHooks()
          holding.delete(message.id)
          if (waitingFor === message.id) waitingFor = null
          break
        case 'abort':
          if (current?.id === message.id) current.job.abort(message.reason)
          break
        case 'unstage':
          unstage(message.ids)
          break
        case 'exit':
          void exit()
      }
    }
    // After the whole crossing: a job asked back in it is given back, not started.
    pump()
  })
  // A prefork child lives only as long as its worker: if the IPC channel goes, so does it.
  if (isMainThread) process.on('disconnect', () => void exit())
  await announceProcessInit(app.signals, app.options.conf, slot, (message) => slotLog.warning(message))
  send([{ type: 'ready', pid: process.pid }])
} catch (error) {
  send([{ type: 'load-error', message: (error as Error).message }])
  if (isMainThread) setTimeout(() => process.exit(1), 50)
}
