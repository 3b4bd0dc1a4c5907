// What keeps a worker process's memory near what it needs at rest: V8's young
// generation held small (tricks/young-generation.ts) and the heap and malloc's
// arenas given back once idle (app/idle-trim.ts, which the dashboard uses too).
// The figure that counts is anonymous memory (Pss_Anon), not RSS, which also
// maps node's own binary (bench/worker-memory.ts).
export { keepYoungGenerationSmall, youngGenerationExecArgv } from './tricks/young-generation.js'
export { compactingGc, fullGc, releaseNativeMemory, trimMemoryWhenIdle, type IdleTrimOptions } from '../process/index.js'
