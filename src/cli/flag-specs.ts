// The flags of the commands that have a fast path (inspect, control, status),
// as plain data: oclif's flags are built from these (oclif-flags.ts) and so is
// the fast path's parser (fast-path.ts), so the two can never disagree about a
// name, a short letter or a default. Plain data because the fast path must not
// load oclif at all.
export interface FlagSpec {
  kind: 'boolean' | 'string' | 'integer'
  description: string
  char?: string
  default?: string
  options?: readonly string[]
  min?: number
  helpGroup?: string
  dependsOn?: readonly string[]
}

export const GLOBAL_FLAG_SPECS = {
  json: { kind: 'boolean', char: 'j', description: 'Print one JSON document (for scripts).', helpGroup: 'GLOBAL' },
  broker: { kind: 'string', char: 'b', description: 'Broker URL (default: $TSQ_BROKER_URL, $CELERY_BROKER_URL, else the embedded file:// broker).', helpGroup: 'GLOBAL' },
  'result-backend': { kind: 'string', description: 'Result backend URL (default: $TSQ_RESULT_BACKEND, $CELERY_RESULT_BACKEND).', helpGroup: 'GLOBAL' },
  'no-color': { kind: 'boolean', description: 'Plain output (also NO_COLOR, or when not a terminal).', helpGroup: 'GLOBAL' },
  quiet: { kind: 'boolean', char: 'q', description: 'Print less.', helpGroup: 'GLOBAL' },
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
