// The public API of the `tsq` package: what a task module imports. It sits above
// app/, locks/ and bus/ (package.json's entry), so app/ need not re-export the
// layers built on it (bus/ imports app/).
export { App, Task, createApp, signature, AsyncResult, GroupResult, TaskError, EagerResult, SendManyError, currentTask, Ignore, Reject, RetryRequest, SoftTimeLimitExceeded } from './app/index.js'
export type { AppOptions, ApplyOptions, ControlCommandHandler, ControlCommandKind, Signature, TaskFunction, TaskOptions, SendOutcome, SendStatus, EagerApplyOptions, EagerState, RetryOptions, TaskContext, RequestInfo, SignalName, SignalPayloads, SignalReceiver, AppLockOptions, Lease, TaskLockOptions, TaskOnceOptions } from './app/index.js'
export { loadConfig } from './config/index.js'
export type { ResolvedConfig } from './config/index.js'
// Loaded for its side effect too, whatever is exported from it: it fills the
// app's lock hooks, through which the lock and once options and app.lock() work.
import './locks/index.js'
export { AlreadyQueued, LockedError, LockLostError, LockStoreUnavailableError } from './locks/index.js'
// The events bus between services (celery-amqp-events' design): src/bus.
export { createEventsApp, EventsApp } from './bus/index.js'
export type { EventFunction, EventsAppOptions, HandlerOptions } from './bus/index.js'
