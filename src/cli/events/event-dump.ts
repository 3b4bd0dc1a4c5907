// `tsq events --dump`: Celery's event dumper (celery/events/dumper.py), one
// line per event as `celery events --dump` prints it, or one JSON object per
// line with --json, until interrupted, --count events or --timeout seconds.
import { withTransport, EventReceiver } from '../../client/index.js'
import type { TransportSettings } from '../../transport/index.js'
import { dumpEventLine } from '../../protocol/index.js'

export interface EventDumpOptions {
  brokerUrl: string
  transportSettings?: TransportSettings
  json: boolean
  /** Stop after this many events. */
  count?: number
  /** Stop after this many seconds. */
  timeoutSeconds?: number
  write(line: string): void
  warn(line: string): void
}

/** Resolves with how many events were shown once the dump stops. */
export async function runEventDump(o: EventDumpOptions): Promise<number> {
  return withTransport(
    o.brokerUrl,
    async (transport) => {
      const taskNames = new Map<string, string>()
      let shown = 0
      let finish!: () => void
      const finished = new Promise<void>((resolve) => (finish = resolve))
      const receiver = new EventReceiver(transport, {
        onEvent: (event) => {
          if (o.count !== undefined && shown >= o.count) return
          o.write(o.json ? JSON.stringify(event) : dumpEventLine(event, taskNames))
          shown += 1
          if (o.count !== undefined && shown >= o.count) finish()
        },
        onUnreadable: (error) => o.warn(`unreadable event ignored: ${error.message}`),
        floats: o.json ? 'number' : 'pyfloat',
      })
      const onSignal = () => finish()
      process.once('SIGINT', onSignal)
      process.once('SIGTERM', onSignal)
      const timer = o.timeoutSeconds !== undefined ? setTimeout(finish, o.timeoutSeconds * 1000) : undefined
      try {
        // Before the receiver starts, as Celery's evdump says it: no event can come first.
        if (!o.json) o.write('-> evdump: starting capture...')
        await receiver.start()
        await finished
      } finally {
        if (timer) clearTimeout(timer)
        process.off('SIGINT', onSignal)
        process.off('SIGTERM', onSignal)
        await receiver.stop()
      }
      return shown
    },
    o.transportSettings,
  )
}
