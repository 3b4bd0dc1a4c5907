// `celery amqp`'s commands (celery/bin/amqp.py): their positional arguments in
// Celery's order, with Celery's defaults, read as click reads them, and the
// lines Celery prints for each, so a script written for `celery amqp` works
// unchanged. One table serves the one-shot command and the repl.
import { codedError, didYouMean, pformat } from '../protocol/index.js'
import type { BrokerAdmin, GotMessage } from '../transport/index.js'

/** A command line `celery amqp` would refuse (exit 64, as every usage error). */
export class AmqpUsageError extends codedError('USAGE') {}

type ArgKind = 'str' | 'bool' | 'int'

interface ArgSpec {
  name: string
  kind: ArgKind
  /** Absent: required. */
  default?: string | boolean
}

type ArgValues = Record<string, string | boolean | number>

/** What a command printed (Celery's lines) and the same as data, for --json. */
export interface AmqpResult {
  lines: string[]
  data: Record<string, unknown>
}

interface AmqpCommand {
  args: ArgSpec[]
  run(admin: BrokerAdmin, a: ArgValues): Promise<AmqpResult>
}

const OK = 'OK'
const ok = (): AmqpResult => ({ lines: [OK], data: { ok: true } })
const deleted = (count: number): AmqpResult => ({ lines: [`${count} messages deleted.`, OK], data: { messageCount: count } })
const str = (name: string, fallback?: string): ArgSpec => ({ name, kind: 'str', ...(fallback !== undefined ? { default: fallback } : {}) })
const bool = (name: string, fallback?: boolean): ArgSpec => ({
  name,
  kind: 'bool',
  ...(fallback !== undefined ? { default: fallback } : {}),
})

const s = (a: ArgValues, name: string): string => a[name] as string
const b = (a: ArgValues, name: string): boolean => a[name] as boolean

/** Celery's `dump_message`: the body decoded as py-amqp's auto_decode does, then pprint. */
export function dumpMessage(message: GotMessage | null): string {
  if (!message) return 'No messages in queue. basic.publish something.'
  return pformat(messageData(message, true))
}

/** The message as Celery's dump_message builds it; `forPython`: bytes stay bytes (for pprint), else base64 (for JSON). */
function messageData(message: GotMessage, forPython: boolean): Record<string, unknown> {
  const encoding = message.properties.content_encoding
  let body: string | Uint8Array = message.body
  if (typeof encoding === 'string' && /^(utf-?8|ascii|us-ascii)$/i.test(encoding)) {
    try {
      body = new TextDecoder('utf-8', { fatal: true }).decode(message.body)
    } catch {
      // Not text after all: py-amqp keeps the bytes too.
    }
  }
  return {
    body: typeof body === 'string' ? body : forPython ? new Uint8Array(body) : { base64: Buffer.from(body).toString('base64') },
    properties: message.properties,
    delivery_info: {
      delivery_tag: message.deliveryTag,
      exchange: message.exchange,
      message_count: message.messageCount,
      redelivered: message.redelivered,
      routing_key: message.routingKey,
    },
  }
}

export const AMQP_COMMANDS: Readonly<Record<string, AmqpCommand>> = {
  'exchange.declare': {
    args: [str('exchange'), str('type'), bool('passive', false), bool('durable', false), bool('auto_delete', false)],
    run: async (admin, a) => {
      await admin.exchangeDeclare(s(a, 'exchange'), s(a, 'type'), {
        passive: b(a, 'passive'),
        durable: b(a, 'durable'),
        autoDelete: b(a, 'auto_delete'),
      })
      return ok()
    },
  },
  'exchange.delete': {
    args: [str('exchange'), bool('if_unused')],
    run: async (admin, a) => {
      await admin.exchangeDelete(s(a, 'exchange'), b(a, 'if_unused'))
      return ok()
    },
  },
  'queue.bind': {
    // Celery requires ROUTING_KEY; an empty key is what a script leaving it out means.
    args: [str('queue'), str('exchange'), str('routing_key', '')],
    run: async (admin, a) => {
      await admin.queueBind(s(a, 'queue'), s(a, 'exchange'), s(a, 'routing_key'))
      return ok()
    },
  },
  'queue.declare': {
    args: [str('queue'), bool('passive', false), bool('durable', false), bool('auto_delete', false)],
    run: async (admin, a) => {
      const ok = await admin.queueDeclare(s(a, 'queue'), {
        passive: b(a, 'passive'),
        durable: b(a, 'durable'),
        autoDelete: b(a, 'auto_delete'),
      })
      return { lines: [`queue:${ok.queue} messages:${ok.messageCount} consumers:${ok.consumerCount}`, OK], data: { ...ok } }
    },
  },
  'queue.delete': {
    args: [str('queue'), bool('if_unused', false), bool('if_empty', false)],
    run: async (admin, a) => deleted(await admin.queueDelete(s(a, 'queue'), { ifUnused: b(a, 'if_unused'), ifEmpty: b(a, 'if_empty') })),
  },
  'queue.purge': {
    args: [str('queue')],
    run: async (admin, a) => deleted(await admin.queuePurge(s(a, 'queue'))),
  },
  'basic.get': {
    args: [str('queue'), bool('no_ack', false)],
    run: async (admin, a) => {
      const message = await admin.basicGet(s(a, 'queue'), b(a, 'no_ack'))
      return { lines: [dumpMessage(message), OK], data: { message: message && messageData(message, false) } }
    },
  },
  'basic.publish': {
    args: [str('msg'), str('exchange'), str('routing_key'), bool('mandatory', false), bool('immediate', false)],
    run: async (admin, a) => {
      await admin.basicPublish(s(a, 'msg'), s(a, 'exchange'), s(a, 'routing_key'), {
        mandatory: b(a, 'mandatory'),
        immediate: b(a, 'immediate'),
      })
      return ok()
    },
  },
  'basic.ack': {
    args: [{ name: 'delivery_tag', kind: 'int' }],
    run: async (admin, a) => {
      await admin.basicAck(a.delivery_tag as number)
      return ok()
    },
  },
}

export const AMQP_COMMAND_NAMES: readonly string[] = Object.keys(AMQP_COMMANDS)

/** How click names an argument in its messages: `'QUEUE'`, or `'[PASSIVE]'` for one with a default. */
function label(spec: ArgSpec): string {
  const upper = spec.name.toUpperCase()
  return spec.default === undefined ? upper : `[${upper}]`
}

/** click's BOOL: these words, any case, surrounding blanks ignored. */
export function parseClickBool(word: string): boolean | undefined {
  const norm = word.trim().toLowerCase()
  if (['1', 'true', 't', 'yes', 'y', 'on'].includes(norm)) return true
  if (['0', 'false', 'f', 'no', 'n', 'off'].includes(norm)) return false
  return undefined
}

function convert(spec: ArgSpec, word: string): string | boolean | number {
  if (spec.kind === 'str') return word
  if (spec.kind === 'bool') {
    const value = parseClickBool(word)
    if (value === undefined) throw new AmqpUsageError(`Invalid value for '${label(spec)}': '${word}' is not a valid boolean.`)
    return value
  }
  const trimmed = word.trim()
  if (!/^[+-]?\d+$/.test(trimmed)) throw new AmqpUsageError(`Invalid value for '${label(spec)}': '${word}' is not a valid integer.`)
  return Number(trimmed)
}

/** The usage line of a command, as `celery amqp NAME --help` shows it. */
export function amqpUsage(name: string): string {
  return `${name} ${AMQP_COMMANDS[name]!.args.map(label).join(' ')}`
}

/** Reads `words` (the command name first) as click would; throws a UsageError in click's words. */
export function parseAmqpCommand(words: readonly string[]): { name: string; command: AmqpCommand; values: ArgValues } {
  const [name, ...rest] = words
  if (name === undefined) throw new AmqpUsageError(`Missing command (one of ${AMQP_COMMAND_NAMES.join(', ')}).`)
  const command = AMQP_COMMANDS[name]
  if (!command)
    throw new AmqpUsageError(`No such command '${name}'${didYouMean(name, AMQP_COMMAND_NAMES)} (one of ${AMQP_COMMAND_NAMES.join(', ')}).`)
  if (rest.length > command.args.length) {
    throw new AmqpUsageError(
      `Got unexpected extra argument${rest.length - command.args.length > 1 ? 's' : ''} (${rest.slice(command.args.length).join(' ')}) (usage: ${amqpUsage(name)})`,
    )
  }
  const values: ArgValues = {}
  command.args.forEach((spec, i) => {
    const word = rest[i]
    if (word === undefined) {
      if (spec.default === undefined) throw new AmqpUsageError(`Missing argument '${label(spec)}'. (usage: ${amqpUsage(name)})`)
      values[spec.name] = spec.default
    } else values[spec.name] = convert(spec, word)
  })
  return { name, command, values }
}

/** Runs one command line; returns the lines Celery prints for it, and the same as data. */
export async function runAmqpCommand(admin: BrokerAdmin, words: readonly string[]): Promise<AmqpResult> {
  const { command, values } = parseAmqpCommand(words)
  return command.run(admin, values)
}
