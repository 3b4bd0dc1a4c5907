// setTimeout for any delay. Node's timers hold 32 bits of milliseconds: a delay
// past 2**31-1 ms (24.8 days) fires after 1 ms, with only a warning. Celery takes
// ETAs and time limits of any length, and since the AMQP table codec carries
// Python's integers intact, such values now reach the worker.
const MAX_TIMER_MS = 2 ** 31 - 1

export interface LongTimeout {
  /** Cancels it; a no-op once it has fired. */
  clear(): void
}

/** Calls `fn` once `ms` milliseconds have passed, in steps Node's timers can hold. */
export function setLongTimeout(fn: () => void, ms: number, options: { unref?: boolean } = {}): LongTimeout {
  const due = Date.now() + Math.max(0, ms)
  let timer: NodeJS.Timeout
  const arm = (): void => {
    const left = due - Date.now()
    timer = setTimeout(left > MAX_TIMER_MS ? arm : fn, Math.min(Math.max(0, left), MAX_TIMER_MS))
    if (options.unref) timer.unref()
  }
  arm()
  return { clear: () => clearTimeout(timer) }
}
