// File names for the embedded broker. Entity names (queues, exchanges, routing
// keys) are escaped so any AMQP name is a valid, readable file name; message
// file names sort in delivery order, so `readdir` + `sort` is the queue.
import { randomBytes } from 'node:crypto'
import { escapeSegment, PathNameError, unescapeSegment } from '../../protocol/index.js'
import { BrokerRequestError } from '../errors.js'

/**
 * The broker's names as path segments (protocol/path-segment.ts): `~` and `%`
 * are never produced unescaped, so `~` can separate escaped names inside one file name.
 */
export function escapeName(name: string): string {
  try {
    return escapeSegment(name, 'broker')
  } catch (err) {
    if (err instanceof PathNameError)
      throw new BrokerRequestError('NAME_TOO_LONG', `name too long for the file broker: ${name.slice(0, 60)}…`)
    throw err
  }
}

export function unescapeName(escaped: string): string {
  return unescapeSegment(escaped)
}

export const BINDING_SEP = '~'

export function bindingFileName(queue: string, routingKey: string): string {
  return `${escapeName(queue)}${BINDING_SEP}${routingKey === '' ? '' : escapeName(routingKey)}`
}

export function parseBindingFileName(file: string): { queue: string; routingKey: string } | undefined {
  const at = file.indexOf(BINDING_SEP)
  if (at <= 0) return undefined
  const rk = file.slice(at + 1)
  try {
    return { queue: unescapeName(file.slice(0, at)), routingKey: rk === '' ? '' : unescapeName(rk) }
  } catch {
    return undefined
  }
}

const MSG_EXT = '.msg'
const REDELIVERED = '.r'
export const MAX_PRIORITY = 255

export interface MessageName {
  /** File name without the redelivered marker: stable for the life of the message. */
  base: string
  priority: number
  /** Publish time, ms since the epoch. */
  publishedAt: number
  redelivered: boolean
}

let lastTs = 0
let seq = 0

/**
 * `<255-priority as 2 hex><ms base36><seq base36>-<random>.msg`: higher priority
 * sorts first, then publish time; the per-process sequence keeps a process's own
 * messages in order within one millisecond.
 */
export function newMessageBase(priority: number): string {
  const p = Math.max(0, Math.min(MAX_PRIORITY, Number.isInteger(priority) ? priority : 0))
  lastTs = Math.max(Date.now(), lastTs)
  seq = (seq + 1) % 36 ** 7
  const rand = randomBytes(5).toString('hex')
  return `${(MAX_PRIORITY - p).toString(16).padStart(2, '0')}${lastTs.toString(36).padStart(9, '0')}${seq.toString(36).padStart(7, '0')}-${rand}`
}

export function messageFileName(base: string, redelivered: boolean): string {
  return `${base}${redelivered ? REDELIVERED : ''}${MSG_EXT}`
}

export function parseMessageFileName(file: string): MessageName | undefined {
  if (!file.endsWith(MSG_EXT)) return undefined
  let base = file.slice(0, -MSG_EXT.length)
  const redelivered = base.endsWith(REDELIVERED)
  if (redelivered) base = base.slice(0, -REDELIVERED.length)
  if (base.length < 18) return undefined
  const priority = MAX_PRIORITY - Number.parseInt(base.slice(0, 2), 16)
  const publishedAt = Number.parseInt(base.slice(2, 11), 36)
  if (!Number.isFinite(priority) || !Number.isFinite(publishedAt)) return undefined
  return { base, priority, publishedAt, redelivered }
}

export function randomId(bytes = 6): string {
  return randomBytes(bytes).toString('hex')
}
