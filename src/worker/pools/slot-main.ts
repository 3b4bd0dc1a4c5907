// The entry point of a pool slot (a prefork child or a worker thread): load the
// user's module once, then run the jobs the worker sends, one at a time.
import { closeSync, openSync } from 'node:fs'
import { parentPort, workerData, isMainThread } from 'node:worker_threads'
import { announceProcessInit } from '../../app/app-signals.js'
import { loadApp } from '../../app/load-app.js'
import { keepYoungGenerationSmall, trimMemoryWhenIdle } from '../memory-footprint.js'
import { executeJob, unsendableOutcome, type RunningJob } from './executor.js'
import { withToJSONApplied } from './wire-value.js'
import type { FromSlot, ToSlot } from './jobs.js'
import type { SlotData } from './slot-entry.js'
import { Logger } from '../../app/logger.js'
import { nodeFormat } from '../../protocol/index.js'
import { redirectConsole } from '../redirect-stdouts.js'
import { surviveStrayErrors } from '../stray-errors.js'

const data: SlotData = isMainThread ? (JSON.parse(process.env.TSQ_SLOT_DATA ?? '{}') as SlotData) : (workerData as SlotData)

function send(message: FromSlot): void {
  if (isMainThread) process.send?.(message)
  else parentPort?.postMessage(message)
}

function onMessage(listener: (message: ToSlot) => void): void {
  if (isMainThread) process.on('message', listener as (m: unknown) => void)
  else parentPort?.on('message', listener)
}

keepYoungGenerationSmall()
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
const running = new Map<string, RunningJob>()
/** Ended tasks whose end hooks wait for the worker's 'stored'. */
const holding = new Map<string, RunningJob>()

/** updateState() from a task in this slot: the worker stores it before the task's outcome, which follows on the same channel. */
function sendState(id: string, state: string, meta: unknown): void {
  send({ type: 'state', id, state, meta: withToJSONApplied(meta) })
}

try {
  const app = await loadApp(data.modulePath, data.includePaths)
  app.configure({ broker: data.broker, resultBackend: data.resultBackend ?? undefined })
  const slot = { sender: data.nodename, pid: process.pid, index: data.index }
  let exiting = false
  const exit = async (): Promise<void> => {
    if (exiting) return
    exiting = true
    // Hooks still held at exit (a cold shutdown) run late rather than never.
    for (const job of holding.values()) job.releaseEndHooks()
    // Inside the 3 s the pool gives a slot to exit before it is killed.
    await app.signals.sendAndWait('worker_process_shutdown', slot, SHUTDOWN_RECEIVERS_MS)
    process.exit(0)
  }
  onMessage((message) => {
    switch (message.type) {
      case 'run': {
        const job = executeJob(app, message.job, sendState, { holdEndHooks: true })
        running.set(message.job.id, job)
        send({ type: 'started', id: message.job.id })
        void job.outcome.then((outcome) => {
          running.delete(message.job.id)
          if (outcome.endHooks) holding.set(message.job.id, job)
          const rss = process.memoryUsage().rss
          const value = outcome.status === 'success' ? withToJSONApplied(outcome.value) : undefined
          const handedOver = outcome.status === 'success' && value !== outcome.value ? { ...outcome, value } : outcome
          try {
            send({ type: 'done', id: message.job.id, outcome: handedOver, rss })
          } catch (error) {
            // Nothing went out: the worker still waits for this task's outcome.
            send({ type: 'done', id: message.job.id, outcome: unsendableOutcome(handedOver, error), rss })
          }
        })
        break
      }
      case 'stored':
        holding.get(message.id)?.releaseEndHooks()
        holding.delete(message.id)
        break
      case 'abort':
        running.get(message.id)?.abort(message.reason)
        break
      case 'exit':
        void exit()
    }
  })
  // A prefork child lives only as long as its worker: if the IPC channel goes, so does it.
  if (isMainThread) process.on('disconnect', () => void exit())
  await announceProcessInit(app.signals, app.options.conf, slot, (message) => slotLog.warning(message))
  send({ type: 'ready', pid: process.pid })
} catch (error) {
  send({ type: 'load-error', message: (error as Error).message })
  if (isMainThread) setTimeout(() => process.exit(1), 50)
}
