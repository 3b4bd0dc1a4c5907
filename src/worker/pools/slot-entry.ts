import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isTypeScript, nearestPackageDir, tsxImportUrl } from '../../app/index.js'
import type { LevelName } from '../../process/index.js'

/** The package root: the nearest folder above this file with package.json (works from src/, dist/ and dist/bundle/). */
function packageRoot(): string {
  const root = nearestPackageDir(dirname(fileURLToPath(import.meta.url)))
  if (root === undefined) throw new Error('cannot find the tsq package root')
  return root
}

/** slot-main: the compiled .js next to the other pools, or the .ts when running from the sources. */
export function slotEntryPath(): string {
  if (import.meta.url.endsWith('.ts')) return fileURLToPath(new URL('./slot-main.ts', import.meta.url))
  return join(packageRoot(), 'dist', 'worker', 'pools', 'slot-main.js')
}

/** A slot needs tsx when either the worker's own code or one of the user's modules is TypeScript. */
export function slotExecArgv(modulePaths: readonly string[]): string[] {
  return modulePaths.some(isTypeScript) || slotEntryPath().endsWith('.ts') ? ['--import', tsxImportUrl()] : []
}

/**
 * What a slot is told when it starts. The worker's -b and --result-backend
 * travel with it: a slot's app loads the module on its own, and without them
 * a task that sends a task (`add.delay()`) would publish to the embedded
 * default broker, not the worker's.
 */
export interface SlotData {
  modulePath: string
  includePaths: string[]
  logfile: string | null
  nodename: string
  index: number
  broker: string
  resultBackend: string | null
  /** The worker's broker_read_url / broker_write_url (CELERY_BROKER_READ_URL/WRITE_URL are not in a slot's environment). */
  brokerReadUrl?: string
  brokerWriteUrl?: string
  /** The worker's -l. */
  loglevel: LevelName
  /** worker_redirect_stdouts_level, or null when prints are not redirected. */
  redirectStdouts: LevelName | null
  /** --max-memory-per-child (KiB): the slot reads its resident set after each task only when this is set, and stops taking jobs past it. */
  maxMemoryPerChild?: number
}

/** Slot `index`'s data, out of its pool's options (which carry the pool's own settings too). */
export function slotData(o: Omit<SlotData, 'index'>, index: number): SlotData {
  return {
    modulePath: o.modulePath,
    includePaths: o.includePaths,
    nodename: o.nodename,
    logfile: o.logfile,
    index,
    broker: o.broker,
    resultBackend: o.resultBackend,
    brokerReadUrl: o.brokerReadUrl,
    brokerWriteUrl: o.brokerWriteUrl,
    loglevel: o.loglevel,
    redirectStdouts: o.redirectStdouts,
    maxMemoryPerChild: o.maxMemoryPerChild,
  }
}

/** The environment variables through which tsq (and Celery, Flower) take secrets: never handed to a prefork child. */
const SECRET_ENV = new Set([
  'TSQ_BROKER_URL',
  'CELERY_BROKER_URL',
  'TSQ_RESULT_BACKEND',
  'CELERY_RESULT_BACKEND',
  'CELERY_BROKER_READ_URL',
  'CELERY_BROKER_WRITE_URL',
  'FLOWER_BASIC_AUTH',
  'TSQ_DASHBOARD_BASIC_AUTH',
])

/**
 * Whether an environment variable is one through which tsq takes a secret. Only
 * those: a slot gets their values over IPC, while a variable the user's own
 * config module reads (CELERY_LOCK_URL, say) must reach the slot that loads it.
 */
export function isSecretEnv(name: string): boolean {
  return SECRET_ENV.has(name)
}

/**
 * A prefork child's environment: the worker's, without the variables that carry
 * tsq's secrets, so neither /proc/<pid>/environ nor a subprocess a task starts sees
 * them. The slot gets its broker and backend over the IPC channel instead.
 */
export function slotEnv(env: NodeJS.ProcessEnv, index: number): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || name === 'TSQ_SLOT_DATA' || isSecretEnv(name)) continue
    out[name] = value
  }
  out.TSQ_POOL_INDEX = String(index)
  return out
}

/** The first message a prefork child reads: its SlotData, sent by the worker right after the fork. */
export interface SlotInit {
  type: 'slot-init'
  data: SlotData
}
