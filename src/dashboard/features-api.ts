// The pages of tsq's other features (features.ts): the events bus's archive,
// task locks and beat's schedule. Reads are GET, each action a POST; a page
// the dashboard does not show answers nothing (the route table checks that
// first). A feature's refusal is the page's message, as JSON.
import type { EntryFlags } from '../beat/index.js'
import { DEFAULT_MAX_DEPTH, jsonDepthExceeds } from '../protocol/index.js'
import { scrubSecrets } from './cluster.js'
import type { DashboardContext } from './context.js'
import type { FeaturesPresent } from './features.js'
import { HttpError, readBody, sendJson, type Call } from './http.js'

/** Why a feature's page is hidden, as its refused calls say. */
const HIDDEN_PAGE: Record<keyof FeaturesPresent, string> = {
  archive: 'the archive page is not shown: no tsq service has recorded itself on this broker',
  locks: 'the locks page is not shown: there is no lock store (set --lock-url)',
  schedule: 'the schedule page is not shown: no schedule store (--schedule FILE of an existing file, or --scheduler redis)',
}

/** A page the dashboard does not show takes no action and answers no read (its store may not exist yet: an action would create it). */
export async function requirePage(d: DashboardContext, page: keyof FeaturesPresent): Promise<void> {
  if (!(await d.cluster.features.present())[page]) throw new HttpError(404, HIDDEN_PAGE[page], true)
}

/** A feature's refusal (no such lock, entry, event) as the page shows it; any other failure says what it was, passwords masked. */
async function answer<T>(c: Call, fn: () => Promise<T>): Promise<void> {
  let value: T
  try {
    value = await fn()
  } catch (error) {
    // A FeatureError is one too.
    if (error instanceof HttpError) throw error
    const code = (error as { code?: unknown }).code
    const message = scrubSecrets((error as Error).message) as string
    throw new HttpError(code === 'BAD_ARGUMENT' || code === 'USAGE' ? 400 : 502, message, true)
  }
  sendJson(c.res, 200, value)
}

export async function present(d: DashboardContext, c: Call): Promise<void> {
  sendJson(c.res, 200, await d.cluster.features.present())
}

export const archive = (d: DashboardContext, c: Call): Promise<void> => answer(c, () => d.cluster.features.archive())

export async function archiveReplay(d: DashboardContext, c: Call): Promise<void> {
  const body = await readBody(c.req)
  return answer(c, async () => {
    let selection: { ids?: unknown; all?: unknown }
    try {
      selection = JSON.parse(body || '{}') as typeof selection
    } catch {
      throw new HttpError(400, 'the body must be JSON: {"ids": [...]} or {"all": true}', true)
    }
    const ids = Array.isArray(selection.ids) ? selection.ids.filter((id): id is string => typeof id === 'string') : undefined
    return d.cluster.features.replay(c.param, { ids, all: selection.all === true })
  })
}

export const concurrencyList = (d: DashboardContext, c: Call): Promise<void> => answer(c, () => d.cluster.features.concurrency())

export const lockList = (d: DashboardContext, c: Call): Promise<void> => answer(c, () => d.cluster.features.lockList())
export const lockShow = (d: DashboardContext, c: Call): Promise<void> => answer(c, () => d.cluster.features.lockShow(c.param))
export const lockRemove = (d: DashboardContext, c: Call): Promise<void> => answer(c, () => d.cluster.features.lockRemove(c.param))

export const scheduleList = (d: DashboardContext, c: Call): Promise<void> => answer(c, () => d.cluster.features.scheduleList())
export const scheduleShow = (d: DashboardContext, c: Call): Promise<void> => answer(c, () => d.cluster.features.scheduleShow(c.param))

export async function scheduleWrite(d: DashboardContext, c: Call, verb: 'add' | 'set'): Promise<void> {
  const body = await readBody(c.req)
  const f = d.cluster.features
  return answer(c, () => {
    const fields = entryFieldsOf(body)
    return verb === 'add' ? f.scheduleAdd(c.param, fields) : f.scheduleSet(c.param, fields)
  })
}

export const scheduleRemove = (d: DashboardContext, c: Call): Promise<void> => answer(c, () => d.cluster.features.scheduleRemove(c.param))
export const scheduleEnable = (d: DashboardContext, c: Call, enabled: boolean): Promise<void> =>
  answer(c, () => d.cluster.features.scheduleSetEnabled(c.param, enabled))

/**
 * The body of a schedule add or set: a JSON object with the fields of `tsq
 * schedule add`'s flags (task, every, cron, relative, args, kwargs, queue,
 * priority, expires), each a string as typed, but relative a boolean and
 * priority an integer. A field left out is a flag not given.
 */
export function entryFieldsOf(body: string): EntryFlags {
  let raw: unknown
  if (jsonDepthExceeds(body, DEFAULT_MAX_DEPTH)) throw new HttpError(400, `the body nests deeper than ${DEFAULT_MAX_DEPTH} levels`, true)
  try {
    raw = JSON.parse(body || '{}')
  } catch {
    throw new HttpError(400, "the body must be a JSON object of the entry's fields", true)
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    throw new HttpError(400, "the body must be a JSON object of the entry's fields", true)
  const fields: EntryFlags = {}
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (value === undefined || value === null) continue
    if (key === 'relative') {
      if (typeof value !== 'boolean') throw new HttpError(400, 'relative must be true or false', true)
      fields.relative = value
    } else if (key === 'priority') {
      if (typeof value !== 'number' || !Number.isInteger(value))
        throw new HttpError(400, `priority must be an integer, got ${JSON.stringify(value)}`, true)
      fields.priority = value
    } else if (
      key === 'task' ||
      key === 'every' ||
      key === 'cron' ||
      key === 'args' ||
      key === 'kwargs' ||
      key === 'queue' ||
      key === 'expires'
    ) {
      if (typeof value !== 'string') throw new HttpError(400, `${key} must be a string, got ${JSON.stringify(value)}`, true)
      fields[key] = value
    } else throw new HttpError(400, `unknown field ${JSON.stringify(key)}`, true)
  }
  return fields
}
