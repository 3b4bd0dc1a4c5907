// The worker settings an app's conf may give, resolved as Celery resolves
// them: the command-line flag, else the environment variable click reads for
// it (Celery's CLI runs with auto_envvar_prefix="CELERY", so `-c` is also
// CELERY_WORKER_CONCURRENCY), else the conf, else Celery's default.
import { codedError } from '../protocol/index.js'
import type { PoolKind } from './pools/pool.js'

export type SettingSource = 'flag' | 'env' | 'conf' | 'default'

export interface Resolved<T> {
  value: T
  source: SettingSource
}

/** A worker setting (a flag, the environment, the app's conf) tsq cannot run with. */
export class WorkerSettingError extends codedError('CONFIG') {}

export interface WorkerFlagValues {
  concurrency?: number
  pool?: PoolKind
  prefetchMultiplier?: number
  maxTasksPerChild?: number
  maxMemoryPerChild?: number
  /** -E: only `true` counts as given, as a click boolean flag. */
  taskEvents?: boolean
  statedb?: string | null
}

export interface WorkerSettings {
  concurrency: Resolved<number>
  pool: Resolved<PoolKind>
  prefetchMultiplier: Resolved<number>
  maxTasksPerChild: Resolved<number | undefined>
  maxMemoryPerChild: Resolved<number | undefined>
  taskEvents: Resolved<boolean>
  statedb: Resolved<string | null>
  disableRateLimits: boolean
}

type Parse<T> = (raw: unknown, where: string) => T

const wholeNumber =
  (min: number): Parse<number> =>
  (raw, where) => {
    const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min)
      throw new WorkerSettingError(`${where} = ${JSON.stringify(raw)}: expected a whole number >= ${min}`)
    return n
  }

const poolKind: Parse<PoolKind> = (raw, where) => {
  if (raw === 'processes') return 'prefork'
  if (raw === 'prefork' || raw === 'threads' || raw === 'solo') return raw
  throw new WorkerSettingError(`${where} = ${JSON.stringify(raw)}: tsq's pools are prefork (processes), threads and solo`)
}

const boolean: Parse<boolean> = (raw, where) => {
  if (typeof raw === 'boolean') return raw
  // click's BOOL: what an environment variable may say.
  if (typeof raw === 'string' && ['1', 'true', 't', 'yes', 'y', 'on'].includes(raw.toLowerCase())) return true
  if (typeof raw === 'string' && ['0', 'false', 'f', 'no', 'n', 'off'].includes(raw.toLowerCase())) return false
  throw new WorkerSettingError(`${where} = ${JSON.stringify(raw)}: expected true or false`)
}

const text: Parse<string> = (raw, where) => {
  if (typeof raw === 'string' && raw !== '') return raw
  throw new WorkerSettingError(`${where} = ${JSON.stringify(raw)}: expected a path`)
}

function pick<T, D>(
  flag: T | undefined,
  env: string | undefined,
  envName: string,
  conf: unknown,
  confName: string,
  parse: Parse<T>,
  dflt: D,
): Resolved<T | D> {
  if (flag !== undefined) return { value: flag, source: 'flag' }
  if (env !== undefined && env !== '') return { value: parse(env, envName), source: 'env' }
  if (conf !== undefined && conf !== null) return { value: parse(conf, confName), source: 'conf' }
  return { value: dflt, source: 'default' }
}

/** flag > CELERY_WORKER_* env > conf > default, for each worker setting a conf may hold. */
export function resolveWorkerSettings(
  flags: WorkerFlagValues,
  conf: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  cpus: number,
): WorkerSettings {
  return {
    concurrency: pick(
      flags.concurrency,
      env.CELERY_WORKER_CONCURRENCY,
      'CELERY_WORKER_CONCURRENCY',
      conf.worker_concurrency,
      'worker_concurrency',
      wholeNumber(1),
      cpus,
    ),
    pool: pick(flags.pool, env.CELERY_WORKER_POOL, 'CELERY_WORKER_POOL', conf.worker_pool, 'worker_pool', poolKind, 'prefork' as const),
    prefetchMultiplier: pick(
      flags.prefetchMultiplier,
      env.CELERY_WORKER_PREFETCH_MULTIPLIER,
      'CELERY_WORKER_PREFETCH_MULTIPLIER',
      conf.worker_prefetch_multiplier,
      'worker_prefetch_multiplier',
      wholeNumber(0),
      4,
    ),
    maxTasksPerChild: pick(
      flags.maxTasksPerChild,
      env.CELERY_WORKER_MAX_TASKS_PER_CHILD,
      'CELERY_WORKER_MAX_TASKS_PER_CHILD',
      conf.worker_max_tasks_per_child,
      'worker_max_tasks_per_child',
      wholeNumber(1),
      undefined,
    ),
    maxMemoryPerChild: pick(
      flags.maxMemoryPerChild,
      env.CELERY_WORKER_MAX_MEMORY_PER_CHILD,
      'CELERY_WORKER_MAX_MEMORY_PER_CHILD',
      conf.worker_max_memory_per_child,
      'worker_max_memory_per_child',
      wholeNumber(1),
      undefined,
    ),
    taskEvents: pick(
      flags.taskEvents === true ? true : undefined,
      env.CELERY_WORKER_TASK_EVENTS,
      'CELERY_WORKER_TASK_EVENTS',
      conf.worker_send_task_events,
      'worker_send_task_events',
      boolean,
      false,
    ),
    statedb: pick(
      flags.statedb ?? undefined,
      env.CELERY_WORKER_STATEDB,
      'CELERY_WORKER_STATEDB',
      conf.worker_state_db,
      'worker_state_db',
      text,
      null,
    ),
    disableRateLimits:
      conf.worker_disable_rate_limits === undefined || conf.worker_disable_rate_limits === null
        ? false
        : boolean(conf.worker_disable_rate_limits, 'worker_disable_rate_limits'),
  }
}
