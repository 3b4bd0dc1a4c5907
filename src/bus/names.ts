// The names celery-amqp-events gives a service's exchanges and queues
// (amqp_events/celery.py), byte for byte: a Python service of the same name
// and a tsq one share them. Pure functions, no I/O.

/** Celery's task_default_exchange in the library's config: every event is published here. */
export const EVENTS_EXCHANGE = 'events'

/** The queue of service `service`'s handler of event `event`: `S.E` (a dot). */
export function handlerQueueName(service: string, event: string): string {
  return `${service}.${event}`
}

/** Where an expired retry goes back from (a topic exchange bound to the handler queues as `events` is): `S:recover`. */
export function recoverExchangeName(service: string): string {
  return `${service}:recover`
}

/** Retry step n's fanout exchange and queue: `S:retry` for 0, `S:retry.<n>` after (the library's get_retry_exchange_name). */
export function retryExchangeName(service: string, step = 0): string {
  return step ? `${service}:retry.${step}` : `${service}:retry`
}

/** The archive's fanout exchange and queue: `S:archived`. */
export function archivedExchangeName(service: string): string {
  return `${service}:archived`
}

/**
 * The step a retry of a message already retried `retries` times goes to:
 * step n waits 2ⁿ s, so retries come after 1, 2, 4 … s; past the last step
 * the last one is used again. The library picks the step from a jittered
 * countdown (floor(log2(countdown))); tsq picks it from the retry count, so a
 * retry waits what its step promises.
 */
export function retryStepFor(retries: number, steps: number): number {
  return Math.max(0, Math.min(Math.trunc(retries), steps - 1))
}

/** Seconds a message waits at retry step `step`. */
export function stepDelaySeconds(step: number): number {
  return 2 ** step
}

/** A service name must be usable in every broker's names (and never hold the separators the library adds). */
export function checkServiceName(service: unknown): string {
  if (typeof service !== 'string' || service.trim() === '')
    throw new TypeError('createEventsApp(service): the service name must be a non-empty string')
  if (/[:\s]/.test(service))
    throw new TypeError(`createEventsApp(${JSON.stringify(service)}): a service name holds no colon or white space`)
  return service
}

export function checkEventName(event: unknown, where: string): string {
  if (typeof event !== 'string' || event.trim() === '') throw new TypeError(`${where}: the event name must be a non-empty string`)
  if (/[\s#*]/.test(event)) throw new TypeError(`${where}: event name ${JSON.stringify(event)} holds white space or a topic wildcard (# *)`)
  return event
}
