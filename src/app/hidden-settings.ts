// Celery's filter_hidden_settings (celery/app/utils.py), which `inspect conf`
// and `report` go through: a setting whose name says it holds a secret is
// replaced by eight asterisks, a broker or backend URL keeps everything but
// its password, and nested settings (broker_use_ssl's keyfile) are filtered
// the same way.
import { maskUrl } from '../transport/index.js'

const HIDDEN_SETTINGS = /API|TOKEN|KEY|SECRET|PASS|PROFANITIES_LIST|SIGNATURE|DATABASE/i
export const SECRET_MASK = '********'

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function censor(key: string, value: unknown): unknown {
  if (isMapping(value)) return filterHiddenSettings(value)
  if (HIDDEN_SETTINGS.test(key)) return SECRET_MASK
  if (typeof value === 'string' && (/broker_url/i.test(key) || /backend/i.test(key))) return maskUrl(value, SECRET_MASK)
  // broker_url as a failover list of URLs: each masked (Celery would print them whole).
  if (Array.isArray(value) && /broker_url/i.test(key)) return value.map((v) => (typeof v === 'string' ? maskUrl(v, SECRET_MASK) : v))
  return value
}

export function filterHiddenSettings(conf: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(conf).map(([key, value]) => [key, censor(key, value)]))
}
