// What goes to the slots, batched: the messages for a slot wait in its outbox
// until the end of the event loop's turn, then cross in one send, so every job
// placed by the deliveries of one read crosses at once (slot-messages.ts
// packs them). A batch the channel cannot carry is sent again message by
// message, and a job that still cannot cross is handed back to the pool.
import type { Job } from '../../app/index.js'
import type { Slot } from './slot.js'
import { packJobs, type ToSlot } from './slot-messages.js'

export class SlotCrossings {
  /** Slots with messages waiting for the next crossing. */
  private readonly toFlush = new Set<Slot>()
  private flushQueued = false

  constructor(
    /** A job its slot's channel could not carry, even alone. */
    private readonly notCrossed: (slot: Slot, job: Job, error: unknown) => void,
    private readonly log?: (level: 'error', message: string) => void,
  ) {}

  sendJob(slot: Slot, job: Job): void {
    const last = slot.outbox[slot.outbox.length - 1]
    if (last?.type === 'jobs') last.jobs.push(job)
    else slot.outbox.push({ type: 'jobs', jobs: [job] })
    this.flushSoon(slot)
  }

  sendSoon(slot: Slot, message: ToSlot): void {
    slot.outbox.push(message)
    this.flushSoon(slot)
  }

  /** The slot is gone: nothing more crosses to it. */
  forget(slot: Slot): void {
    this.toFlush.delete(slot)
  }

  private flushSoon(slot: Slot): void {
    // The first message of this turn for the slot (the set would be asked once per job otherwise).
    if (slot.outbox.length === 1) this.toFlush.add(slot)
    if (!this.flushQueued) {
      this.flushQueued = true
      // After this turn's I/O: every job placed by the deliveries of one read crosses at once.
      setImmediate(this.flushAll)
    }
  }

  private readonly flushAll = (): void => {
    this.flushQueued = false
    for (const slot of this.toFlush) this.flush(slot)
    this.toFlush.clear()
  }

  /** Sends what waits for the slot now. */
  flush(slot: Slot): void {
    if (slot.outbox.length === 0) return
    const outbox = slot.outbox
    const batch: ToSlot[] = []
    for (const message of outbox) {
      if (message.type === 'jobs') batch.push(...packJobs(message.jobs))
      else batch.push(message)
    }
    slot.outbox = []
    try {
      slot.handle.send(batch)
    } catch (error) {
      // Nothing crossed (the channel serializes before it writes): each message again, alone.
      this.sendApart(slot, outbox, error)
    }
  }

  /** A batch the channel could not carry: sent message by message, and a job that still cannot cross is ended by the pool. */
  private sendApart(slot: Slot, outbox: ToSlot[], batchError: unknown): void {
    for (const message of outbox) {
      if (message.type !== 'jobs') {
        try {
          slot.handle.send([message])
        } catch (error) {
          this.log?.(
            'error',
            `pool process ${slot.handle.pid} (index ${slot.index}): could not send ${message.type}: ${(error as Error).message}`,
          )
        }
        continue
      }
      for (const job of message.jobs) {
        try {
          slot.handle.send(packJobs([job]))
        } catch (error) {
          this.notCrossed(slot, job, error ?? batchError)
        }
      }
    }
  }
}
