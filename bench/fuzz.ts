// The decoder fuzzing of test/unit/protocol/decoder-fuzz.test.ts, longer:
//   node --import tsx bench/fuzz.ts [numRuns] [seed]
// A failure prints fast-check's counterexample and seed (rerun with that seed).
import { fuzzDecoders } from '../test/helpers/decoder-fuzz.js'

const numRuns = Number(process.argv[2] ?? 5000)
const seed = Number(process.argv[3] ?? Date.now() % 2 ** 31)
if (!Number.isInteger(numRuns) || numRuns < 1 || !Number.isInteger(seed)) {
  process.stderr.write('usage: node --import tsx bench/fuzz.ts [numRuns] [seed]\n')
  process.exit(2)
}
const started = Date.now()
process.stdout.write(`fuzzing the decoders: ${numRuns} runs per property, seed ${seed}\n`)
fuzzDecoders({ seed, numRuns })
process.stdout.write(`ok: no escaped throw, everything decoded can be handed off (${((Date.now() - started) / 1000).toFixed(1)} s)\n`)
