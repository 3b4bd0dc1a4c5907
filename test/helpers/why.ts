// `tsq why` as a script runs it, for the e2e and interop tests: its exit
// status and its --json answer, and a wait until it says a given state.
import type { WhyAnswer } from '../../src/client/index.js'
import { waitFor } from './brokers.js'
import { runTsq } from './cli.js'

export interface WhyRun {
  code: number | null
  answer: WhyAnswer
}

export async function whyRun(env: NodeJS.ProcessEnv, id: string, extra: readonly string[] = []): Promise<WhyRun> {
  const r = await runTsq(['why', id, '-t', '1', '--json', ...extra], { env })
  try {
    return { code: r.code, answer: JSON.parse(r.stdout) as WhyAnswer }
  } catch {
    throw new Error(`tsq why ${id} exited ${r.code} without a JSON answer:\n${r.stdout}${r.stderr}`)
  }
}

/** Asks again until the answer has `state` (and `detail`), for a task on its way there; the last answer. */
export async function whyUntil(
  env: NodeJS.ProcessEnv,
  id: string,
  state: string,
  options: { detail?: string; extra?: readonly string[]; timeoutMs?: number } = {},
): Promise<WhyRun> {
  let last: WhyRun | undefined
  try {
    return await waitFor(
      async () => {
        last = await whyRun(env, id, options.extra)
        const ok = last.answer.state === state && (options.detail === undefined || last.answer.detail === options.detail)
        return ok ? last : null
      },
      { timeoutMs: options.timeoutMs ?? 20_000, intervalMs: 100, what: `tsq why ${id} to say ${state}` },
    )
  } catch (error) {
    throw new Error(
      `${(error as Error).message}; last answer: ${last ? JSON.stringify({ code: last.code, ...last.answer, facts: undefined }) : 'none'}`,
      { cause: error },
    )
  }
}
