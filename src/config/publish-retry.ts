// Celery's task_publish_retry / task_publish_retry_policy: a task publish that
// fails because the broker connection is down is tried again, as kombu's
// Connection.ensure does (Producer.publish with retry=True). Only connection
// errors are retried; a refused request (406, WRONGTYPE) fails at once.
import { setTimeout as sleep } from 'node:timers/promises'
import { BrokerConnectionError } from '../transport/index.js'

export interface PublishRetryPolicy {
  /** Retries after the first attempt; null: no limit (kombu's None). */
  maxRetries: number | null
  intervalStart: number
  intervalStep: number
  intervalMax: number
}

/** Celery 5.2.6's task_publish_retry_policy default. */
export const DEFAULT_PUBLISH_RETRY_POLICY: PublishRetryPolicy = { maxRetries: 3, intervalStart: 0, intervalStep: 0.2, intervalMax: 1 }

/** kombu Connection.ensure's own defaults, for keys a policy leaves out. */
const ENSURE_DEFAULTS: PublishRetryPolicy = { maxRetries: null, intervalStart: 1, intervalStep: 1, intervalMax: 1 }

const KEYS: Record<string, keyof PublishRetryPolicy> = {
  max_retries: 'maxRetries',
  interval_start: 'intervalStart',
  interval_step: 'intervalStep',
  interval_max: 'intervalMax',
}

/** Why a task_publish_retry_policy cannot be read, or null. */
export function publishRetryPolicyRefusal(value: unknown): string | null {
  if (value === null || value === undefined) return null
  if (typeof value !== 'object' || Array.isArray(value)) return 'expected a map of max_retries, interval_start, interval_step, interval_max'
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    if (!(k in KEYS)) return `${k} is not one of max_retries, interval_start, interval_step, interval_max`
    if (k === 'max_retries' && v === null) continue
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) return `${k} must be a number >= 0${k === 'max_retries' ? ' or None' : ''}`
  }
  return null
}

/**
 * The policy a send uses, from the app's conf: null when task_publish_retry
 * is off. A conf policy stands in for Celery's default whole, its missing keys
 * taking kombu's ensure() defaults, as Celery passes it to kombu.
 */
export function publishRetryPolicy(conf: Record<string, unknown>): PublishRetryPolicy | null {
  if (conf.task_publish_retry === false) return null
  const given = conf.task_publish_retry_policy
  if (given === undefined || given === null || publishRetryPolicyRefusal(given)) return DEFAULT_PUBLISH_RETRY_POLICY
  const policy = { ...ENSURE_DEFAULTS }
  for (const [k, v] of Object.entries(given as Record<string, unknown>)) (policy as Record<string, unknown>)[KEYS[k]!] = v
  return policy
}

/** kombu's fxrange(start, start + max, step, repeatlast=True): the sleep before retry n. */
export function retryInterval(policy: PublishRetryPolicy, n: number): number {
  const stop = policy.intervalStart + policy.intervalMax
  let value = policy.intervalStart
  for (let i = 0; i < n; i++) {
    const next = value + policy.intervalStep
    // fxrange yields while cur <= stop (any cur when stop is 0), then repeats the last.
    if (stop !== 0 && next > stop) break
    value = next
  }
  return value
}

/**
 * Runs `publish`, retrying on a lost connection as the policy says; `onRetry`
 * hears each retry. `publish` is called at once, in this turn (a send's write
 * joins the batch of the sends made beside it), and the retry machinery costs
 * nothing until it fails.
 */
export function withPublishRetry<T>(
  policy: PublishRetryPolicy | null | undefined,
  publish: () => Promise<T>,
  onRetry?: (error: Error, retries: number) => void,
): Promise<T> {
  let first: Promise<T>
  try {
    first = publish()
  } catch (error) {
    first = Promise.reject(error)
  }
  if (!policy) return first
  return first.catch((error: unknown) => retryAfter(error, policy, publish, onRetry))
}

/**
 * What withPublishRetry does once `publish` has failed with `error`: retry
 * as the policy says, or give the error back. For a caller that made the
 * first attempt itself and chains this on its failure.
 */
export function retryFailedPublish<T>(
  error: unknown,
  policy: PublishRetryPolicy | null | undefined,
  publish: () => Promise<T>,
): Promise<T> {
  return policy ? retryAfter(error, policy, publish) : Promise.reject(error)
}

async function retryAfter<T>(
  error: unknown,
  policy: PublishRetryPolicy,
  publish: () => Promise<T>,
  onRetry?: (error: Error, retries: number) => void,
): Promise<T> {
  for (let retries = 0; ; retries++) {
    if (!(error instanceof BrokerConnectionError)) throw error
    if (policy.maxRetries !== null && retries >= policy.maxRetries) throw error
    onRetry?.(error, retries)
    await sleep(retryInterval(policy, retries) * 1000)
    try {
      return await publish()
    } catch (next) {
      error = next
    }
  }
}
