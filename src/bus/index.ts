// The events bus (celery-amqp-events' design): what a service's module
// imports, and what the worker and `tsq fire|bus|archive` use.
export { createEventsApp, EventsApp, busDescriptorOf, EVENTS_APP_CONF } from './events-app.js'
export type { BusDescriptor, EventFunction, EventsAppOptions, HandlerOptions } from './events-app.js'
export { resolveBusSettings, DEFAULT_MAX_RETRIES, DEFAULT_ARCHIVE_TTL_MS, DEFAULT_ARCHIVE_MAX_LENGTH } from './settings.js'
export type { BusSettings, BusSettingsInput } from './settings.js'
export { EVENTS_EXCHANGE, handlerQueueName, recoverExchangeName, retryExchangeName, archivedExchangeName } from './names.js'
export { busTopology } from './topology.js'
export type { BusTopology } from './topology.js'
export { TopologyMismatchError, ArchivedEventNotFoundError } from './errors.js'
