// The lock store `tsq locks` reads: --lock-url, else the one the worker picks
// for this broker and result backend (src/locks/open-store.ts).
import { Flags } from '@oclif/core'
import {
  lockStoreAt,
  lockUrlFor,
  tokenCounterFor,
  closeLockStores,
  type LockListing,
  type LockSettings,
  type LockStore,
} from '../locks/index.js'
import type { ClientConfig } from './client-config.js'
import { CliError } from './errors.js'

export const lockFlags = {
  'lock-url': Flags.string({
    description: "The lock store (conf.lock_url): redis://, amqp:// or file://. Default: the app's conf.lock_url (-A), else the broker's.",
  }),
}

export async function withLockStore<T>(
  config: ClientConfig,
  lockUrl: string | undefined,
  fn: (store: LockStore) => Promise<T>,
): Promise<T> {
  let url: string
  let settings: LockSettings
  try {
    settings = { lockUrl: lockUrl ?? config.lockUrl ?? null, brokerUrl: config.brokerUrl, resultBackend: config.resultBackend ?? null }
    url = lockUrlFor(settings)
  } catch (error) {
    throw new CliError('CONFIG', (error as Error).message.replace('set conf.lock_url to', 'pass --lock-url with'))
  }
  let store: LockStore
  try {
    store = await lockStoreAt(url, tokenCounterFor(settings))
  } catch (error) {
    throw new CliError('BAD_URL', (error as Error).message)
  }
  try {
    return await fn(store)
  } catch (error) {
    if (error instanceof CliError) throw error
    throw new CliError(
      'BROKER_UNREACHABLE',
      `lock store ${url.replace(/\/\/[^@/]*@/, '//***@')} unreachable: ${(error as Error).message}`,
      { cause: error },
    )
  } finally {
    await closeLockStores()
  }
}

/** A lock as `tsq locks` shows it (and --json gives it). */
export interface LockRow {
  id: string
  task: string | null
  taskId: string | null
  node: string
  pid: number
  token: number
  acquiredAt: string
  ageS: number
  leaseS: number
  leftS: number
}

export function lockRow(l: LockListing, now = Date.now()): LockRow {
  return {
    id: l.id,
    task: l.task,
    taskId: l.taskId,
    node: l.node,
    pid: l.pid,
    token: l.token,
    acquiredAt: new Date(l.acquiredAt).toISOString(),
    ageS: Math.max(0, Math.round((now - l.acquiredAt) / 100) / 10),
    leaseS: l.leaseMs / 1000,
    leftS: Math.round(l.leftMs / 100) / 10,
  }
}
