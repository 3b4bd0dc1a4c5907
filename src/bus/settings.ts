// A service's bus settings: the library's environment variables
// (amqp_events/defaults.py), under what createEventsApp is given.
import { codedError } from '../protocol/index.js'

/** Retry steps when AMQP_EVENTS_MAX_RETRIES is not set (the library's default). */
export const DEFAULT_MAX_RETRIES = 10
/** A week, in ms (AMQP_EVENTS_ARCHIVED_MESSAGE_TTL's default). */
export const DEFAULT_ARCHIVE_TTL_MS = 7 * 24 * 3600 * 1000
/** AMQP_EVENTS_ARCHIVED_QUEUE_LENGTH's default. */
export const DEFAULT_ARCHIVE_MAX_LENGTH = 10_000

export interface BusSettings {
  /**
   * Retry steps declared for the service (queues `S:retry`, `S:retry.1` …
   * `S:retry.<N-1>`, waiting 1, 2 … 2^(N-1) s), and every handler's retry
   * limit unless it names its own. 0: no retries, a failure is archived.
   */
  maxRetries: number
  /** How long an archived event is kept, ms (the archive queue's x-message-ttl). */
  archiveTtlMs: number
  /** How many archived events are kept, the oldest dropped first (x-max-length). */
  archiveMaxLength: number
}

export interface BusSettingsInput {
  maxRetries?: number
  /** ms */
  archiveTtl?: number
  archiveMaxLength?: number
}

export class BusSettingsError extends codedError('CONFIG') {}

function whole(name: string, value: unknown): number {
  const n = typeof value === 'string' ? Number(value.trim()) : value
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || (typeof value === 'string' && value.trim() === '')) {
    throw new BusSettingsError(`${name} must be a whole number of 0 or more, got ${JSON.stringify(value)}`)
  }
  return n
}

/** Options win over the environment, which wins over the library's defaults. */
export function resolveBusSettings(input: BusSettingsInput = {}, env: NodeJS.ProcessEnv = process.env): BusSettings {
  const pick = (option: unknown, optionName: string, variable: string, fallback: number): number => {
    if (option !== undefined) return whole(optionName, option)
    const raw = env[variable]
    return raw === undefined || raw === '' ? fallback : whole(variable, raw)
  }
  const settings = {
    maxRetries: pick(input.maxRetries, 'maxRetries', 'AMQP_EVENTS_MAX_RETRIES', DEFAULT_MAX_RETRIES),
    archiveTtlMs: pick(input.archiveTtl, 'archiveTtl', 'AMQP_EVENTS_ARCHIVED_MESSAGE_TTL', DEFAULT_ARCHIVE_TTL_MS),
    archiveMaxLength: pick(input.archiveMaxLength, 'archiveMaxLength', 'AMQP_EVENTS_ARCHIVED_QUEUE_LENGTH', DEFAULT_ARCHIVE_MAX_LENGTH),
  }
  // Each step is a queue; the 32nd already waits 68 years.
  if (settings.maxRetries > 32) throw new BusSettingsError(`maxRetries (AMQP_EVENTS_MAX_RETRIES) is at most 32, got ${settings.maxRetries}`)
  return settings
}

/** The library declares no archive when both its bounds are 0. */
export function archiveEnabled(settings: BusSettings): boolean {
  return settings.archiveTtlMs > 0 || settings.archiveMaxLength > 0
}
