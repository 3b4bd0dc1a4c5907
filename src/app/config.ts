// Configuration precedence lives here and only here: flags > TSQ_* env >
// CELERY_* env > defaults. Flags never read the environment themselves.
import { defaultFileBrokerUrl } from '../transport/index.js'

export interface ConfigInput {
  broker?: string
  resultBackend?: string
  /** What the app module itself says (createApp options): below env, above defaults. */
  appBroker?: string
  appResultBackend?: string
  /** The zone crontab entries are read in (IANA name). */
  timezone?: string
}

export interface ResolvedConfig {
  brokerUrl: string
  /** Where the broker came from, for banners and error messages. */
  brokerSource: 'flag' | 'TSQ_BROKER_URL' | 'CELERY_BROKER_URL' | 'app' | 'default'
  resultBackend: string | undefined
  /** flag > TSQ_TIMEZONE > UTC. */
  timezone: string
}

function firstSet(...values: Array<string | undefined>): string | undefined {
  return values.find((v) => v !== undefined && v !== '')
}

export function loadConfig(input: ConfigInput, env: NodeJS.ProcessEnv = process.env): ResolvedConfig {
  let brokerUrl: string
  let brokerSource: ResolvedConfig['brokerSource']
  if (input.broker) {
    brokerUrl = input.broker
    brokerSource = 'flag'
  } else if (env.TSQ_BROKER_URL) {
    brokerUrl = env.TSQ_BROKER_URL
    brokerSource = 'TSQ_BROKER_URL'
  } else if (env.CELERY_BROKER_URL) {
    brokerUrl = env.CELERY_BROKER_URL
    brokerSource = 'CELERY_BROKER_URL'
  } else if (input.appBroker) {
    brokerUrl = input.appBroker
    brokerSource = 'app'
  } else {
    brokerUrl = defaultFileBrokerUrl(env)
    brokerSource = 'default'
  }
  let resultBackend = firstSet(input.resultBackend, env.TSQ_RESULT_BACKEND, env.CELERY_RESULT_BACKEND, input.appResultBackend)
  // On the embedded broker the embedded result store is the natural default,
  // so `tsq call` then `tsq result` work on a fresh machine with no flags.
  if (resultBackend === undefined && brokerUrl.startsWith('file://')) resultBackend = brokerUrl
  const timezone = firstSet(input.timezone, env.TSQ_TIMEZONE) ?? 'UTC'
  return { brokerUrl, brokerSource, resultBackend, timezone }
}

/** A Celery setting from the app's conf that must be a positive number (seconds): the number, or null when it is not one. */
export function positiveSetting(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : null
}
