// The public API of the `tsq` package: what a task module imports.
export { App, Task, createApp, signature } from './app.js'
export type { AppOptions, ApplyOptions, ControlCommandHandler, ControlCommandKind, Signature, TaskFunction, TaskOptions } from './app.js'
export { AsyncResult, GroupResult, TaskError } from './async-result.js'
export { EagerResult } from './eager.js'
export type { EagerApplyOptions, EagerState } from './eager.js'
export { currentTask, Ignore, Reject, RetryRequest, SoftTimeLimitExceeded } from './task-context.js'
export type { RetryOptions, TaskContext } from './task-context.js'
export type { RequestInfo, SignalName, SignalPayloads, SignalReceiver } from './app-signals.js'
export { loadConfig } from './config.js'
export type { ResolvedConfig } from './config.js'
// The events bus between services (celery-amqp-events' design): src/bus.
export { createEventsApp, EventsApp } from '../bus/index.js'
export type { EventFunction, EventsAppOptions, HandlerOptions } from '../bus/index.js'
