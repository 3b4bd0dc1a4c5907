// Configuration: where an app's settings come from (flags > TSQ_* env >
// CELERY_* env > the app's conf) and what each of Celery's settings means to
// tsq. Pure readings of a conf object, plus the few that touch a broker to
// declare what a setting describes (task_queues). Sits on transport/ (for its
// settings types) and protocol/; every layer above reads settings through here.
export {
  loadConfig,
  positiveSetting,
  transportSettingsFromConf,
  backendSentinelFromConf,
  backendSslFromConf,
  beatStoreSslFromConf,
} from './config.js'
export type { ConfigInput, ResolvedConfig } from './config.js'
// Celery's settings, by name, with what tsq does with each (the table at the end of docs/configuration.md is generated from it).
export { SETTINGS, refusals, settingsRefusals } from './settings.js'
export type { Setting, SettingStatus } from './settings.js'
export { filterHiddenSettings, maskSetting, SECRET_MASK } from './hidden-settings.js'
// broker_transport_options and result_backend_transport_options, as kombu reads them.
export { readLiveness, checkTransportOptions, checkBackendTransportOptions } from './transport-options.js'
export type { CheckedTransportOptions } from './transport-options.js'
// The task_* settings that shape where and how a task is sent.
export { annotationsFor, annotationRefusals } from './annotations.js'
export { routeTask, routedSend, fnmatch } from './routes.js'
export type { Route, SendDestination } from './routes.js'
export {
  QueueSettingError,
  isQuorumQueue,
  usesQuorumQueues,
  queueSettings,
  queueDefinition,
  taskQueue,
  workerDirectQueue,
  declareDefinition,
  declareTaskQueue,
  isTaskQueueDeclared,
} from './queues.js'
export type { QueueBinding, QueueDefinition, QueueSettings } from './queues.js'
export {
  DEFAULT_PUBLISH_RETRY_POLICY,
  publishRetryPolicy,
  publishRetryPolicyRefusal,
  retryInterval,
  withPublishRetry,
  retryFailedPublish,
} from './publish-retry.js'
export type { PublishRetryPolicy } from './publish-retry.js'
// The security_* settings: keys and certificates read from files, the serializers a sender uses and a receiver accepts.
export {
  ImproperlyConfiguredError,
  SETTING_MISSING,
  SECURITY_SETTING_MISSING,
  loadSigner,
  loadCertStore,
  loadSecurity,
  checkSecurityConf,
  taskEncoder,
  taskDecoder,
  messageLimits,
  resultCodecSettings,
} from './security.js'
export type { LoadedSecurity, SecurityOptions } from './security.js'
