export type {
  CloseOptions,
  ConsumeOptions,
  Consumer,
  Delivery,
  DeliveryHandler,
  BrokerNode,
  ExchangeSpec,
  ExchangeType,
  HeaderValue,
  Headers,
  MessageProperties,
  OutgoingMessage,
  ParkedMessage,
  Parking,
  ParkOptions,
  PublishOptions,
  QueueStatus,
  LocateResult,
  MessageLocation,
  QueueArguments,
  QueueSpec,
  TopologySpec,
  Transport,
  TransportCapabilities,
  TransportEvents,
  ConnectionRetry,
  DeliveriesLost,
} from './transport.js'
export {
  BadBrokerUrlError,
  BrokerConnectionError,
  BrokerRequestError,
  PublishTimeoutError,
  TransportClosedError,
  TsqTransportError,
} from './errors.js'
export { createBrokerAdmin, listVirtualBindings } from './admin.js'
export type { BindingRow, BrokerAdmin, GotMessage } from './admin.js'
export { createTransport, defaultFileBrokerDir, defaultFileBrokerUrl } from './registry.js'
export type { TransportSettings } from './registry.js'
export { DELAYED_DELIVERY_LEVELS, levelName as delayedLevelName } from './amqp/delayed-levels.js'
export {
  FAILOVER_STRATEGIES,
  FailoverCycle,
  maskUrl,
  parseBrokerUrl,
  parseFailoverStrategy,
  splitUrlList,
  URL_LIST_SEPARATOR,
  urlListSetting,
} from './url.js'
export type { FailoverStrategy, ParsedBrokerUrl } from './url.js'
export { LamportClock, MailboxClient, MailboxServer, NoReply, pidboxExchange, replyExchange } from './mailbox.js'
export type { BroadcastOptions, ControlHandler, NodeReply } from './mailbox.js'
export { describeTlsFailure, describeTlsPlan, parseCertReqs, tlsConnectOptions, tlsPlan } from './tls.js'
export type { CertReqs, SslSettings, TlsPlan } from './tls.js'
export { explainRedisConnectFailure, redisUrlClientOptions } from './redis/options.js'
export type { RedisClientOptions, RedisLayoutOptions, QueueOrderStrategy } from './redis/options.js'
export type { RedisLiveness } from './redis/liveness.js'
export { DEFAULT_HEALTH_CHECK_INTERVAL_S, livenessClientOptions, watchLiveness } from './redis/liveness.js'
export { isSentinelUrl, sentinelSettingsFrom } from './redis/sentinel.js'
export { isConnectionError as isRedisConnectionError, sayOutOfMemory as sayRedisOutOfMemory } from './redis/classify-error.js'
export type { SentinelSettings } from './redis/sentinel.js'
export {
  ensurePrivateDir,
  ensurePrivateFileSync,
  writeNewFile,
  replaceFile,
  replaceFileSync,
  UnsafeStoreError,
  PRIVATE_DIR_MODE,
  PRIVATE_FILE_MODE,
} from './private-files.js'
// kombu's envelope as a message is stored (a parked message: concurrency per key keeps its backlog so).
export { decodeEnvelope, encodeEnvelope } from './kombu-envelope.js'
