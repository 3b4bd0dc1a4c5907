// Public names of the beat layer.
export { Crontab, CrontabParseError } from './crontab.js'
export type { CrontabSpec } from './crontab.js'
export { Interval } from './interval.js'
export {
  EntryError,
  scheduleOf,
  describeSchedule,
  intervalJson,
  crontabJson,
  definitionFromConfig,
  encodeDefinition,
  decodeDefinition,
  encodeMeta,
  decodeMeta,
  encodeDatetime,
  decodeDatetime,
} from './entry.js'
export type { Entry, EntryDefinition, EntryMeta, EntryOptions, ScheduleJson, Schedule } from './entry.js'
export type { BeatStore, ReserveOutcome, ReserveRequest, DueBatch } from './store.js'
export { FileStore, DEFAULT_SCHEDULE_FILE } from './file-store.js'
export { RedisStore, DEFAULT_KEY_PREFIX } from './redis-store.js'
export { openStore, redisUrlFor, databaseUrlFor, storeKindOf, SCHEDULER_CHOICES, StoreConfigError } from './open-store.js'
export { DjangoStore } from './django-store.js'
export { Clocked } from './clocked.js'
export type { StoreKind, StoreOptions } from './open-store.js'
export { RedisLease } from './lease.js'
export { AmqpMutex, mutexQueueName } from './mutex.js'
export { Beat, taskOptionsOf } from './scheduler.js'
export type { BeatOptions, HaMode } from './scheduler.js'
export { runBeat, startBeat, DEFAULT_LOCK_TIMEOUT, DEFAULT_MAX_INTERVAL } from './run-beat.js'
export type { RunBeatOptions, RunningBeat, StartBeatOptions } from './run-beat.js'
export { assertTimezone } from './timezone.js'
export { definitionFromFlags, rowOf } from './admin.js'
export type { EntryFlags, EntryRow } from './admin.js'
