// The public API of the `tsq` package: what a task module imports. It sits above
// app/ and bus/ (package.json's entry), so app/ need not re-export the layer
// built on it (bus/ imports app/).
export {
  App,
  Task,
  RemoteTask,
  TaskHandle,
  createApp,
  signature,
  AsyncResult,
  GroupResult,
  TaskError,
  EagerResult,
  SendManyError,
  currentTask,
  Ignore,
  Reject,
  RetryRequest,
  SoftTimeLimitExceeded,
} from './app/index.js'
export type {
  AppOptions,
  ApplyCall,
  ApplyOptions,
  ChainResult,
  GetOptions,
  ResultOf,
  ResultsOf,
  TrailingArgs,
  ControlCommandHandler,
  ControlCommandKind,
  Signature,
  TaskFunction,
  TaskOptions,
  SendOutcome,
  SendStatus,
  EagerApplyOptions,
  EagerState,
  RetryOptions,
  TaskContext,
  RequestInfo,
  SignalName,
  SignalPayloads,
  SignalReceiver,
} from './app/index.js'
// OpenTelemetry (docs/tracing.md): on once a tracer provider is registered; this says otherwise.
export { configureTracing } from './tracing/index.js'
export type { TracingOptions } from './tracing/index.js'
export { loadConfig } from './config/index.js'
export type { ResolvedConfig } from './config/index.js'
// The options and errors of the task locks (the option `lock`, the option `once`, app.lock()).
export { AlreadyQueued, LockedError, LockLostError, LockStoreUnavailableError } from './locks/index.js'
export type { AppLockOptions, Lease, TaskConcurrencyOptions, TaskLockOptions, TaskOnceOptions } from './locks/index.js'
export type { DedupMode, DedupOptions } from './locks/index.js'
// The events bus between services (celery-amqp-events' design): src/bus.
export { createEventsApp, EventsApp } from './bus/index.js'
export type { EventFunction, EventsAppOptions, HandlerOptions } from './bus/index.js'
