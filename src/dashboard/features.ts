// The pages of tsq's other features, where they are present: the events
// bus's archive (`tsq archive`), task locks (`tsq locks`) and beat's schedule
// store (`tsq schedule`). Each action is the one its command takes, through
// the same modules below the commands (src/bus, src/locks, src/beat); the
// HTTP layer (server.ts) calls only this.
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import {
  DEFAULT_SCHEDULE_FILE,
  definitionFromFlags,
  openStore,
  rowOf,
  type BeatStore,
  type EntryFlags,
  type EntryRow,
  type StoreOptions,
} from '../beat/index.js'
import { countArchive, listArchive, replayArchive, type ArchivedEvent, findServices, type KnownService } from '../bus/index.js'
import { lockRow, type LockRow } from '../cli/lock-store.js'
import {
  closeConcurrencyStores,
  closeLockStoreAt,
  concurrencyStoreAt,
  concurrencyUrlFor,
  lockStoreAt,
  lockUrlFor,
  type ConcurrencyScopeStats,
  type LockStore,
} from '../locks/index.js'
import { maskUrl, type Transport } from '../transport/index.js'
import { HttpError } from './http.js'

export interface FeatureOptions {
  brokerUrl: string
  resultBackend?: string | null
  /** conf.lock_url / --lock-url; else the store the worker picks for this broker and backend. */
  lockUrl?: string | null
  /** The schedule store as `tsq schedule` opens it (--scheduler, --schedule, --redis-url, --key-prefix). */
  schedule?: StoreOptions | null
}

export interface FeaturesPresent {
  archive: boolean
  locks: boolean
  schedule: boolean
}

/** A request the feature cannot answer: the page shows the message (a 400/404, not a 500), as JSON. */
export class FeatureError extends HttpError {
  constructor(status: number, message: string) {
    super(status, message, true)
  }
}

export class Features {
  private lockStore: Promise<LockStore> | null = null
  private concurrencyOpened = false
  private beatStore: BeatStore | null = null
  readonly lockUrl: string | null
  readonly scheduleWhere: string | null

  constructor(
    private readonly o: FeatureOptions,
    private readonly transport: () => Transport,
  ) {
    let url: string | null = null
    try {
      url = lockUrlFor({ lockUrl: o.lockUrl ?? null, brokerUrl: o.brokerUrl, resultBackend: o.resultBackend ?? null })
    } catch {
      // No Redis and no file:// broker: no lock store, so no locks page (as `tsq locks` says then).
    }
    this.lockUrl = url
    const s = o.schedule
    this.scheduleWhere = !s
      ? null
      : s.scheduler === 'redis'
        ? `redis (${s.keyPrefix ?? 'redbeat:'})`
        : resolve(s.schedulePath ?? DEFAULT_SCHEDULE_FILE)
  }

  /** Which pages to show. The archive: a tsq service has recorded itself on this broker; the schedule: a file store that exists, or --scheduler redis. */
  async present(): Promise<FeaturesPresent> {
    const archive = await findServices(this.transport(), { all: true })
      .then((s) => s.length > 0)
      .catch(() => false)
    const s = this.o.schedule
    const schedule = !!s && (s.scheduler === 'redis' || existsSync(resolve(s.schedulePath ?? DEFAULT_SCHEDULE_FILE)))
    return { archive, locks: this.lockUrl !== null, schedule }
  }

  async close(): Promise<void> {
    // The store is the process's shared one for that URL (lockStoreAt): closed and forgotten together.
    if (this.lockStore && this.lockUrl) await closeLockStoreAt(this.lockUrl)
    if (this.concurrencyOpened) await closeConcurrencyStores()
    await this.beatStore?.close().catch(() => undefined)
    this.lockStore = null
    this.beatStore = null
  }

  // ---- archive (tsq archive ls / replay) ------------------------------------

  private async services(name?: string): Promise<KnownService[]> {
    const all = await findServices(this.transport(), { all: true })
    if (!name) return all
    const one = all.filter((s) => s.record.service === name)
    if (one.length === 0) throw new FeatureError(404, `no service '${name}' has recorded itself on this broker`)
    return one
  }

  async archive(): Promise<{ services: { service: string; archived: number }[]; events: ArchivedEvent[] }> {
    const services = await this.services()
    const out: { service: string; archived: number }[] = []
    const events: ArchivedEvent[] = []
    for (const s of services) {
      const bounds = { ttlMs: s.record.settings.archiveTtlMs }
      out.push({ service: s.record.service, archived: await countArchive(this.transport(), s.record.service, bounds) })
      // A page's worth per service: the archive is read by holding its messages.
      events.push(...(await listArchive(this.transport(), s.record.service, { ...bounds, limit: 200 })))
    }
    return { services: out, events }
  }

  /** `tsq archive replay ID... --service S` or `--all --service S`: ids not in the archive refuse the whole call before anything is sent. */
  async replay(service: string, selection: { ids?: string[]; all?: boolean }): Promise<{ replayed: ArchivedEvent[]; duplicates: number }> {
    const [s] = await this.services(service)
    const bounds = { ttlMs: s!.record.settings.archiveTtlMs }
    if (selection.all) return replayArchive(this.transport(), service, { all: true, ...bounds })
    const ids = selection.ids ?? []
    if (ids.length === 0) throw new FeatureError(400, 'give the ids of the events to replay, or all')
    const held = new Set((await listArchive(this.transport(), service, bounds)).map((e) => e.id))
    const missing = ids.filter((id) => !held.has(id))
    if (missing.length) throw new FeatureError(404, `no archived event ${missing.join(', ')} in ${service}'s archive`)
    return replayArchive(this.transport(), service, { ids, ...bounds })
  }

  // ---- concurrency keys (tsq inspect concurrency, read from the store) -------

  /** Every scope's keys with a backlog or a running slot, and its limit; empty when there is no Redis store. */
  async concurrency(): Promise<ConcurrencyScopeStats[]> {
    let url: string
    try {
      url = concurrencyUrlFor({ lockUrl: this.o.lockUrl ?? null, brokerUrl: this.o.brokerUrl, resultBackend: this.o.resultBackend ?? null })
    } catch {
      return []
    }
    this.concurrencyOpened = true
    return (await concurrencyStoreAt(url)).stats()
  }

  // ---- locks (tsq locks ls / show / rm) --------------------------------------

  private locks(): Promise<LockStore> {
    if (!this.lockUrl)
      throw new FeatureError(404, 'no lock store: the broker is not Redis and there is no Redis result backend (set --lock-url)')
    this.lockStore ??= lockStoreAt(this.lockUrl)
    return this.lockStore
  }

  async lockList(): Promise<{ store: string; locks: LockRow[] }> {
    return { store: maskUrl(this.lockUrl ?? ''), locks: (await (await this.locks()).list()).map((l) => lockRow(l)) }
  }

  async lockShow(id: string): Promise<LockRow> {
    const found = await (await this.locks()).get(id)
    if (!found) throw new FeatureError(404, `no lock ${JSON.stringify(id)} is held`)
    return lockRow(found)
  }

  async lockRemove(id: string): Promise<{ removed: string }> {
    if (!(await (await this.locks()).remove(id))) throw new FeatureError(404, `no lock ${JSON.stringify(id)} is held`)
    return { removed: id }
  }

  // ---- schedule (tsq schedule ls / show / add / set / enable / disable / rm) --

  private async store(): Promise<BeatStore> {
    if (!this.o.schedule) throw new FeatureError(404, 'no schedule store')
    this.beatStore ??= await openStore(this.o.schedule)
    return this.beatStore
  }

  async scheduleList(): Promise<{ store: string | null; entries: EntryRow[] }> {
    const tz = this.o.schedule?.tz ?? 'UTC'
    return { store: this.scheduleWhere, entries: (await (await this.store()).list()).map((e) => rowOf(e, tz)) }
  }

  async scheduleShow(name: string): Promise<EntryRow> {
    const entry = await (await this.store()).get(name)
    if (!entry) throw new FeatureError(404, `no entry named ${JSON.stringify(name)}`)
    return rowOf(entry, this.o.schedule?.tz ?? 'UTC')
  }

  /** `tsq schedule enable|disable NAME`: running beats follow within their loop interval. */
  async scheduleSetEnabled(name: string, enabled: boolean): Promise<EntryRow> {
    const store = await this.store()
    const current = await store.get(name)
    if (!current) throw new FeatureError(404, `no entry named ${JSON.stringify(name)}`)
    await store.save({ ...current.definition, enabled })
    return rowOf((await store.get(name))!, this.o.schedule?.tz ?? 'UTC')
  }

  /** `tsq schedule add NAME --task T --every S|--cron C ...`: a name in use is refused (change it with set). */
  async scheduleAdd(name: string, fields: EntryFlags): Promise<EntryRow> {
    if (!name.trim()) throw new FeatureError(400, 'an entry needs a name')
    const definition = definitionFromFlags(name, fields)
    const store = await this.store()
    if (await store.get(name)) throw new FeatureError(409, `entry ${JSON.stringify(name)} exists; change it instead`)
    await store.save(definition)
    return rowOf((await store.get(name))!, this.o.schedule?.tz ?? 'UTC')
  }

  /** `tsq schedule set NAME ...`: the fields given change, the others and the run history stay. */
  async scheduleSet(name: string, fields: EntryFlags): Promise<EntryRow> {
    const store = await this.store()
    const current = await store.get(name)
    if (!current) throw new FeatureError(404, `no entry named ${JSON.stringify(name)}`)
    await store.save(definitionFromFlags(name, fields, current.definition))
    return rowOf((await store.get(name))!, this.o.schedule?.tz ?? 'UTC')
  }

  async scheduleRemove(name: string): Promise<{ removed: string }> {
    if (!(await (await this.store()).remove(name))) throw new FeatureError(404, `no entry named ${JSON.stringify(name)}`)
    return { removed: name }
  }
}
