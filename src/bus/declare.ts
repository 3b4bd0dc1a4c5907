// Declares a service's topology through the transport, idempotently: any
// number of workers and services start in any order. When RabbitMQ refuses a
// queue (406: it exists with other arguments), the arguments it has are
// learnt from its own answers and named in one line.
import type { QueueArguments, QueueSpec, Transport } from '../transport/index.js'
import { TopologyMismatchError } from './errors.js'
import type { BusTopology } from './topology.js'

/** Declared once per transport and topology, as kombu's maybe_declare. */
const declared = new WeakMap<object, Set<string>>()

export async function declareTopology(transport: Transport, topology: BusTopology): Promise<void> {
  const key = JSON.stringify(topology)
  let seen = declared.get(transport)
  if (!seen) declared.set(transport, (seen = new Set()))
  if (seen.has(key)) return
  for (const exchange of topology.exchanges) await transport.declareExchange(exchange)
  for (const queue of topology.queues) await declareQueueExactly(transport, queue)
  for (const b of topology.bindings) await transport.bindQueue(b.queue, b.exchange, b.routingKey)
  seen.add(key)
}

/** Forgets what was declared on `transport` (after a queue was deleted under it, say). */
export function forgetDeclared(transport: Transport): void {
  declared.delete(transport)
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

/** Declares `spec`; a 406 becomes a TopologyMismatchError naming both argument sets. */
export async function declareQueueExactly(transport: Transport, spec: QueueSpec): Promise<void> {
  try {
    await transport.declareQueue(spec)
  } catch (error) {
    if (codeOf(error) !== 'PRECONDITION_FAILED') throw error
    const text = (error as Error).message
    const existing = await learnArguments(transport, spec, text)
    throw new TopologyMismatchError(spec.name, existing, { ...(spec.arguments ?? {}) }, inequivalence(text) ?? text)
  }
}

/** RabbitMQ's reason, from `… PRECONDITION_FAILED - inequivalent arg …`. */
function inequivalence(text: string): string | undefined {
  return /inequivalent arg[^]*$/.exec(text)?.[0]
}

interface Difference {
  key: string
  /** undefined: the queue has no such argument. */
  current: string | number | undefined
}

/**
 * RabbitMQ names one differing argument per refusal, with the value the
 * queue has, in one of its versions' words: `inequivalent arg 'x-max-length'
 * for queue 'q' in vhost '/': received '5' but current is '10000'`, `…
 * received the value '2000' of type 'signedint' but current is the value
 * '1000' of type 'signedint'`, or `… but current is none`. The value's type,
 * where the text does not give it, is taken from what was declared.
 */
export function parseInequivalentArg(text: string, declared: Record<string, unknown> = {}): Difference | undefined {
  const m =
    /inequivalent arg '([^']+)' for queue '[^']*' in vhost '[^']*': received .*? but current is (none|(?:the value )?'([^']*)'(?: of type '([^']*)')?)/.exec(
      text,
    )
  if (!m) return undefined
  const [, key, currentText, value, type] = m
  if (currentText === 'none') return { key: key!, current: undefined }
  const numeric = type ? !/str/.test(type) : typeof declared[key!] === 'number' || (declared[key!] === undefined && /^-?\d+$/.test(value!))
  return { key: key!, current: numeric ? Number(value) : value! }
}

/**
 * The arguments the queue has: declare again with each difference RabbitMQ
 * names set to the queue's value, until it agrees (then those are the
 * arguments, and declaring them changed nothing) or names something else
 * (durable, exclusive). null when they could not be learnt.
 */
async function learnArguments(transport: Transport, spec: QueueSpec, firstRefusal: string): Promise<Record<string, unknown> | null> {
  const args: Record<string, string | number> = { ...((spec.arguments ?? {}) as Record<string, string | number>) }
  let refusal = firstRefusal
  for (let attempt = 0; attempt < 12; attempt += 1) {
    const diff = parseInequivalentArg(refusal, spec.arguments as Record<string, unknown> | undefined)
    if (!diff) return null
    if (diff.current === undefined) delete args[diff.key]
    else args[diff.key] = diff.current
    try {
      await transport.declareQueue({ ...spec, arguments: args as QueueArguments })
      return args
    } catch (error) {
      if (codeOf(error) !== 'PRECONDITION_FAILED') return null
      refusal = (error as Error).message
    }
  }
  return null
}
