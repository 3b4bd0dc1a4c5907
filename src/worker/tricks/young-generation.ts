// Keeps V8's young generation at 1 MB semi-spaces in a worker, its pool
// processes and its pool threads. Node's defaults suit a server that
// allocates steadily: under load V8 grows the semi-spaces to 16 MB, loading
// tsq's code alone takes them to 8 MB, and an idle worker keeps them
// (bench/README.md#tricks has what this saves, at the same throughput). An
// operator's own --max-semi-space-size, --min-semi-space-size or
// --semi-space-growth-factor (node's options or NODE_OPTIONS) wins.
// Switch: TSQ_NO_YOUNG_GENERATION.
//
// bin/run.js imports this before the bundle loads: it imports nothing but the
// switches' leaf module.
import { setFlagsFromString } from 'node:v8'
import { trickOn } from '../../tricks/index.js'

/** Node options that already decide the young generation's size; tsq then leaves it alone. */
const YOUNG_GENERATION_OPTIONS = /--(max-semi-space-size|min-semi-space-size|semi-space-growth-factor)\b/

const operatorChose = (execArgv: readonly string[], nodeOptions: string): boolean =>
  YOUNG_GENERATION_OPTIONS.test(`${execArgv.join(' ')} ${nodeOptions}`)

/**
 * Stops the young generation growing from here on, in this isolate and in
 * every one created after (the threads pool's). The growth factor is read on
 * every resize, so it holds in a process already running; a worker thread
 * gets heap limits of its own, which the 1 MB maximum (read by each isolate
 * made later) holds too. False when the operator chose or the switch is set.
 */
export function keepYoungGenerationSmall(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  if (!trickOn('youngGeneration', env) || operatorChose(execArgv, nodeOptions)) return false
  setFlagsFromString('--semi-space-growth-factor=1')
  setFlagsFromString('--max-semi-space-size=1')
  return true
}

/**
 * What a prefork child starts with: a young generation sized when its isolate
 * is made, so that loading the app and tsq's modules before its first line
 * runs cannot grow it (test/e2e/worker-young-generation.test.ts).
 */
export function youngGenerationExecArgv(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  if (!trickOn('youngGeneration', env) || operatorChose(execArgv, nodeOptions)) return []
  return ['--max-semi-space-size=1']
}
