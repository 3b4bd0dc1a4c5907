// What a batch send that failed leaves behind, message by message: each send
// settles on the broker's own answer for it (Redis's reply to the LPUSH that
// carried it, RabbitMQ's publisher confirm), so the caller learns exactly
// which messages the broker has instead of one error for the whole batch.
import { ProtocolError, TsqError, type Signature } from '../protocol/index.js'
import { BrokerRequestError } from '../transport/index.js'
import type { AsyncResult } from './async-result.js'
import { QueueSettingError } from '../config/index.js'

/**
 * `sent`: the broker confirmed it. `refused`: it never reached the queue (the
 * broker said no, as Redis under maxmemory does, or it could not be encoded).
 * `unknown`: the connection went before the broker answered; it may be queued.
 */
export type SendStatus = 'sent' | 'refused' | 'unknown'

export interface SendOutcome {
  index: number
  taskId: string
  signature: Signature
  status: SendStatus
  /** The AsyncResult of a sent message (and of one whose fate is unknown: it may yet run). */
  result?: AsyncResult
  error?: unknown
}

function statusOf(error: unknown): Exclude<SendStatus, 'sent'> {
  // Refused by the broker, or never sent (it could not be encoded or routed); anything else went with the connection.
  return error instanceof BrokerRequestError || error instanceof ProtocolError || error instanceof QueueSettingError ? 'refused' : 'unknown'
}

export class SendManyError extends TsqError {
  override readonly name = 'SendManyError'
  /** One per signature, in order. */
  readonly outcomes: SendOutcome[]

  constructor(outcomes: SendOutcome[]) {
    const failed = outcomes.filter((o) => o.status !== 'sent')
    const count = (s: SendStatus) => outcomes.reduce((n, o) => n + (o.status === s ? 1 : 0), 0)
    const first = failed[0]?.error
    const unknown = count('unknown')
    super(
      'SENDS_UNCONFIRMED',
      `${failed.length} of ${outcomes.length} messages were not confirmed: ${count('sent')} sent, ${count('refused')} refused${unknown ? `, ${unknown} unknown (the connection went before the broker answered; they may be queued)` : ''}; first error: ${first instanceof Error ? first.message : String(first)}`,
      { cause: first },
    )
    this.outcomes = outcomes
  }

  /** The AsyncResults of the messages the broker confirmed. */
  get sent(): AsyncResult[] {
    return this.outcomes.flatMap((o) => (o.status === 'sent' ? [o.result!] : []))
  }

  /** The messages that were refused or whose fate is unknown. */
  get failed(): SendOutcome[] {
    return this.outcomes.filter((o) => o.status !== 'sent')
  }

  /** From the settled sends of a batch (at least one rejected). */
  static from(
    signatures: readonly Signature[],
    ids: readonly string[],
    settled: PromiseSettledResult<AsyncResult>[],
    resultOf: (id: string) => AsyncResult,
  ): SendManyError {
    return new SendManyError(
      settled.map((s, index) => {
        const base = { index, taskId: ids[index]!, signature: signatures[index]! }
        if (s.status === 'fulfilled') return { ...base, status: 'sent' as const, result: s.value }
        const status = statusOf(s.reason)
        return status === 'unknown'
          ? { ...base, status, error: s.reason, result: resultOf(base.taskId) }
          : { ...base, status, error: s.reason }
      }),
    )
  }
}
