// What a long-running tsq process does to itself, whatever it runs: Celery's
// log line, pidfiles, dropping privileges, detaching from the terminal, and
// giving memory back while idle. Knows nothing of brokers or tasks; imports
// only protocol/ (to mask secrets in log lines).
export { LEVELS, parseLevel, safeLine, Logger } from './logger.js'
export type { LevelName } from './logger.js'
export { PidfileError, readPid, pidAlive, checkPidfile, isTsqCommand, isTsqWorker, acquirePidfile } from './pidfile.js'
export type { TsqCommandName } from './pidfile.js'
export { PrivilegeError, resolveCredentials, dropPrivileges, parseUmask } from './privileges.js'
export type { Credentials } from './privileges.js'
export { detach } from './detach.js'
export { trimMemoryWhenIdle, compactingGc, fullGc, releaseNativeMemory } from './idle-trim.js'
export type { IdleTrimOptions } from './idle-trim.js'
