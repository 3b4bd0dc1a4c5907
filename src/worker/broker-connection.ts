// The worker's broker connections: the first one retried as Celery's consumer
// retries it at start-up, and a RabbitMQ alarm (connection.blocked) said in
// the log, with what waits on a publish not held up past it.
import { setTimeout as sleepFor } from 'node:timers/promises'
import type { Logger } from '../process/index.js'
import { createTransport, type Transport, type TransportSettings } from '../transport/index.js'

/** kombu's ensure_connection defaults, which Celery's consumer uses at start-up. */
const CONNECT_RETRIES = 100
const CONNECT_RETRY_STEP_S = 2
const CONNECT_RETRY_MAX_S = 30

export interface FirstConnection {
  url: string
  settings: TransportSettings
  log: Logger
  /** False once a shutdown came: the attempts stop. */
  starting: () => boolean
  /** Aborted by a shutdown: the wait between attempts ends. */
  aborted: AbortSignal
}

/**
 * The first connection, retried as Celery's consumer retries it at start-up
 * (kombu's ensure_connection: 2 s, then 2 s more each time up to 30 s, 100
 * attempts), one line per attempt saying why, so a TLS or credentials
 * mistake is visible without flooding the log. A request error (a bad URL,
 * an unreadable certificate file) is not retried. Undefined when a shutdown
 * came first.
 */
export async function connectFirst(c: FirstConnection): Promise<Transport | undefined> {
  for (let attempt = 1; ; attempt++) {
    const transport = await createTransport(c.url, c.settings)
    try {
      await transport.connect()
    } catch (error) {
      await transport.close({ requeueUnacked: true }).catch(() => undefined)
      const err = error as Error & { code?: string }
      if (err.code !== 'BROKER_UNREACHABLE' || attempt >= CONNECT_RETRIES || !c.starting()) throw err
      const delayS = Math.min(CONNECT_RETRY_MAX_S, CONNECT_RETRY_STEP_S * attempt)
      c.log.error(`consumer: ${err.message}. Trying again in ${delayS.toFixed(2)} seconds... (${attempt}/${CONNECT_RETRIES})`)
      await sleepFor(delayS * 1000, undefined, { signal: c.aborted }).catch(() => undefined)
      if (!c.starting()) return undefined
      continue
    }
    if (!c.starting()) {
      await transport.close({ requeueUnacked: true }).catch(() => undefined)
      return undefined
    }
    return transport
  }
}

/** RabbitMQ's connection.blocked (a memory or disk alarm) and its end, one line each. */
export function sayBlocked(transport: Transport, log: Logger): void {
  transport.on('connection:blocked', (reason) =>
    log.warning(
      `Connection blocked by the broker: ${reason}; waiting for the alarm to clear to publish (events, results, replies); tasks are still received and acknowledged`,
    ),
  )
  transport.on('connection:unblocked', () => log.info('Connection unblocked by the broker: publishing resumes'))
}

/** Resolves when `sent` settles, or once the broker blocks publishing: what waits then is sent when the alarm clears. */
export function notPastBlock(publisher: Transport | undefined, sent: Promise<void>): Promise<void> {
  if (!publisher || publisher.blockedReason) {
    sent.catch(() => undefined)
    return Promise.resolve()
  }
  return new Promise<void>((resolve) => {
    const done = (): void => {
      publisher.off('connection:blocked', done)
      resolve()
    }
    publisher.on('connection:blocked', done)
    sent.then(done, done)
  })
}
