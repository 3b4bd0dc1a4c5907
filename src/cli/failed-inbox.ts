// What the `tsq failed` commands share: the filter flags, opening the result
// backend (and the broker for a retry), choosing the tasks a bulk verb acts
// on, and asking before it does (a terminal asks; a script passes --yes).
import { Flags } from '@oclif/core'
import { createResultBackend, type ResultBackend } from '../backends/index.js'
import { failedStoreOf, listFailed, showFailed, type FailedFilter, type FailedTask } from '../client/index.js'
import { codedError } from '../protocol/index.js'
import type { ClientConfig } from './client-config.js'
import { UsageError } from './errors.js'
import { integerFlag, stringFlag } from './flags/oclif-flags.js'

export class NotFailedError extends codedError('NOT_FAILED') {}

export const failedFilterFlags = {
  task: stringFlag({ description: 'Only this task (`*` matches any run of characters: `proj.*`).' }),
  exception: stringFlag({ char: 'e', description: "Only failures whose exception's type or repr holds this text (any case)." }),
  worker: stringFlag({ char: 'w', description: 'Only failures on this worker (node name; `*` matches any run).' }),
  since: stringFlag({ description: 'Only failures from this time on: ISO 8601, or an age such as 30m, 2h, 1d.' }),
  until: stringFlag({ description: 'Only failures up to this time: ISO 8601, or an age such as 30m, 2h, 1d.' }),
  limit: integerFlag({ char: 'l', description: 'At most this many, newest first (default 1000).', min: 1 }),
}

export const bulkFlags = {
  all: Flags.boolean({ description: 'Every failed task the filters select (without filters: every one).' }),
  yes: Flags.boolean({
    char: 'y',
    description: 'Do not ask (required when stdin is not a terminal and more than one task, or any purge).',
  }),
}

const AGE = /^(\d+(?:\.\d+)?)\s*(s|m|h|d)$/
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** `--since 2h` (that long ago) or an ISO 8601 time. */
export function parseWhen(text: string, flag: string, now = Date.now()): Date {
  const age = AGE.exec(text.trim())
  if (age) return new Date(now - Number(age[1]) * UNIT_MS[age[2] as keyof typeof UNIT_MS])
  const at = Date.parse(text)
  if (Number.isNaN(at)) throw new UsageError(`--${flag} ${JSON.stringify(text)}: not an ISO 8601 time nor an age such as 30m, 2h, 1d`)
  return new Date(at)
}

export function filterFrom(flags: { task?: string; exception?: string; worker?: string; since?: string; until?: string }): FailedFilter {
  return {
    task: flags.task,
    exception: flags.exception,
    worker: flags.worker,
    since: flags.since ? parseWhen(flags.since, 'since') : undefined,
    until: flags.until ? parseWhen(flags.until, 'until') : undefined,
  }
}

/** Runs `fn` with the configured result backend, closed after. */
export async function withBackend<T>(config: ClientConfig, fn: (backend: ResultBackend) => Promise<T>): Promise<T> {
  const backend = await createResultBackend(config.resultBackend, config.backendOptions)
  try {
    failedStoreOf(backend)
    return await fn(backend)
  } finally {
    await backend.close()
  }
}

/** The tasks a bulk verb acts on: the ids given (each must be in the inbox), or --all with the filters. */
export async function chooseFailed(
  backend: ResultBackend,
  ids: readonly string[],
  flags: { all?: boolean; limit?: number } & Parameters<typeof filterFrom>[0],
): Promise<FailedTask[]> {
  const filter = filterFrom(flags)
  const filtered = Object.values(filter).some((v) => v !== undefined)
  if (flags.all && ids.length) throw new UsageError('give task ids or --all, not both')
  if (!flags.all && ids.length === 0) throw new UsageError('give the ids of the failed tasks, or --all (with filters to narrow it)')
  if (!flags.all && filtered) throw new UsageError('the filters (--task, --exception, --worker, --since, --until) go with --all')
  if (flags.all) return listFailed(backend, filter, { limit: flags.limit })
  const found: FailedTask[] = []
  const missing: string[] = []
  for (const id of ids) {
    const shown = await showFailed(backend, id)
    if (shown) found.push(shown.task)
    else missing.push(id)
  }
  if (missing.length) throw new NotFailedError(`not in the failed-task inbox of ${backend.displayUrl}: ${missing.join(', ')}`)
  return found
}

/**
 * True when the user agrees (or --yes); a script without --yes is refused
 * with exit 64 where a terminal would have been asked. `always`: ask even
 * for one task (purge).
 */
export async function confirmed(question: string, count: number, yes: boolean, always: boolean): Promise<boolean> {
  if (yes || (count <= 1 && !always)) return true
  if (!process.stdin.isTTY)
    throw new UsageError(`refusing to go on without confirmation: stdin is not a terminal, pass --yes (${question})`)
  const { confirm } = await import('@inquirer/prompts')
  return confirm({ message: question, default: false })
}

/** One line of text: the start of it. */
export function oneLine(text: string | null, width = 60): string {
  if (!text) return '-'
  const line = text.split('\n')[0]!
  return line.length > width ? `${line.slice(0, width - 1)}…` : line
}
