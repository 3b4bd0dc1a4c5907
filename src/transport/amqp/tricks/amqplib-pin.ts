// The amqplib these tricks were written and measured against. Another version
// (an `npm update`) turns them off at run time, with one NODE_DEBUG=tsq line,
// and fails test/unit/transport/library-pins.test.ts: re-read the internals
// each trick touches, re-measure (bench/README.md#tricks), then move the pin.
import amqplibPackage from 'amqplib/package.json' with { type: 'json' }
import channelModule from 'amqplib/lib/channel.js'
import connectionModule from 'amqplib/lib/connection.js'
import muxModule from 'amqplib/lib/mux.js'
import { libraryAsMeasured } from '../../../tricks/index.js'

export const AMQPLIB_MEASURED = '0.10.9'

/** The internals the tricks call, or the first one missing. */
export function amqplibShapeGap(): string | undefined {
  const channel = channelModule.Channel?.prototype as unknown as Record<string, unknown> | undefined
  for (const method of ['sendMessage', 'sendImmediately', 'pushConfirmCallback']) {
    if (typeof channel?.[method] !== 'function') return `Channel#${method} (lib/channel.js)`
  }
  if (typeof connectionModule.Connection?.prototype.sendMessage !== 'function') return 'Connection#sendMessage (lib/connection.js)'
  if (typeof (muxModule.Mux?.prototype as unknown as Record<string, unknown> | undefined)?._readIncoming !== 'function')
    return 'Mux#_readIncoming (lib/mux.js)'
  return undefined
}

/** Whether the amqplib loaded is the one measured, with the internals its tricks touch. */
export function amqplibAsMeasured(version: string = amqplibPackage.version): boolean {
  return libraryAsMeasured('amqplib', version, AMQPLIB_MEASURED, amqplibShapeGap)
}
