// What a client does with a broker: send a task, broadcast a remote-control
// command and collect the replies, receive events, open a connection for one
// operation, read a task's call back to send it again. The app (app/) sends
// through here, and so do the CLI, beat, the dashboard and the worker's
// follow-ups. Sits on backends/, config/ and transport/.
export { DEFAULT_QUEUE, BROKER_DELAY_LEAD_S, clientOrigin, sendTask, sendTaskAs } from './send-task.js'
export type { PublishSignalPayloads, PublishSignals, SendTaskOptions } from './send-task.js'
export { broadcast, AppControl, flattenReplies, isKnownCommand } from './control.js'
export type { AppControlOptions, RemoteCallOptions } from './control.js'
export { EVENT_EXCHANGE, declareEventExchange, EventReceiver } from './event-receiver.js'
export type { EventReceiverOptions } from './event-receiver.js'
export { withTransport, withTransportPair, scrubPassword } from './connection.js'
export { ResendRefusedError, originalCall } from './resend.js'
export type { OriginalCall } from './resend.js'
export { failedStoreOf, listFailed, matchesFailedFilter, purgeFailed, replayFailed, showFailed } from './failed-tasks.js'
export type { FailedEvent, FailedFilter, FailedTask, Replayed } from './failed-tasks.js'
export { gatherEvidence, eventsFromList, readWorkerReplies, whyTask, whyVerdict, WHY_EXIT_CODES } from './why/index.js'
export type { EventsSeen, Holder, HeldState, QueueLook, WhyAnswer, WhyEvidence, WhyInput, WhyState, WhyTaskOptions } from './why/index.js'
export { queueLoads, workerViews, sampleQueueLoad, queueLoadMetrics, queueLoadJson, QUEUE_LOAD_HELP } from './queue-load.js'
export type { QueueLoad, WorkerView, SampleLoadOptions } from './queue-load.js'
