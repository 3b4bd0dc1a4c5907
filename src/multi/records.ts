// What each node was started with, remembered next to its pidfile (and in an
// index under the default run directory, found by node name), so `restart 3`
// and `stop 3` need not repeat the options. Celery's multi has no memory.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { NodePlan } from './node-plan.js'
import type { OptionMap } from './option-parser.js'

export interface NodeRecord {
  version: 1
  node: string
  options: Array<[string, string | null]>
  passthrough: string[]
  append: string
  cwd: string
  pidfile: string
  logfile: string
  argv: string[]
  startedAt: string
}

/** `/r/celery1.pid` → `/r/celery1.pid.multi.json`. */
export function recordPathBesidePidfile(pidfile: string): string {
  return `${pidfile}.multi.json`
}

export function indexRecordPath(runDir: string, nodename: string): string {
  return join(runDir, 'nodes', `${nodename.replace(/[/\\]/g, '_')}.json`)
}

export function recordOf(plan: NodePlan, now: Date = new Date()): NodeRecord {
  return {
    version: 1,
    node: plan.name,
    options: [...plan.options],
    passthrough: plan.passthrough,
    append: plan.append,
    cwd: plan.cwd,
    pidfile: plan.pidfile,
    logfile: plan.logfile,
    argv: plan.argv,
    startedAt: now.toISOString(),
  }
}

function writeAtomic(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true })
  const tmp = `${path}.${process.pid}.tmp`
  writeFileSync(tmp, text, { mode: 0o644 })
  renameSync(tmp, path)
}

export function saveRecord(record: NodeRecord, runDir: string): void {
  const text = `${JSON.stringify(record, null, 2)}\n`
  writeAtomic(recordPathBesidePidfile(record.pidfile), text)
  writeAtomic(indexRecordPath(runDir, record.node), text)
}

function isRecord(value: unknown): value is NodeRecord {
  const r = value as Partial<NodeRecord> | null
  return (
    !!r &&
    r.version === 1 &&
    typeof r.node === 'string' &&
    Array.isArray(r.options) &&
    typeof r.pidfile === 'string' &&
    typeof r.cwd === 'string'
  )
}

export function loadRecord(path: string): NodeRecord | null {
  try {
    const value: unknown = JSON.parse(readFileSync(path, 'utf8'))
    return isRecord(value) ? value : null
  } catch {
    return null
  }
}

/** The node's record: beside the pidfile the user names now, else the index entry. */
export function findRecord(nodename: string, runDir: string, pidfile: string | null): NodeRecord | null {
  const beside = pidfile ? loadRecord(recordPathBesidePidfile(pidfile)) : null
  if (beside && beside.node === nodename) return beside
  const indexed = loadRecord(indexRecordPath(runDir, nodename))
  return indexed && indexed.node === nodename ? indexed : null
}

export function recordOptions(record: NodeRecord): OptionMap {
  return new Map(record.options)
}
