// Every setting of Celery 5.2.6 (celery/app/defaults.py), by its name, with
// what tsq does with it. The one place that lists what tsq reads: the docs
// table (at the end of docs/configuration.md) is generated from it, and a test compares it with
// the installed Celery's list so that it cannot fall behind.
//
// honoured:        read from an app's conf (and the env Celery reads), as Celery does.
// refused:         a value tsq cannot honour stops the worker or beat at start-up
//                  with one line naming the setting and why. Celery's default
//                  value is always accepted, so a config that only restates
//                  defaults starts.
// not-applicable:  Python-only (a class path, a logging hook, billiard's
//                  internals); nothing on the wire or in behaviour depends on it.

import { annotationRefusals } from './annotations.js'
import { shownSetting } from '../protocol/index.js'
import { checkBackendTransportOptions, checkTransportOptions } from './transport-options.js'
import { publishRetryPolicyRefusal } from './publish-retry.js'
import { queueSettings } from './queues.js'

export type SettingStatus = 'honoured' | 'refused' | 'not-applicable'

export interface Setting {
  status: SettingStatus
  /** Celery 5.2.6's default, as JSON (a timedelta in seconds). */
  default: unknown
  /** honoured: where and how far; refused / not-applicable: why. */
  note: string
  /** The environment variable Celery itself reads for it (above conf, below the flag). */
  env?: string
  /** The command-line flag that sets it (above env). */
  flag?: string
  /** For an honoured setting some values of which tsq cannot take: why this value is refused, or null. */
  refuse?: (value: unknown) => string | null
  /** As refuse, for a setting made of parts: whole lines, each naming its part. */
  check?: (value: unknown) => string[]
}

const honoured = (dflt: unknown, note: string, extra: Partial<Setting> = {}): Setting => ({
  status: 'honoured',
  default: dflt,
  note,
  ...extra,
})
const refused = (dflt: unknown, note: string): Setting => ({ status: 'refused', default: dflt, note })
const na = (dflt: unknown, note: string): Setting => ({ status: 'not-applicable', default: dflt, note })

// What the serializer registry (protocol/serializers.ts) takes, by kombu's names and content types.
const TASK_SERIALIZERS = ['json', 'msgpack', 'yaml', 'auth']
const RESULT_SERIALIZERS = ['json', 'msgpack', 'yaml']
const CONTENT_TYPES: Record<string, string> = {
  'application/json': 'json',
  'application/x-msgpack': 'msgpack',
  'application/x-yaml': 'yaml',
  'application/data': 'auth',
}
const contentList =
  (names: readonly string[]) =>
  (value: unknown): string | null => {
    const list = typeof value === 'string' ? [value] : Array.isArray(value) ? value : null
    if (value === null || value === undefined) return null
    if (!list) return 'expected a list of content types'
    const other = list.filter((c) => !names.includes(CONTENT_TYPES[String(c)] ?? String(c)))
    if (other.some((c) => /pickle/.test(String(c)))) return 'pickle is never decoded by tsq (it would run code from the message)'
    return other.length ? `tsq takes ${names.join(', ')} (not ${other.join(', ')})` : null
  }
const serializer =
  (names: readonly string[]) =>
  (value: unknown): string | null =>
    value === undefined || names.includes(String(value))
      ? null
      : value === 'pickle'
        ? 'pickle is never decoded by tsq (it would run code from the message)'
        : `tsq encodes ${names.join(', ')} (not ${String(value)})`
const noBackend = (kind: string) =>
  `tsq has no ${kind} result backend (it has redis://, sentinel://, rpc://, file://, db+ SQL and django-db)`
/** Seconds, or None: the Redis socket settings. */
const seconds =
  (range: '> 0' | '>= 0') =>
  (v: unknown): string | null =>
    v === null || (typeof v === 'number' && Number.isFinite(v) && (range === '>= 0' ? v >= 0 : v > 0) && v <= 86_400)
      ? null
      : `expected seconds ${range}, or None`
const POSITIVE_INT = (value: unknown): string | null =>
  value === null || (typeof value === 'number' && Number.isInteger(value) && value >= 0) ? null : 'expected a whole number >= 0'

// Marked pure so that a bundle importing config/ without reading the table (the CLI's fast path) leaves it out.
export const SETTINGS: Readonly<Record<string, Setting>> = /* @__PURE__ */ (() => ({
  accept_content: honoured(['json'], 'what the worker decodes: json, msgpack, yaml and auth (signed); pickle is refused', {
    refuse: contentList(TASK_SERIALIZERS),
  }),
  result_accept_content: honoured(null, 'what result readers decode: json, msgpack, yaml', { refuse: contentList(RESULT_SERIALIZERS) }),
  enable_utc: refused(true, 'tsq keeps every timestamp (ETA, expires, events) in UTC, as Celery does with enable_utc on'),
  imports: na([], "Python module names; tsq loads the modules given by -A and -I (and an events app's imports)"),
  include: na([], 'Python module names; tsq loads the modules given by -A and -I'),
  timezone: honoured(null, 'the zone crontab entries are read in (config/config.ts), under --timezone and TSQ_TIMEZONE'),
  beat_max_loop_interval: honoured(0, "beat's longest sleep (beat/run-beat.ts) under --max-interval; 0 keeps tsq's default"),
  beat_schedule: honoured({}, "the app's periodic tasks (app/load-app.ts, beat)"),
  beat_scheduler: refused('celery.beat:PersistentScheduler', "a Python class path; tsq's stores are chosen by --scheduler file|redis"),
  beat_schedule_filename: refused('celerybeat-schedule', "Celery's shelve file; tsq's file store is JSON, given by -s/--schedule"),
  beat_sync_every: na(0, "tsq's stores write each entry's run when it happens, so there is nothing to batch"),
  broker_url: honoured(
    null,
    'the broker (config/config.ts): -b > TSQ_BROKER_URL > CELERY_BROKER_URL > conf; on RabbitMQ a failover list, `url1;url2` or a list of URLs',
    { env: 'CELERY_BROKER_URL', flag: '-b/--broker' },
  ),
  broker_read_url: honoured(
    null,
    'what a worker consumes from (its task queues, the mailbox): CELERY_BROKER_READ_URL > conf > broker_url, as in Celery (config/config.ts)',
    { env: 'CELERY_BROKER_READ_URL' },
  ),
  broker_write_url: honoured(
    null,
    "what every send publishes to (clients, beat, a worker's events and follow-up tasks): CELERY_BROKER_WRITE_URL > conf > broker_url, as in Celery (config/config.ts)",
    { env: 'CELERY_BROKER_WRITE_URL' },
  ),
  broker_transport: refused(null, 'the transport is the scheme of broker_url (amqp, redis, file)'),
  broker_transport_options: honoured(
    {},
    "Redis, as kombu 5.2.4 reads them (config/transport-options.ts, transport/redis/keys.ts): visibility_timeout; for sentinel://, master_name (required) and sentinel_kwargs (password, username) as kombu's SentinelChannel reads them (transport/redis/sentinel.ts); global_keyprefix (every key, bindings, unacked, unacked_index, unacked_mutex, and the fanout channels, as kombu prefixes them); sep; priority_steps; queue_order_strategy (round_robin, priority, sorted); fanout_prefix; fanout_patterns; unacked_key, unacked_index_key, unacked_mutex_key. socket_timeout, socket_connect_timeout, socket_keepalive and health_check_interval (default 25 s) for the broker's and beat's Redis connections (transport/redis/liveness.ts); ack_emulation and body_encoding only at kombu's default; the Python client's other socket and pool options are not applicable; confirm_publish is what tsq always does on RabbitMQ",
    { check: (v) => checkTransportOptions(v).refusals },
  ),
  broker_connection_timeout: refused(4, "tsq's connect timeout is fixed (5 s on Redis, the socket's on RabbitMQ)"),
  broker_connection_retry: refused(true, 'tsq always reconnects with backoff after a lost connection'),
  broker_connection_max_retries: refused(100, 'tsq retries a lost connection without a limit'),
  broker_failover_strategy: honoured(
    null,
    'how a failover list in broker_url (`url1;url2` or a list) is walked on a lost connection: round-robin (the default) or shuffle (transport/url.ts; RabbitMQ)',
    {
      refuse: (v) => (v === null || v === undefined || v === 'round-robin' || v === 'shuffle' ? null : 'expected round-robin or shuffle'),
    },
  ),
  broker_heartbeat: honoured(
    120,
    "the AMQP heartbeat a worker, beat and clients ask RabbitMQ for, seconds (the lower of it and the server's is used); 0 or None turns heartbeats off; an amqp:// URL's ?heartbeat= wins (transport/amqp/connection/heartbeat.ts)",
    {
      refuse: (v) =>
        v === null || (typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 65_535)
          ? null
          : 'expected seconds >= 0 (0 or None: off)',
    },
  ),
  broker_heartbeat_checkrate: honoured(
    3.0,
    'the heartbeat is checked every heartbeat / rate seconds, as py-amqp\'s heartbeat_tick; no byte from the broker for two heartbeats ends the connection ("Too many heartbeats missed")',
    {
      refuse: (v) => (typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= 1000 ? null : 'expected a number > 0'),
    },
  ),
  broker_login_method: honoured(
    null,
    'PLAIN by default; EXTERNAL logs in with the TLS client certificate (also login_method= in an amqps:// URL)',
    {
      refuse: (v) =>
        v === null || v === undefined || v === 'PLAIN' || v === 'AMQPLAIN' || v === 'EXTERNAL'
          ? null
          : 'tsq logs in with PLAIN or EXTERNAL',
    },
  ),
  broker_pool_limit: na(10, "kombu's producer pool; a tsq process publishes through one connection"),
  broker_use_ssl: honoured(
    false,
    "ca_certs, certfile, keyfile, cert_reqs for the broker (and beat's Redis store); an amqps:// or rediss:// URL's ssl_* parameters win (src/transport/tls.ts)",
  ),
  broker_host: refused(null, 'give the broker as broker_url'),
  broker_port: refused(null, 'give the broker as broker_url'),
  broker_user: refused(null, 'give the broker as broker_url'),
  broker_password: refused(null, 'give the broker as broker_url'),
  broker_vhost: refused(null, 'give the broker as broker_url'),
  cache_backend: refused(null, noBackend('cache')),
  cache_backend_options: refused({}, noBackend('cache')),
  cassandra_entry_ttl: refused(null, noBackend('Cassandra')),
  cassandra_keyspace: refused(null, noBackend('Cassandra')),
  cassandra_port: refused(null, noBackend('Cassandra')),
  cassandra_read_consistency: refused(null, noBackend('Cassandra')),
  cassandra_servers: refused(null, noBackend('Cassandra')),
  cassandra_table: refused(null, noBackend('Cassandra')),
  cassandra_write_consistency: refused(null, noBackend('Cassandra')),
  cassandra_auth_provider: refused(null, noBackend('Cassandra')),
  cassandra_auth_kwargs: refused(null, noBackend('Cassandra')),
  cassandra_options: refused({}, noBackend('Cassandra')),
  s3_access_key_id: refused(null, noBackend('S3')),
  s3_secret_access_key: refused(null, noBackend('S3')),
  s3_bucket: refused(null, noBackend('S3')),
  s3_base_path: refused(null, noBackend('S3')),
  s3_endpoint_url: refused(null, noBackend('S3')),
  s3_region: refused(null, noBackend('S3')),
  azureblockblob_container_name: refused('celery', noBackend('Azure Block Blob')),
  azureblockblob_retry_initial_backoff_sec: refused(2, noBackend('Azure Block Blob')),
  azureblockblob_retry_increment_base: refused(2, noBackend('Azure Block Blob')),
  azureblockblob_retry_max_attempts: refused(3, noBackend('Azure Block Blob')),
  azureblockblob_base_path: refused('', noBackend('Azure Block Blob')),
  azureblockblob_connection_timeout: refused(20, noBackend('Azure Block Blob')),
  azureblockblob_read_timeout: refused(120, noBackend('Azure Block Blob')),
  control_queue_ttl: refused(300, "tsq's pidbox queues use Celery's default message TTL (300 s)"),
  control_queue_expires: refused(10, "tsq's pidbox queues use Celery's default expiry (10 s)"),
  control_exchange: refused('celery', "tsq's mailbox is celery.pidbox, the default control_exchange"),
  couchbase_backend_settings: refused(null, noBackend('Couchbase')),
  arangodb_backend_settings: refused(null, noBackend('ArangoDB')),
  mongodb_backend_settings: refused(null, noBackend('MongoDB')),
  cosmosdbsql_database_name: refused('celerydb', noBackend('Cosmos DB')),
  cosmosdbsql_collection_name: refused('celerycol', noBackend('Cosmos DB')),
  cosmosdbsql_consistency_level: refused('Session', noBackend('Cosmos DB')),
  cosmosdbsql_max_retry_attempts: refused(9, noBackend('Cosmos DB')),
  cosmosdbsql_max_retry_wait_time: refused(30, noBackend('Cosmos DB')),
  event_queue_expires: refused(60, "tsq's event receivers use Celery's default expiry (60 s)"),
  event_queue_ttl: refused(5, "tsq's event receivers use Celery's default message TTL (5 s)"),
  event_queue_prefix: refused('celeryev', "tsq's event receiver queues are named celeryev.<uuid>"),
  event_serializer: refused('json', 'tsq sends and reads events as json'),
  event_exchange: refused('celeryev', 'tsq sends events to celeryev, the default event_exchange'),
  redis_backend_use_ssl: honoured(
    null,
    "ca_certs, certfile, keyfile, cert_reqs for a redis:// or rediss:// result backend; the URL's ssl_* parameters win",
  ),
  redis_db: refused(null, 'give the result backend as a redis:// URL'),
  redis_host: refused(null, 'give the result backend as a redis:// URL'),
  redis_max_connections: refused(null, "tsq's Redis backend holds one connection per process"),
  redis_username: refused(null, 'give the result backend as a redis:// URL'),
  redis_password: refused(null, 'give the result backend as a redis:// URL'),
  redis_port: refused(null, 'give the result backend as a redis:// URL'),
  redis_retry_on_timeout: refused(false, "tsq's Redis backend does not retry a command that timed out"),
  redis_socket_connect_timeout: honoured(null, "the Redis result backend's connect and handshake timeout, seconds (None: 5 s)", {
    refuse: seconds('> 0'),
  }),
  redis_socket_timeout: honoured(
    120,
    'a command of the Redis result backend with no reply for this long ends its connection, which is then reconnected (transport/redis/liveness.ts)',
    { refuse: seconds('> 0') },
  ),
  redis_socket_keepalive: honoured(
    false,
    "TCP keep-alive on the Redis result backend's connection; tsq keeps it on unless this is set to False explicitly",
    { refuse: (v) => (v === null || typeof v === 'boolean' ? null : 'expected True, False or None') },
  ),
  result_backend: honoured(
    null,
    'the result store (config/config.ts): --result-backend > TSQ_RESULT_BACKEND > CELERY_RESULT_BACKEND > conf',
    { env: 'CELERY_RESULT_BACKEND', flag: '--result-backend' },
  ),
  result_backend_always_retry: refused(
    false,
    "not configurable: the file:// store tries a failed write 5 more times over about 8 s, Redis retries through Sentinel as Celery's retry_policy, the others do not retry",
  ),
  result_backend_max_retries: refused(
    Infinity,
    "not configurable: the file:// store tries a failed write 5 more times over about 8 s, Redis retries through Sentinel as Celery's retry_policy, the others do not retry",
  ),
  result_backend_base_sleep_between_retries_ms: refused(10, "tsq's backends do not retry failed writes"),
  result_backend_max_sleep_between_retries_ms: refused(10000, "tsq's backends do not retry failed writes"),
  result_backend_transport_options: honoured(
    {},
    "for a sentinel:// result backend: master_name (required) and sentinel_kwargs (password, username), as Celery's SentinelBackend reads them; other options are refused (config/transport-options.ts)",
    { check: (v) => checkBackendTransportOptions(v) },
  ),
  result_cache_max: na(-1, "the Python client's cache of fetched results; tsq's AsyncResult keeps none"),
  result_compression: refused(null, 'tsq stores results uncompressed'),
  result_exchange: na('celeryresults', "used by Celery's old amqp result backend; rpc:// replies go through the default exchange"),
  result_exchange_type: na('direct', "used by Celery's old amqp result backend; rpc:// replies go through the default exchange"),
  result_expires: refused(86400, "tsq keeps results for Celery's default of one day"),
  result_persistent: refused(null, "tsq's rpc:// replies are sent transient, as with Celery's default"),
  result_extended: honoured(
    false,
    'the worker stores name, args, kwargs, worker, retries and queue with each result (worker/task-path/result-store.ts)',
  ),
  result_serializer: honoured('json', 'results stored as json, msgpack or yaml', { refuse: serializer(RESULT_SERIALIZERS) }),
  result_chord_join_timeout: refused(3, "tsq's chord counter does not join with a timeout"),
  result_chord_retry_interval: refused(1, "tsq's chord counter does not poll"),
  database_engine_options: refused(
    null,
    'SQLAlchemy engine options are Python-only; tsq pools with pg, mysql2 and better-sqlite3 and takes none of them',
  ),
  database_short_lived_sessions: honoured(
    false,
    'db+ result backend (backends/database-backend.ts): a connection per operation instead of a pool of four',
  ),
  database_table_schemas: honoured(
    null,
    'db+ result backend: {task, group} schemas of celery_taskmeta and celery_tasksetmeta (and their id sequences on PostgreSQL)',
  ),
  database_table_names: honoured(null, 'db+ result backend: {task, group} names in place of celery_taskmeta and celery_tasksetmeta'),
  database_url: honoured(
    null,
    'the Django database of the django-db result backend, as a URL (postgresql://, mysql://, sqlite:///; else DATABASE_URL); a db+ backend names its database in its own URL',
  ),
  elasticsearch_retry_on_timeout: refused(null, noBackend('Elasticsearch')),
  elasticsearch_max_retries: refused(null, noBackend('Elasticsearch')),
  elasticsearch_timeout: refused(null, noBackend('Elasticsearch')),
  elasticsearch_save_meta_as_text: refused(true, noBackend('Elasticsearch')),
  security_certificate: honoured(null, "the signer's certificate (PEM) for the auth serializer (src/config/security.ts)"),
  security_cert_store: honoured(null, 'a glob of PEM certificates whose signatures the worker accepts'),
  security_key: honoured(null, "the signer's private key (PEM); its contents are never printed"),
  security_digest: honoured('sha256', "the digest of the RSA-PSS signature, as Celery's"),
  task_acks_late: honoured(
    false,
    "ack after the task (worker/run-worker.ts); tsq's worker acks late unless --early-ack or task_acks_late = False",
  ),
  task_acks_on_failure_or_timeout: honoured(true, 'per task default (app/task.ts)'),
  task_always_eager: honoured(false, 'sends run in-process (app/eager.ts)'),
  task_annotations: honoured(
    null,
    'a map or list of maps of task name (or *) to task options, applied when a task is registered and again when the worker starts (config/annotations.ts): rate_limit, time_limit, soft_time_limit, acks_late, ignore_result, track_started, max_retries, default_retry_delay, reject_on_worker_lost, acks_on_failure_or_timeout',
    { check: annotationRefusals },
  ),
  task_compression: refused(null, 'tsq sends task bodies uncompressed (its worker does read gzip and zlib bodies)'),
  task_create_missing_queues: honoured(true, 'False: a send or -Q to a queue task_queues does not define is refused (config/queues.ts)'),
  task_inherit_parent_priority: honoured(
    false,
    "app.sendTask inside a running task, and the worker's callbacks, chain steps and chord bodies, take the parent's delivery priority (app/app.ts, worker/task-path/canvas-apply.ts); as in Celery 5.2.6, Task.applyAsync does not",
  ),
  task_default_delivery_mode: honoured(2, 'persistent (2) or transient (1, "transient") task messages (config/queues.ts)'),
  task_default_queue: honoured('celery', "the queue of a send that names none, and a worker's without -Q (app/app.ts)"),
  task_default_exchange: honoured(
    null,
    "the exchange of the default queue and of queues created on demand (config/queues.ts); default: the queue's name",
  ),
  task_default_exchange_type: honoured('direct', 'the type of that exchange (config/queues.ts)'),
  task_default_routing_key: honoured(null, "the routing key of the default queue (config/queues.ts); default: the queue's name"),
  task_default_rate_limit: honoured(null, 'per task default (app/task.ts)'),
  task_default_priority: honoured(null, 'the priority of a send that gives none (client/send-task.ts)'),
  task_eager_propagates: honoured(false, 'eager failures throw (app/eager.ts)'),
  task_ignore_result: honoured(false, 'per task default (app/task.ts)'),
  task_store_eager_result: refused(false, 'eager runs in tsq do not write to the result backend'),
  task_protocol: honoured(2, 'tsq sends protocol 2', { refuse: (v) => (v === 2 ? null : 'tsq sends task protocol 2 only') }),
  task_publish_retry: honoured(
    true,
    'a task publish cut by a lost broker connection is tried again (config/publish-retry.ts); False: it fails at once',
  ),
  task_publish_retry_policy: honoured(
    { max_retries: 3, interval_start: 0, interval_max: 1, interval_step: 0.2 },
    "max_retries (None: no limit), interval_start, interval_step, interval_max, as kombu's ensure() reads them (config/publish-retry.ts)",
    { refuse: publishRetryPolicyRefusal },
  ),
  task_queues: honoured(
    null,
    'queues as kombu declares them: exchange and type, routing key, bindings, queue_arguments (x-max-priority...), consumer_arguments, durable, auto_delete, exclusive, no_declare; used by sends, -Q and add_consumer (config/queues.ts)',
  ),
  task_queue_max_priority: honoured(null, 'x-max-priority of every queue task_queues declares without one (config/queues.ts)'),
  task_reject_on_worker_lost: honoured(null, 'per task default (app/task.ts)'),
  task_remote_tracebacks: na(false, "tblib's rendering of Python tracebacks in the client"),
  task_routes: honoured(null, 'maps of task name or glob to queue (config/routes.ts)'),
  task_send_sent_event: honoured(false, "a task-sent event after each send, with Celery's fields (client/send-task.ts)"),
  task_serializer: honoured('json', "task bodies sent as json, msgpack, yaml or auth (Celery's signed messages)", {
    refuse: serializer(TASK_SERIALIZERS),
  }),
  task_soft_time_limit: honoured(null, 'under --soft-time-limit (worker/run-worker.ts)'),
  task_time_limit: honoured(null, 'under --time-limit (worker/run-worker.ts)'),
  task_store_errors_even_if_ignored: honoured(
    false,
    'True: a task whose result is ignored still stores its FAILURE and RETRY states (worker/task-path/outcomes.ts)',
  ),
  task_track_started: honoured(false, 'per task default (app/task.ts)'),
  worker_agent: na(null, 'cell actors (Python)'),
  worker_autoscaler: refused('celery.worker.autoscale:Autoscaler', "a Python class path; tsq's autoscaler is built in (--autoscale)"),
  worker_cancel_long_running_tasks_on_connection_loss: honoured(
    false,
    'cancel running late-ack tasks when the broker connection is lost (worker/run-worker.ts), or --cancel-long-running-tasks-on-connection-loss',
    { flag: '--cancel-long-running-tasks-on-connection-loss' },
  ),
  worker_concurrency: honoured(null, 'pool size (worker/worker-settings.ts): -c > CELERY_WORKER_CONCURRENCY > conf > CPU count', {
    env: 'CELERY_WORKER_CONCURRENCY',
    flag: '-c/--concurrency',
    refuse: POSITIVE_INT,
  }),
  worker_consumer: refused('celery.worker.consumer:Consumer', "a Python class path; tsq's consumer is built in"),
  worker_direct: honoured(false, 'also consume <node>.dq2 (worker/run-worker.ts)'),
  worker_disable_rate_limits: honoured(false, 'True: no task rate limit applies in the worker (worker/run-worker.ts)'),
  worker_deduplicate_successful_tasks: refused(false, 'tsq does not keep a list of succeeded ids to skip redelivered copies by'),
  worker_enable_remote_control: honoured(
    true,
    'False: the worker opens no mailbox, so inspect and control get no answer from it (worker/worker.ts)',
  ),
  worker_hijack_root_logger: na(true, "Python's root logger"),
  worker_log_color: na(null, "colour of Python's log handler; tsq's worker log is plain, as Celery's is off a terminal"),
  worker_log_format: refused('[%(asctime)s: %(levelname)s/%(processName)s] %(message)s', "tsq writes Celery's default log line"),
  worker_lost_wait: na(10, "billiard's wait for a lost child's result"),
  worker_max_memory_per_child: honoured(null, 'KiB (worker/worker-settings.ts): --max-memory-per-child > env > conf', {
    env: 'CELERY_WORKER_MAX_MEMORY_PER_CHILD',
    flag: '--max-memory-per-child',
    refuse: POSITIVE_INT,
  }),
  worker_max_tasks_per_child: honoured(null, 'worker/worker-settings.ts: --max-tasks-per-child > env > conf', {
    env: 'CELERY_WORKER_MAX_TASKS_PER_CHILD',
    flag: '--max-tasks-per-child',
    refuse: POSITIVE_INT,
  }),
  worker_pool: honoured('prefork', 'prefork, processes, threads or solo (worker/worker-settings.ts): -P > CELERY_WORKER_POOL > conf', {
    env: 'CELERY_WORKER_POOL',
    flag: '-P/--pool',
    refuse: (v) =>
      typeof v === 'string' && ['prefork', 'processes', 'threads', 'solo'].includes(v)
        ? null
        : `tsq's pools are prefork, threads and solo (not ${String(v)})`,
  }),
  worker_pool_putlocks: na(true, "billiard's pool locks"),
  worker_pool_restarts: refused(false, "tsq's pool does not reload modules (pool_restart)"),
  worker_proc_alive_timeout: honoured(4, 'how long worker_process_init receivers may take (app/app-signals.ts)'),
  worker_prefetch_multiplier: honoured(4, 'worker/worker-settings.ts: --prefetch-multiplier > env > conf', {
    env: 'CELERY_WORKER_PREFETCH_MULTIPLIER',
    flag: '--prefetch-multiplier',
    refuse: POSITIVE_INT,
  }),
  worker_redirect_stdouts: honoured(true, 'prints in tasks go to the log (worker/redirect-stdouts.ts)'),
  worker_redirect_stdouts_level: honoured('WARNING', 'their level (worker/redirect-stdouts.ts)'),
  worker_send_task_events: honoured(false, 'task events (worker/worker-settings.ts): -E > CELERY_WORKER_TASK_EVENTS > conf', {
    env: 'CELERY_WORKER_TASK_EVENTS',
    flag: '-E/--task-events',
  }),
  worker_state_db: honoured(null, 'revoked ids and clock across restarts (worker/worker-settings.ts): -S > env > conf', {
    env: 'CELERY_WORKER_STATEDB',
    flag: '-S/--statedb',
  }),
  worker_task_log_format: refused(
    '[%(asctime)s: %(levelname)s/%(processName)s] %(task_name)s[%(task_id)s]: %(message)s',
    "tsq writes Celery's default task log line",
  ),
  worker_timer: refused(null, "a Python class path; tsq's timer is the event loop's"),
  worker_timer_precision: na(1, "Python's timer thread's precision; tsq's timers are the event loop's"),
}))()

/** Python's equality for JSON-like values, enough to tell a restated default. */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const ka = Object.keys(a as object)
  const kb = Object.keys(b as object)
  return ka.length === kb.length && ka.every((k) => sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
}

/**
 * The lines that stop a start-up: one per setting of `conf` tsq cannot honour,
 * `<name> = <value>: <why>`. Unknown names are left alone (an app may keep its
 * own keys in conf, as Celery allows).
 */
export function refusals(conf: Record<string, unknown>): string[] {
  const lines: string[] = []
  for (const [name, value] of Object.entries(conf)) {
    const setting = SETTINGS[name]
    if (!setting || value === undefined) continue
    if (sameValue(value, setting.default)) continue
    let why: string | null = null
    if (setting.status === 'refused') why = setting.note
    else if (setting.refuse) why = setting.refuse(value)
    if (why) lines.push(`${shownSetting(name, value)}: ${why}`)
    if (setting.check) lines.push(...setting.check(value))
  }
  return lines
}

/** Every refusal a start-up makes: the settings' own, then what task_queues and its siblings cannot be read as. */
export function settingsRefusals(conf: Record<string, unknown>, defaultQueue: string): string[] {
  const lines = refusals(conf)
  // Read by Celery's Redis backend from conf, though not one of its declared settings (so not in the table).
  const hc = conf.redis_backend_health_check_interval
  const hcWhy = hc === undefined ? null : seconds('>= 0')(hc)
  if (hcWhy) lines.push(`redis_backend_health_check_interval = ${JSON.stringify(hc)}: ${hcWhy}`)
  try {
    queueSettings(conf, defaultQueue)
  } catch (error) {
    lines.push((error as Error).message)
  }
  return lines
}
