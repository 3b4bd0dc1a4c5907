/**
 * Delay before reconnect attempt `attempt` (0-based): exponential from 100 ms,
 * capped at 10 s, with "equal jitter" so a fleet of workers dropped by the same
 * broker restart does not reconnect in lockstep.
 */
export function reconnectDelayMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(10_000, 100 * 2 ** Math.min(attempt, 20))
  return Math.round(ceiling / 2 + random() * (ceiling / 2))
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done(): void {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, { once: true })
  })
}
