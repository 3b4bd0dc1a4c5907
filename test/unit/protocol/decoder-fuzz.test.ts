// tsq-test: slow (thousands of generated inputs through every decoder)
// Property-based fuzzing (fast-check, fixed seed) of the decoders a worker's
// admission uses, and of the event and result decoders: generated and mutated
// task messages (v1 and v2 bodies, headers, content types and encodings, deep
// nesting, huge strings, prototype keys) and Redis envelopes either decode to
// something the pool channel, reprs and inspect replies can carry, or throw
// the decoder's documented error; pickles (Python's protocols 0-5, opcode soup,
// reference bombs, deep nesting, cut and flipped bytes) read to a plain value
// or are refused; kombu JSON, control requests and replies, result metas in
// each backend codec, beat entries and signed bodies give a value that clones,
// reprs, pformats and dumps, or their own one-line error.
// bench/fuzz.ts runs the same with more runs.
import { describe, it } from 'node:test'
import { fuzzDecoders } from '../../helpers/decoder-fuzz.js'

describe('decoder fuzzing', () => {
  it('no throw escapes but the documented errors, and what decodes can be handed off', { timeout: 300_000 }, () => {
    fuzzDecoders({ seed: 20261207, numRuns: 150 })
  })
})
