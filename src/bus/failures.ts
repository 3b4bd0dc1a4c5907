// Where a failed event goes, and how it gets there on each broker: RabbitMQ's
// retry exchanges (TTL queues dead-lettering to `S:recover`) and archive
// exchange, or, on Redis and the file broker, parking lots of the same names
// that the service's workers release back into the handler queue.
import type { OutgoingMessage, Transport } from '../transport/index.js'
import { archivedExchangeName, handlerQueueName, recoverExchangeName, retryExchangeName, retryStepFor, stepDelaySeconds } from './names.js'
import { archiveEnabled, type BusSettings } from './settings.js'

export type FailureRoute =
  /** To retry step `step`, back in the handler queue after `delaySeconds`; the message's retries header becomes `retries`. */
  | { kind: 'retry'; step: number; delaySeconds: number; retries: number }
  /** To the archive, retries header `retries` (the limit + 1, as the library's last retry sets it). */
  | { kind: 'archive'; retries: number }
  /** Past the limit with the archive turned off (both its bounds 0): dropped, with a log line. */
  | { kind: 'drop'; retries: number }

/**
 * The library's EventHandler.retry: past `maxRetries` (the handler's, else
 * the service's), the archive; else the retry step of the retry count, or, for
 * an explicit countdown, the step of floor(log2(countdown)) (at least 1 s, at
 * most the last step).
 */
export function routeFailure(retries: number, maxRetries: number, settings: BusSettings, countdown?: number | null): FailureRoute {
  if (settings.maxRetries === 0 || retries >= maxRetries)
    return archiveEnabled(settings) ? { kind: 'archive', retries: retries + 1 } : { kind: 'drop', retries: retries + 1 }
  const step =
    countdown !== undefined && countdown !== null && countdown > 0
      ? retryStepFor(Math.floor(Math.log2(Math.max(1, countdown))), settings.maxRetries)
      : retryStepFor(retries, settings.maxRetries)
  return { kind: 'retry', step, delaySeconds: stepDelaySeconds(step), retries: retries + 1 }
}

/** Where a route sends to, for log lines: `billing:retry.2`, `billing:archived`. */
export function routeTarget(service: string, route: FailureRoute): string {
  return route.kind === 'retry' ? retryExchangeName(service, route.step) : archivedExchangeName(service)
}

/** Brokers without dead-lettering keep retries and the archive in parking lots; RabbitMQ in queues. */
export function usesParking(transport: Transport): boolean {
  return transport.kind !== 'amqp' && transport.parking !== undefined
}

/**
 * Sends `message` (a failed event of `event`) where `route` says, confirmed
 * by the broker before it resolves: the caller acks the original only then.
 */
export async function sendFailure(
  transport: Transport,
  service: string,
  event: string,
  settings: BusSettings,
  route: Exclude<FailureRoute, { kind: 'drop' }>,
  message: OutgoingMessage,
  now = Date.now(),
): Promise<void> {
  const queue = handlerQueueName(service, event)
  if (route.kind === 'retry') {
    const lot = retryExchangeName(service, route.step)
    if (usesParking(transport)) {
      await transport.parking!.park(
        lot,
        { queue, exchange: recoverExchangeName(service), routingKey: event },
        message,
        now + route.delaySeconds * 1000,
      )
    } else {
      // The original routing key, which S:recover routes back to this service's queue only.
      await transport.publish(lot, event, message)
    }
    return
  }
  await sendToArchive(transport, service, event, settings, message, now)
}

export async function sendToArchive(
  transport: Transport,
  service: string,
  event: string,
  settings: BusSettings,
  message: OutgoingMessage,
  now = Date.now(),
): Promise<void> {
  const lot = archivedExchangeName(service)
  if (usesParking(transport)) {
    await transport.parking!.park(lot, { queue: handlerQueueName(service, event), exchange: lot, routingKey: event }, message, now, {
      maxLength: settings.archiveMaxLength,
      ...(settings.archiveTtlMs > 0 ? { maxAgeMs: settings.archiveTtlMs } : {}),
    })
    return
  }
  await transport.publish(lot, event, message)
}
