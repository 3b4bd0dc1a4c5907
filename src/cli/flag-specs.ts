// The flags of the commands that have a fast path (inspect, control, status, migrate),
// as plain data: oclif's flags are built from these (oclif-flags.ts) and so is
// the fast path's parser (fast-path.ts), so the two can never disagree about a
// name, a short letter or a default. Plain data because the fast path must not
// load oclif at all.
export interface FlagSpec {
  kind: 'boolean' | 'string' | 'integer' | 'float'
  description: string
  char?: string
  default?: string
  options?: readonly string[]
  min?: number
  helpGroup?: string
  dependsOn?: readonly string[]
}

/**
 * Every command's flags: Celery's global options (which may also come before
 * the command name, see global-options.ts) and tsq's --json and --debug.
 */
export const GLOBAL_FLAG_SPECS = {
  app: { kind: 'string', char: 'A', description: "The task module (exports the app as `app` or default): the broker, the result backend and the settings (routes, default queue) come from it unless a flag or the environment names them.", helpGroup: 'GLOBAL' },
  broker: { kind: 'string', char: 'b', description: "Broker URL (default: $TSQ_BROKER_URL, $CELERY_BROKER_URL, the app's, else the embedded file:// broker).", helpGroup: 'GLOBAL' },
  'result-backend': { kind: 'string', description: "Result backend URL (default: $TSQ_RESULT_BACKEND, $CELERY_RESULT_BACKEND, the app's).", helpGroup: 'GLOBAL' },
  config: { kind: 'string', description: "A module of Celery settings by their Python names (broker_url, result_backend, task_routes, task_default_queue, ...), below the app's own (also $TSQ_CONFIG_MODULE).", helpGroup: 'GLOBAL' },
  workdir: { kind: 'string', description: 'Change to this directory first (-A and --config are found from there).', helpGroup: 'GLOBAL' },
  'no-color': { kind: 'boolean', char: 'C', description: 'Plain output (also NO_COLOR, or when not a terminal).', helpGroup: 'GLOBAL' },
  quiet: { kind: 'boolean', char: 'q', description: 'Print less.', helpGroup: 'GLOBAL' },
  json: { kind: 'boolean', char: 'j', description: 'Print one JSON document (for scripts).', helpGroup: 'GLOBAL' },
  debug: { kind: 'boolean', description: 'Show stack traces on errors.', helpGroup: 'GLOBAL' },
} as const satisfies Record<string, FlagSpec>

export const REMOTE_FLAG_SPECS = {
  timeout: { kind: 'string', char: 't', description: 'Seconds to wait for each next reply.', default: '1.0', helpGroup: 'REMOTE CONTROL' },
  destination: { kind: 'string', char: 'd', description: 'Comma-separated list of destination node names.', helpGroup: 'REMOTE CONTROL' },
  pattern: { kind: 'string', description: 'Only nodes whose name matches (with --matcher).', helpGroup: 'REMOTE CONTROL' },
  matcher: { kind: 'string', description: 'How --pattern matches node names.', options: ['glob', 'pcre'], helpGroup: 'REMOTE CONTROL' },
  limit: { kind: 'integer', description: 'Stop after this many replies (default: the number of destinations).', min: 1, helpGroup: 'REMOTE CONTROL' },
} as const satisfies Record<string, FlagSpec>

export const CONTROL_FLAG_SPECS = {
  ...REMOTE_FLAG_SPECS,
  terminate: { kind: 'boolean', description: 'revoke: also kill the process running the task.' },
  signal: { kind: 'string', description: 'revoke --terminate: the signal to send (e.g. SIGKILL).', dependsOn: ['terminate'] },
} as const satisfies Record<string, FlagSpec>

export const MIGRATE_FLAG_SPECS = {
  limit: { kind: 'integer', char: 'n', description: 'Number of tasks to migrate (default: all).', min: 0 },
  timeout: { kind: 'float', char: 't', description: 'Stop once no message came for this many seconds.', default: '1', min: 0 },
  'ack-messages': { kind: 'boolean', char: 'a', description: 'Ack messages on the source once the destination has them (a move).' },
  tasks: { kind: 'string', char: 'T', description: 'Comma-separated task names to migrate (the others stay).' },
  queues: { kind: 'string', char: 'Q', description: "Comma-separated queues, `from:to` to rename (default: the app's default queue)." },
  forever: { kind: 'boolean', char: 'F', description: 'Keep migrating until stopped (TERM or Ctrl-C).' },
} as const satisfies Record<string, FlagSpec>
