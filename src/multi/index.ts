export { parseMultiArgs, formatOption, mergeOptions, type OptionMap, type ParsedArgs } from './option-parser.js'
export { expandNodes, expander, buildNodename, type NodeSpec } from './node-list.js'
export { planNode, defaultDirs, tsqHome, type NodePlan, type PlanContext } from './node-plan.js'
export { findRecord, saveRecord, loadRecord, recordPathBesidePidfile, indexRecordPath, type NodeRecord } from './records.js'
export { inspectPid, inspectPidfile, workerNodeOf, readPidfile, pidAlive, type PidState } from './process-check.js'
export { startNodes, stopNodes, restartNodes, type NodeResult, type NodeStatus, type ClusterDeps } from './cluster.js'
export {
  runMulti,
  takeReservedOptions,
  takeSignal,
  USAGE,
  MULTI_COMMANDS,
  type MultiRun,
  type MultiToolDeps,
  type ReservedOptions,
} from './multi-tool.js'
export { termOutput, type MultiOutput } from './output.js'
export { MultiError, MultiUsageError, MultiCantCreateError } from './errors.js'
