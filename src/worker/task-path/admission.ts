// The first room of the task path: from a delivered message to a request the
// worker holds, as Celery's consumer and strategy (celery/worker/consumer/
// consumer.py, celery/worker/strategy.py) admit it. What cannot be read is
// refused; a copy of a task held here, or ended here on a lost channel, is
// settled as that one is, not run twice; an unknown, revoked or expired task
// is discarded; a far ETA goes to the broker's delayed delivery; the rest is
// welcomed (signal, log line, task-received event) and goes to reservations.
import { inflateSync } from 'node:zlib'
import { BROKER_DELAY_LEAD_S } from '../../client/index.js'
import {
  ContentDisallowedError,
  DEFAULT_MESSAGE_LIMITS,
  MessageLimitError,
  SecurityError,
  decodeTaskMessage,
  pyRepr,
  sizeError,
  type TaskRequest,
} from '../../protocol/index.js'
import { taskLabel } from '../../protocol/index.js'
import type { Delivery } from '../../transport/index.js'
import type { Holdings } from './holdings.js'
import type { Outcomes } from './outcomes.js'
import { Request } from './request.js'
import type { Reservations } from './reservations.js'
import type { EtaDelayPolicy, RunnerOptions } from './runner-options.js'
import type { Settler } from './settler.js'

/**
 * The longest ETA a worker holds from a quorum queue's consumer. Not less:
 * the delayed delivery counts whole seconds, and senders have it give a
 * message back early (app/send-task.ts's BROKER_DELAY_LEAD_S, plus up to a
 * second; delayOnBroker subtracts one), which must then be held here, not
 * sent round again.
 */
export const BROKER_QUEUE_HOLD_S = BROKER_DELAY_LEAD_S + 2

/** worker_eta_broker_delay_after's default: below RabbitMQ's default consumer_timeout of 30 minutes. */
export const DEFAULT_ETA_DELAY_AFTER_S = 25 * 60

export class Admission {
  private readonly etaDelay: EtaDelayPolicy

  constructor(
    private readonly o: RunnerOptions,
    private readonly holdings: Holdings,
    private readonly settler: Settler,
    private readonly reservations: Reservations,
    private readonly outcomes: Outcomes,
  ) {
    this.etaDelay = o.etaDelay ?? { enabled: false, afterSeconds: DEFAULT_ETA_DELAY_AFTER_S }
  }

  /**
   * Returns a promise only when there is something to wait for: a task that
   * runs and ends within the call is received, run, recorded and acked
   * without one (the solo pool's fast path, measured by bench/worker-throughput).
   */
  receive(delivery: Delivery): void | Promise<void> {
    let message: TaskRequest
    try {
      message = this.decode(delivery)
    } catch (error) {
      if (error instanceof SecurityError || error instanceof ContentDisallowedError || error instanceof MessageLimitError)
        return this.refuse(delivery, error)
      return this.refuseUnreadable(delivery, error as Error)
    }
    if (delivery.redelivered && this.takenOver(message, delivery)) return
    if (this.duplicateOfHeld(message, delivery)) return
    const request = new Request(message, delivery, this.o.hostname)
    if (!this.o.app.tasks.has(message.task)) return this.outcomes.discardUnregistered(request)
    if (this.o.revoked.has(message.id)) return this.outcomes.discardRevoked(request, 'revoked')
    if (message.expires && new Date(message.expires).getTime() <= Date.now()) return this.outcomes.discardRevoked(request, 'expired')
    // A `tsq_dedup` header no tsq sender took: the store first (dedup-receipt.ts).
    const deduplicating = this.outcomes.dedup.atReceipt(request)
    if (deduplicating) return deduplicating.then((goes) => (goes ? this.admit(request) : undefined))
    return this.admit(request)
  }

  /** Admitted: to the broker's delayed delivery if its ETA is far, else welcomed. */
  private admit(request: Request): void | Promise<void> {
    const message = request.message
    const delivery = request.delivery
    const eta = request.etaDate
    const wait = eta ? eta.getTime() - Date.now() : 0
    const toBroker = this.etaDelay.brokerQueues?.has(delivery.queue) ? BROKER_QUEUE_HOLD_S : this.etaDelay.afterSeconds
    if (wait > toBroker * 1000 && this.etaDelay.enabled && this.o.transport.publishDelayed) return this.delayOnBroker(request, wait)
    if (wait > this.etaDelay.afterSeconds * 1000) {
      this.o.log.warning(
        `Task ${taskLabel(message.task, message.id)} has an ETA ${Math.round(wait / 1000)} s away, past the broker's consumer_timeout (RabbitMQ's default is 1800 s; this worker counts ${this.etaDelay.afterSeconds} s as safe): ` +
          `the broker will take it back from this worker before then and deliver it again. Raise the broker's consumer_timeout` +
          (this.o.transport.publishDelayed ? ' or turn on worker_eta_broker_delay.' : '.'),
      )
    }
    return this.welcome(request)
  }

  private decode(delivery: Delivery): TaskRequest {
    const maxBytes = this.o.decoder?.limits?.maxBytes ?? DEFAULT_MESSAGE_LIMITS.maxBytes
    if (delivery.body.length > maxBytes) throw sizeError('task body', delivery.body.length, maxBytes)
    if (delivery.properties.unreadableHeaders !== undefined)
      throw new Error(`unreadable header table: ${delivery.properties.unreadableHeaders}`)
    return decodeTaskMessage({
      headers: delivery.properties.headers,
      body: decompress(delivery, maxBytes),
      contentType: delivery.properties.contentType,
      contentEncoding: delivery.properties.contentEncoding,
      ...(this.o.decoder ? { decoder: this.o.decoder } : {}),
    })
  }

  private refuseUnreadable(delivery: Delivery, error: Error): Promise<void> {
    this.o.log.error(
      `Received invalid task message (rejected, not requeued): ${error.message.split('\n')[0]} [queue=${delivery.queue} tag=${delivery.deliveryTag}]`,
    )
    if (this.o.app.signals.has('task_rejected'))
      this.o.app.signals.send('task_rejected', {
        sender: this.o.hostname,
        message: { headers: delivery.properties.headers, body: delivery.body },
        exc: error,
      })
    return this.settler.settleDelivery(delivery, 'undecodable')
  }

  /**
   * Celery's refusals, one line each, nothing run: a content type outside
   * accept_content is an invalid task (on_invalid_task: rejected), a signature
   * that does not verify is a decode error (on_decode_error: acked). A body
   * past the limits is Celery's decode error too (its json.loads hits the
   * recursion limit), logged at its level, but rejected without requeue, so a
   * queue's dead-letter exchange keeps it for inspection.
   */
  private refuse(delivery: Delivery, error: SecurityError | ContentDisallowedError | MessageLimitError): Promise<void> {
    const p = delivery.properties
    const h = p.headers ?? {}
    const where = `${typeof h.task === 'string' ? h.task : '?'}[${typeof h.id === 'string' ? h.id : (p.correlationId ?? '?')}]`
    if (this.o.app.signals.has('task_rejected'))
      this.o.app.signals.send('task_rejected', {
        sender: this.o.hostname,
        message: { headers: p.headers, body: delivery.body },
        exc: error,
      })
    if (error instanceof SecurityError) {
      this.o.log.error(
        `Can't decode message body: DecodeError(SecurityError(${pyRepr(error.message)})) [type:'${p.contentType}' encoding:'${p.contentEncoding ?? ''}'] ${where}`,
      )
      return this.settler.settleDelivery(delivery, 'signature-invalid')
    }
    if (error instanceof MessageLimitError) {
      this.o.log.critical(
        `Can't decode message body: DecodeError(${error.pythonRepr}) [type:${pyRepr(p.contentType ?? '')} encoding:${pyRepr(p.contentEncoding ?? '')}] ${where} (${delivery.body.length}b, rejected, not requeued)`,
      )
      return this.settler.settleDelivery(delivery, 'over-limit')
    }
    this.o.log.error(`Received invalid task message (rejected, not requeued): ${error.message} ${where}`)
    return this.settler.settleDelivery(delivery, 'content-disallowed')
  }

  /**
   * The broker's new copy of a task this worker ran, or still runs, from a
   * channel that has since closed: it takes that run's outcome instead of
   * running again. True when the delivery was taken over.
   */
  private takenOver(message: TaskRequest, delivery: Delivery): boolean {
    const running = this.holdings.active.get(message.id)
    if (running && running.successor === null && running.message.retries === message.retries && running.takenBack) {
      running.successor = delivery
      this.o.log.info(
        `Task ${taskLabel(message.task, message.id)} delivered again while it still runs from a closed channel: this copy takes that run's outcome`,
      )
      return true
    }
    return this.settler.settleAsBefore(message, delivery)
  }

  /**
   * A second live copy of a task this worker already holds, waiting for its
   * ETA or running (same id, same retries), is acked, not run again. Two
   * copies come back from the broker's delayed delivery when a worker dies
   * between the delayed copy's confirm and the original's ack: the original is
   * delivered again and moved again; and a sender whose publish was retried
   * across a broker restart may have published it twice.
   */
  private duplicateOfHeld(message: TaskRequest, delivery: Delivery): boolean {
    const held = this.holdings.held(message.id)
    if (!held || held.delivery === delivery || held.message.retries !== message.retries || held.takenBack || held.replaced) return false
    if (this.holdings.active.get(message.id) === held && held.successor === null) {
      // Running: the second copy is settled as the run ends, as the first is, so
      // a requeue still leaves one copy (on Redis both carry the same tag).
      held.successor = delivery
      this.o.log.warning(
        `Task ${taskLabel(message.task, message.id)} delivered twice while it runs here: the second copy takes this run's outcome`,
      )
      return true
    }
    this.o.log.warning(
      `Task ${taskLabel(message.task, message.id)} delivered twice (this worker holds it already): the second copy is acked, not run`,
    )
    void this.settler.settleDelivery(delivery, 'duplicate')
    return true
  }

  /**
   * Moves a far ETA task to the broker's delayed delivery: published there
   * (confirmed), then acked, so it is never lost; it comes back to its queue
   * one to two seconds before its ETA (the wait's whole seconds less one: the
   * fraction is dropped too) and is held for the rest as any near ETA is.
   */
  private async delayOnBroker(request: Request, waitMs: number): Promise<void> {
    const m = request.message
    const d = request.delivery
    const delaySeconds = Math.max(0, Math.floor(waitMs / 1000) - 1)
    try {
      await this.o.transport.publishDelayed!(d.queue, { body: d.body, properties: withoutDeathRecord(d.properties) }, delaySeconds)
    } catch (error) {
      this.o.log.warning(
        `Task ${taskLabel(m.task, m.id)}: could not hand its ETA to the broker's delayed delivery (${(error as Error).message}); holding it here`,
      )
      return this.welcome(request)
    }
    void this.settler.settle(request, 'delayed-on-broker')
    this.o.log.info(
      `Task ${taskLabel(m.task, m.id)} has an ETA ${Math.round(waitMs / 1000)} s away: handed to the broker's delayed delivery, back in ${d.queue} at ${m.eta}`,
    )
  }

  /** Received here: signalled, logged, then held until its ETA or reserved. */
  private welcome(request: Request): void | Promise<void> {
    const { message } = request
    if (this.o.app.signals.has('task_received'))
      this.o.app.signals.send('task_received', { sender: this.o.hostname, request: request.info() })
    if (this.o.log.enabled('INFO')) this.o.log.info(`Task ${taskLabel(message.task, message.id)} received`)
    if (this.o.events.taskEvents) {
      this.o.events.sendTask('task-received', {
        uuid: message.id,
        name: message.task,
        args: message.argsrepr,
        kwargs: message.kwargsrepr,
        root_id: message.rootId,
        parent_id: message.parentId,
        retries: message.retries,
        eta: message.eta,
        expires: message.expires,
      })
    }
    return this.reservations.hold(request)
  }
}

/**
 * kombu's `compression` header (task_compression): 'application/x-gzip' and
 * 'zlib' are zlib streams. A body that does not inflate, or a codec we lack,
 * is unreadable, so the message is rejected instead of run as if plain.
 */
export function decompress(delivery: Delivery, maxBytes: number): Buffer {
  const codec = delivery.properties.headers?.compression
  if (codec === undefined || codec === null) return delivery.body
  if (codec === 'application/x-gzip' || codec === 'zlib') {
    try {
      return inflateSync(delivery.body, { maxOutputLength: maxBytes })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
        throw new MessageLimitError(
          `decompressed task body exceeds the limit of ${maxBytes} bytes (worker_message_max_bytes)`,
          'ValueError',
        )
      throw new Error(`cannot decompress body (${String(codec)}): ${(error as Error).message}`, { cause: error })
    }
  }
  throw new Error(`unsupported compression ${JSON.stringify(codec)}`)
}

/**
 * The record RabbitMQ adds when it dead-letters a message (x-death and the
 * x-first-death-* headers) is the broker's, not the sender's: a message moved
 * to the delayed delivery again leaves it behind, so the broker writes its own.
 */
function withoutDeathRecord(properties: Delivery['properties']): Delivery['properties'] {
  const headers = properties.headers
  if (!headers || !Object.keys(headers).some(isDeathHeader)) return properties
  return { ...properties, headers: Object.fromEntries(Object.entries(headers).filter(([key]) => !isDeathHeader(key))) }
}

function isDeathHeader(key: string): boolean {
  return key === 'x-death' || key.startsWith('x-first-death-') || key.startsWith('x-last-death-')
}
