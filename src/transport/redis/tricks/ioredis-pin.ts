// The ioredis the Redis tricks were written and measured against. Another
// version (an `npm update`) turns lpush-wire.ts off at run time, with one
// NODE_DEBUG=tsq line, and fails test/unit/transport/library-pins.test.ts:
// re-read the internals it touches, re-measure (bench/README.md#tricks), then
// move the pin. busy-poll.ts and claim-overlap.ts touch no ioredis internals.
import ioredisPackage from 'ioredis/package.json' with { type: 'json' }
import { Command, Redis } from 'ioredis'
import { libraryAsMeasured } from '../../../tricks/index.js'

export const IOREDIS_MEASURED = '5.11.1'

/** The internals lpush-wire.ts relies on, or the first one missing. */
export function ioredisShapeGap(): string | undefined {
  if (typeof (Command.prototype as unknown as Record<string, unknown>).toWritable !== 'function') return 'Command#toWritable'
  if (typeof Redis.prototype.sendCommand !== 'function') return 'Redis#sendCommand'
  return undefined
}

/** Whether the ioredis loaded is the one measured, with the internals its tricks touch. */
export function ioredisAsMeasured(version: string = ioredisPackage.version): boolean {
  return libraryAsMeasured('ioredis', version, IOREDIS_MEASURED, ioredisShapeGap)
}
