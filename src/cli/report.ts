// `tsq report`: what to paste in a bug report, as `celery report` prints it:
// versions, the app's module, the broker and backend with passwords masked,
// and the app's settings, masked as Celery's filter_hidden_settings masks them.
import { arch, release, type as osType } from 'node:os'
import { maskSetting } from '../protocol/index.js'
import type { App } from '../app/index.js'

export interface Report {
  software: { tsq: string; node: string }
  platform: { system: string; arch: string; kernel: string }
  app: { module: string | null; name: string | null }
  broker: string
  resultBackend: string | null
  /** The app's settings that differ from the defaults, masked. */
  settings: Record<string, unknown>
}

/** A value as Celery hides it (hidden names wholesale, URLs with their password masked, nested values likewise): protocol/secrets.ts. */
export { maskSetting }

export function buildReport(o: {
  version: string
  app: App | null
  modulePath: string | null
  broker: string
  resultBackend: string | null
}): Report {
  const settings: Record<string, unknown> = {}
  if (o.app) {
    const options = o.app.options
    if (options.defaultQueue) settings.task_default_queue = options.defaultQueue
    if (options.beatSchedule) settings.beat_schedule = options.beatSchedule
    Object.assign(settings, options.conf ?? {})
  }
  const masked = Object.fromEntries(Object.entries(settings).map(([k, v]) => [k, maskSetting(k, v)]))
  const url = (u: string) => maskSetting('', u) as string
  return {
    software: { tsq: o.version, node: process.version },
    platform: { system: osType(), arch: arch(), kernel: release() },
    app: { module: o.modulePath, name: o.app?.name ?? null },
    broker: url(o.broker),
    resultBackend: o.resultBackend ? url(o.resultBackend) : null,
    settings: masked,
  }
}

/** Celery's layout: `software -> ...`, then one `name: repr` line per setting. */
export function formatReport(r: Report): string {
  const scheme = (u: string | null) => (u ? u.split(':')[0] : 'disabled')
  return [
    `software -> tsq:${r.software.tsq} node:${r.software.node}`,
    `platform -> system:${r.platform.system} arch:${r.platform.arch} kernel version:${r.platform.kernel}`,
    `app      -> ${r.app.module ? `${r.app.name}:${r.app.module}` : 'default (no -A)'}`,
    `settings -> transport:${scheme(r.broker)} results:${scheme(r.resultBackend)}`,
    '',
    `broker_url: ${JSON.stringify(r.broker)}`,
    `result_backend: ${JSON.stringify(r.resultBackend ?? 'disabled://')}`,
    ...Object.entries(r.settings).map(([k, v]) => `${k}: ${JSON.stringify(v)}`),
    '',
  ].join('\n')
}
