// --health-port and --health-stuck-after, shared by `tsq worker`, `tsq beat`
// and `tsq dashboard`: Kubernetes probes served from a thread of their own (docs/kubernetes.md).
import { Flags } from '@oclif/core'
import { floatFlag } from './oclif-flags.js'

export const healthFlags = {
  'health-port': Flags.string({
    description:
      'Serve /healthz (the event loop turns), /readyz (ready for work) and /metrics (with the queue load) on this port, or HOST:PORT; a thread of its own answers however busy the process is. See docs/kubernetes.md.',
  }),
  'health-stuck-after': floatFlag({
    description:
      'Seconds without an event-loop turn after which /healthz fails (default 30); a task running on the solo pool extends it by its time limit.',
    min: 0.1,
  }),
}

/** What the flags give, for the runtimes. */
export function healthFlagsOf(flags: { 'health-port'?: string; 'health-stuck-after'?: number }): { port?: string; stuckAfter?: number } {
  return { port: flags['health-port'], stuckAfter: flags['health-stuck-after'] }
}
