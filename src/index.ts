// The public API of the `tsq` package: what a task module imports. It sits above
// app/, locks/ and bus/ (package.json's entry), so app/ need not re-export the
// layers built on it (bus/ imports app/).
export { App, Task, createApp, signature } from './app/app.js'
export type { AppOptions, ApplyOptions, ControlCommandHandler, ControlCommandKind, Signature, TaskFunction, TaskOptions } from './app/app.js'
export { AsyncResult, GroupResult, TaskError } from './app/async-result.js'
export { EagerResult } from './app/eager.js'
export { SendManyError } from './app/send-many-error.js'
export type { SendOutcome, SendStatus } from './app/send-many-error.js'
export type { EagerApplyOptions, EagerState } from './app/eager.js'
export { currentTask, Ignore, Reject, RetryRequest, SoftTimeLimitExceeded } from './app/task-context.js'
export type { RetryOptions, TaskContext } from './app/task-context.js'
export type { RequestInfo, SignalName, SignalPayloads, SignalReceiver } from './app/app-signals.js'
export { loadConfig } from './app/config.js'
export type { AppLockOptions, Lease, TaskLockOptions, TaskOnceOptions } from './app/lock-hooks.js'
// Loaded for its side effect too, whatever is exported from it: it fills the
// app's lock hooks, through which the lock and once options and app.lock() work.
import './locks/index.js'
export { AlreadyQueued, LockedError, LockLostError, LockStoreUnavailableError } from './locks/index.js'
export type { ResolvedConfig } from './app/config.js'
// The events bus between services (celery-amqp-events' design): src/bus.
export { createEventsApp, EventsApp } from './bus/index.js'
export type { EventFunction, EventsAppOptions, HandlerOptions } from './bus/index.js'
