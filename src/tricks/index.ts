// Every performance trick tsq plays (a patch of a library's internals, a runtime
// tuning, the CLI's fast path), by name, with the environment variable that
// turns it off, and TSQ_NO_TRICKS that turns them all off. Each trick lives in
// one module of its own (`home`); with its switch off, the plain way runs.
// docs/tricks.md and docs/performance.md list these switches (a unit test keeps them in
// step), and bench/README.md#tricks has what each was measured to be worth.
//
// A leaf module (node:util only): the worker's launcher reads it before the
// bundle loads (worker/tricks/young-generation.ts), and bin/run.js and
// bin/code-cache.js, plain CommonJS, read the same variables themselves.
import { debuglog } from 'node:util'

export interface Trick {
  /** Set to anything but the empty string, this turns the trick off. */
  readonly env: string
  /** Where it lives. */
  readonly home: string
  /** What it does, in a line. */
  readonly what: string
  /** Read by `npm run build`, not at run time. */
  readonly atBuild?: true
}

/** Turns every trick off (the plain path everywhere), at run time and at build time. */
export const ALL_TRICKS_OFF = 'TSQ_NO_TRICKS'

export const TRICKS = {
  fastPath: {
    env: 'TSQ_NO_FAST_PATH',
    home: 'src/cli/fast-path.ts',
    what: '`inspect`, `control`, `status` and `migrate` parsed and run without loading oclif (flag specs from the command classes, baked at build)',
  },
  codeCache: {
    env: 'TSQ_NO_CODE_CACHE',
    home: 'bin/code-cache.js',
    what: "the fast path's bundle loaded through V8's code cache (`dist/bundle/fast.cjs.v8cache`)",
  },
  deferredCaCerts: {
    env: 'TSQ_NO_DEFERRED_CA_CERTS',
    home: 'bin/run.js (its sh lines), src/transport/tls.ts',
    what: "the one-shot remote commands start Node without reading NODE_EXTRA_CA_CERTS; tsq's broker TLS adds the file's certificates itself",
  },
  directPublish: {
    env: 'TSQ_NO_DIRECT_PUBLISH',
    home: 'src/transport/amqp/tricks/direct-publish.ts',
    what: "an AMQP publish hands amqplib's channel the task's own header table, skipping the `Object.create(headers)` of its `publish`",
  },
  publishFrames: {
    env: 'TSQ_NO_PUBLISH_FRAMES',
    home: 'src/transport/amqp/tricks/publish-frames.ts',
    what: "a direct publish under 2 KB is framed by tsq into one buffer and put on the channel's frame stream",
  },
  batchWrites: {
    env: 'TSQ_NO_BATCH_WRITES',
    home: 'src/transport/amqp/tricks/batch-writes.ts',
    what: "amqplib's frame multiplexer writes each pass to the socket as one writev (corked), not one write per frame",
  },
  nowaitDeclare: {
    env: 'TSQ_NO_NOWAIT_DECLARE',
    home: 'src/transport/amqp/tricks/nowait-declare.ts',
    what: "a queue, its exchanges and bindings declared in one round trip (nowait through amqplib's `sendImmediately`)",
  },
  lpushWire: {
    env: 'TSQ_NO_LPUSH_WIRE',
    home: 'src/transport/redis/tricks/lpush-wire.ts',
    what: "a batch of sends to one Redis list written as the LPUSH's RESP bytes as each is made, handed to ioredis as one command",
  },
  claimOverlap: {
    env: 'TSQ_NO_CLAIM_OVERLAP',
    home: 'src/transport/redis/tricks/claim-overlap.ts',
    what: "the solo pool's Redis claim loop splits a small prefetch window into two claims on the wire while a CPU is free",
  },
  busyPoll: {
    env: 'TSQ_NO_BUSY_POLL',
    home: 'src/transport/redis/tricks/busy-poll.ts',
    what: 'while a Redis claim is due within 0.3 ms, the event loop polls instead of sleeping in epoll_wait',
  },
  youngGeneration: {
    env: 'TSQ_NO_YOUNG_GENERATION',
    home: 'src/worker/tricks/young-generation.ts',
    what: "a worker and its pool processes and threads keep V8's young generation at 1 MB semi-spaces",
  },
  idleGc: {
    env: 'TSQ_NO_IDLE_GC',
    home: 'src/process/idle-trim.ts',
    what: 'a compacting full GC once the event loop has been quiet for 5 s after work that grew the heap',
  },
  mallocTrim: {
    env: 'TSQ_NO_MALLOC_TRIM',
    home: 'src/process/idle-trim.ts',
    what: "glibc's `malloc_trim(0)` through koffi after that GC, and when a pool thread exits",
  },
  ioredisCommandPrototype: {
    env: 'TSQ_NO_IOREDIS_PROTOTYPE_PATCH',
    home: 'scripts/bundle-patches.mjs',
    what: "the bundle's ioredis adds its ~570 command methods to a dictionary-mode prototype",
    atBuild: true,
  },
  oclifPlainSort: {
    env: 'TSQ_NO_OCLIF_SORT_PATCH',
    home: 'scripts/bundle-patches.mjs',
    what: "the bundle's oclif sorts its command ids by code unit, not `localeCompare` (which builds ICU's collator)",
    atBuild: true,
  },
} as const satisfies Record<string, Trick>

export type TrickName = keyof typeof TRICKS

const isSet = (value: string | undefined): boolean => value !== undefined && value !== ''

/** Whether `name` may run: neither its own switch nor TSQ_NO_TRICKS is set. Cheap, but read it once per connection or process, not per message. */
export function trickOn(name: TrickName, env: NodeJS.ProcessEnv = process.env): boolean {
  return !isSet(env[ALL_TRICKS_OFF]) && !isSet(env[TRICKS[name].env])
}

const say = debuglog('tsq')
/** Each library version's answer, so each says its line once. */
const checked = new Map<string, boolean>()

/**
 * Whether the library a trick patches is the version that trick was written
 * and measured against (`measured`), and has the internals it touches (`shapeGap` names the first one missing).
 * When not, the trick stays off for this process and one line says so under
 * NODE_DEBUG=tsq; the plain path runs, as with the trick's switch set.
 * test/unit/transport/library-pins.test.ts fails on the same mismatch.
 */
export function libraryAsMeasured(library: string, found: string, measured: string, shapeGap: () => string | undefined): boolean {
  const key = `${library}@${found}`
  const known = checked.get(key)
  if (known !== undefined) return known
  const wrongShape = found === measured ? shapeGap() : undefined
  const ok = found === measured && wrongShape === undefined
  checked.set(key, ok)
  if (!ok) {
    const why =
      found !== measured ? `${library} is ${found}, its tricks were measured on ${measured}` : `${library} ${found} lacks ${wrongShape}`
    say('%s: the tricks that patch it are off (see docs/tricks.md)', why)
  }
  return ok
}
