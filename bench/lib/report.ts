// One line per figure, tsq beside its peer from the same run:
//   name  tsq=123.4ms  peer=456.7ms  ratio=0.27   (peer: what it was)
// or, with --json, one JSON document with every figure and the environment.
import type { Samples } from './measure.js'

export interface Figure {
  name: string
  /** What the peer figure is, e.g. "celery inspect ping" or "node -e 0". */
  peerLabel: string
  tsq: Samples
  peer: Samples
}

/** tsq's median over the peer's: below 1 means tsq is faster. */
export function ratio(f: Figure): number {
  return f.tsq.median / f.peer.median
}

export function formatLine(f: Figure): string {
  const ms = (v: number) => `${v.toFixed(1)}ms`
  return `${f.name}  tsq=${ms(f.tsq.median)}  peer=${ms(f.peer.median)}  ratio=${ratio(f).toFixed(2)}   (peer: ${f.peerLabel}; min tsq=${ms(f.tsq.min)} peer=${ms(f.peer.min)}; n=${f.tsq.ms.length})`
}

export function toJson(figures: readonly Figure[], env: Record<string, unknown>): string {
  return JSON.stringify({
    env,
    figures: figures.map((f) => ({
      name: f.name,
      peer: f.peerLabel,
      tsqMedianMs: f.tsq.median,
      peerMedianMs: f.peer.median,
      ratio: ratio(f),
      tsqMs: f.tsq.ms,
      peerMs: f.peer.ms,
    })),
  })
}
