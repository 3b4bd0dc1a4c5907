// The CLI's entry: every command, for oclif's explicit discovery, so oclif
// finds them here instead of scanning and importing one file per command.
// `npm run build` bundles this file and its imports with esbuild
// (scripts/bundle.mjs) into dist/bundle; bin/dev.js runs it from the sources.
import { execute as oclifExecute } from '@oclif/core'
import { reportCliError } from '../cli/report-error.js'
import { unknownCommand } from '../cli/unknown-command.js'
import Amqp from '../commands/amqp.js'
import ArchiveLs from '../commands/archive/ls.js'
import ArchivePurge from '../commands/archive/purge.js'
import ArchiveReplay from '../commands/archive/replay.js'
import ArchiveShow from '../commands/archive/show.js'
import Beat from '../commands/beat.js'
import BusDeclare from '../commands/bus/declare.js'
import BusLs from '../commands/bus/ls.js'
import Call from '../commands/call.js'
import Control from '../commands/control.js'
import Dashboard from '../commands/dashboard.js'
import Events from '../commands/events.js'
import FailedLs from '../commands/failed/ls.js'
import FailedPurge from '../commands/failed/purge.js'
import FailedRetry from '../commands/failed/retry.js'
import FailedShow from '../commands/failed/show.js'
import Fire from '../commands/fire.js'
import GraphBootsteps from '../commands/graph/bootsteps.js'
import GraphWorkers from '../commands/graph/workers.js'
import Inspect from '../commands/inspect.js'
import ListBindings from '../commands/list/bindings.js'
import LogtoolDebug from '../commands/logtool/debug.js'
import LogtoolErrors from '../commands/logtool/errors.js'
import LogtoolIncomplete from '../commands/logtool/incomplete.js'
import LogtoolStats from '../commands/logtool/stats.js'
import LogtoolTraces from '../commands/logtool/traces.js'
import Migrate from '../commands/migrate.js'
import Multi from '../commands/multi.js'
import Purge from '../commands/purge.js'
import ReportCommand from '../commands/report.js'
import Result from '../commands/result.js'
import DedupLs from '../commands/dedup/ls.js'
import DedupRm from '../commands/dedup/rm.js'
import LocksLs from '../commands/locks/ls.js'
import LocksRm from '../commands/locks/rm.js'
import LocksShow from '../commands/locks/show.js'
import ScheduleAdd from '../commands/schedule/add.js'
import ScheduleDisable from '../commands/schedule/disable.js'
import ScheduleEnable from '../commands/schedule/enable.js'
import ScheduleLs from '../commands/schedule/ls.js'
import ScheduleRm from '../commands/schedule/rm.js'
import ScheduleSet from '../commands/schedule/set.js'
import ScheduleShow from '../commands/schedule/show.js'
import Shell from '../commands/shell.js'
import Status from '../commands/status.js'
import Why from '../commands/why.js'
import Worker from '../commands/worker.js'

export const COMMANDS = {
  amqp: Amqp,
  'archive:ls': ArchiveLs,
  'archive:purge': ArchivePurge,
  'archive:replay': ArchiveReplay,
  'archive:show': ArchiveShow,
  beat: Beat,
  'bus:declare': BusDeclare,
  'bus:ls': BusLs,
  call: Call,
  control: Control,
  dashboard: Dashboard,
  events: Events,
  'failed:ls': FailedLs,
  'failed:purge': FailedPurge,
  'failed:retry': FailedRetry,
  'failed:show': FailedShow,
  fire: Fire,
  'graph:bootsteps': GraphBootsteps,
  'graph:workers': GraphWorkers,
  inspect: Inspect,
  'list:bindings': ListBindings,
  'logtool:debug': LogtoolDebug,
  'logtool:errors': LogtoolErrors,
  'logtool:incomplete': LogtoolIncomplete,
  'logtool:stats': LogtoolStats,
  'logtool:traces': LogtoolTraces,
  migrate: Migrate,
  multi: Multi,
  purge: Purge,
  report: ReportCommand,
  result: Result,
  'dedup:ls': DedupLs,
  'dedup:rm': DedupRm,
  'locks:ls': LocksLs,
  'locks:rm': LocksRm,
  'locks:show': LocksShow,
  'schedule:add': ScheduleAdd,
  'schedule:disable': ScheduleDisable,
  'schedule:enable': ScheduleEnable,
  'schedule:ls': ScheduleLs,
  'schedule:rm': ScheduleRm,
  'schedule:set': ScheduleSet,
  'schedule:show': ScheduleShow,
  shell: Shell,
  status: Status,
  why: Why,
  worker: Worker,
}

/**
 * oclif's execute, after a look at the command's name: one that tsq does not
 * have is a usage error with the names near it (exit 64), where oclif's own
 * not-found exits 2.
 */
export async function execute(options: { args: string[]; dir: string; development?: boolean }): Promise<unknown> {
  const unknown = unknownCommand(options.args, Object.keys(COMMANDS))
  if (unknown) {
    const json = options.args.includes('--json') || options.args.includes('-j')
    return reportCliError(unknown, { json, debug: options.args.includes('--debug') })
  }
  return oclifExecute(options)
}
