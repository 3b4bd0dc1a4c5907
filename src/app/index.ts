// The app: what a user's task module imports (createApp, app.task, sending,
// canvas, results, the running task's context, signals), and the one engine
// that runs a task (execution/), which eager runs here and the worker's pool
// slots use. Sits on client/, backends/, config/ and the layers below; the
// worker, beat, bus, CLI and the package entry (src/index.ts) import it here.

// What a task module uses.
export { App, createApp } from './app.js'
export type { AppOptions, ChainResult, ControlCommandHandler, ControlCommandKind, ResultsOf } from './app.js'
export { Task } from './task.js'
export type { AfterFirst, TaskFunction, TaskOptions } from './task.js'
export { RemoteTask } from './remote-task.js'
export { TaskHandle } from './task-handle.js'
export type { ApplyCall, ApplyOptions, TrailingArgs } from './task-handle.js'
// Signatures are the protocol's (protocol/messages/canvas.ts): what Celery sends is what a task module builds.
export { signature } from '../protocol/index.js'
export type { ResultOf, Signature } from '../protocol/index.js'
export { AsyncResult, GroupResult, TaskError } from './async-result.js'
export type { GetOptions } from './async-result.js'
export { EagerResult, isAlwaysEager } from './eager.js'
export type { EagerApplyOptions, EagerState } from './eager.js'
export { SendManyError } from './send-many-error.js'
export type { SendOutcome, SendStatus } from './send-many-error.js'
export {
  currentTask,
  Ignore,
  Reject,
  ReplaceRequest,
  RetryRequest,
  SoftTimeLimitExceeded,
  runningTask,
  runWithContext,
  taskPredicate,
} from './task-context.js'
export type { DeliveryInfo, RetryOptions, StateSink, TaskContext, TaskRun } from './task-context.js'
export { AppSignals, SIGNAL_NAMES, announceProcessInit, runReceiver } from './app-signals.js'
export type { RequestInfo, SignalName, SignalPayloads, SignalReceiver } from './app-signals.js'
// The task locks as the worker meets them: a once mark to clear, the lock a run holds, a lost slot's locks.
export { clearOnceMark, heldLockOf, lockSettings, releaseLostSlotLocks } from './locking.js'

// Loading a task module by path (-A), as the worker, beat, pool slots and the CLI do.
export {
  AppLoadError,
  CONFIG_MODULE_ENV,
  configModuleUrls,
  defaultAppModulePath,
  isTypeScript,
  loadApp,
  loadConfigModule,
  nearestPackageDir,
  preloadPackageEntry,
  prepareToImport,
  resolveAppModule,
  resolveIncludes,
  tsxImportUrl,
} from './load-app.js'
export type { ConfigSettings } from './load-app.js'

// Running one task: eager here, in a pool slot in the worker.
export {
  autoretryOptions,
  encodeError,
  encodeFailure,
  executeJob,
  JobExecution,
  retriesExhausted,
  unsendableOutcome,
} from './execution/executor.js'
export type { RunningJob } from './execution/executor.js'
export { setRequestFields } from './execution/jobs.js'
export type { EncodedException, FromSlot, Job, Outcome, RequestSource, ToSlot } from './execution/jobs.js'
export { setLongTimeout } from './execution/long-timeout.js'
export type { LongTimeout } from './execution/long-timeout.js'
