// Which services a `tsq bus` or `tsq archive` command looks at: those named
// with --service, the events app of -A, and those tsq workers recorded
// (registry.ts). A named service nobody recorded (a Python one) is taken
// with the settings of this environment (AMQP_EVENTS_*), its handlers unknown.
import type { Transport } from '../transport/index.js'
import { busDescriptorOf } from './events-app.js'
import { listServices, type ServiceRecord } from './registry.js'
import { resolveBusSettings } from './settings.js'

export interface KnownService {
  record: ServiceRecord
  /** Found in the registry or the app module (its handlers are known). */
  recorded: boolean
}

export async function findServices(
  transport: Transport,
  options: { names?: readonly string[]; app?: unknown; all?: boolean } = {},
): Promise<KnownService[]> {
  const recorded = await listServices(transport)
  const out = new Map<string, KnownService>()
  const bus = busDescriptorOf(options.app)
  if (bus) out.set(bus.service, { record: { service: bus.service, events: bus.handlers(), settings: bus.settings }, recorded: true })
  const names = options.names ?? []
  for (const name of names) {
    if (out.has(name)) continue
    const r = recorded.find((x) => x.service === name)
    out.set(
      name,
      r ? { record: r, recorded: true } : { record: { service: name, events: [], settings: resolveBusSettings() }, recorded: false },
    )
  }
  if (options.all || (names.length === 0 && !bus))
    for (const r of recorded) if (!out.has(r.service)) out.set(r.service, { record: r, recorded: true })
  return [...out.values()]
}
