#!/usr/bin/env node
// The unit tier: its files run in a few processes (shards, one per core),
// each importing its share of the files, instead of a process and a tsx
// start-up per file. A unit test starts no process and sleeps on no real clock,
// so the files of one shard run one after another in one process without
// waiting on each other; what they share is the module cache.
//
// A file that needs a process of its own (it tests module-level state that
// another file's imports would change) says so with a line
// `// tsq-test: own-process`. A file may not add hooks at its top level
// (beforeEach/afterEach there would run around every other file's tests):
// the runner refuses it. A file that takes seconds says `// tsq-test: slow`:
// it counts as ten ordinary files when the files are shared out.
//
// Usage: node scripts/test-unit.mjs [FILE...]   (env TSQ_UNIT_SHARDS, default: the cores;
// TSQ_UNIT_ISOLATE=1 runs every file in its own process, to find a file that
// passes only beside others)
import { spawn } from 'node:child_process'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const SHARD_ENTRY = '--tsq-unit-shard'

if (process.argv[2] === SHARD_ENTRY) {
  // Inside a shard: import each file; node:test runs their tests when the imports are done.
  for (const file of process.argv.slice(3)) {
    try {
      await import(pathToFileURL(resolve(file)).href)
    } catch (error) {
      process.exitCode = 1
      process.stderr.write(`\n✖ ${file} failed to load:\n${error?.stack ?? error}\n`)
    }
  }
} else {
  await main()
}

function testFiles(paths) {
  const out = []
  const walk = (p) => {
    if (statSync(p).isDirectory()) for (const name of readdirSync(p).sort()) walk(join(p, name))
    else if (/\.test\.(ts|mjs)$/.test(p)) out.push(p)
  }
  for (const p of paths) walk(p)
  return out
}

function run(args, label) {
  return new Promise((done) => {
    const started = Date.now()
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    const chunks = []
    child.stdout.on('data', (d) => chunks.push(d))
    child.stderr.on('data', (d) => chunks.push(d))
    child.on('close', (code, signal) => {
      const ok = code === 0
      process.stdout.write(Buffer.concat(chunks))
      process.stdout.write(
        `\n=== ${label} ${ok ? 'ok' : `FAILED${signal ? ` (${signal})` : ''}`} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
      )
      done(ok)
    })
  })
}

async function main() {
  const started = Date.now()
  const files = testFiles(process.argv.length > 2 ? process.argv.slice(2) : ['test/unit', 'examples'])
  const text = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]))
  const hooked = files.filter((f) => /^(beforeEach|afterEach)\(/m.test(text.get(f)))
  if (hooked.length > 0) {
    process.stderr.write(
      `[unit] top-level beforeEach/afterEach would run around every file's tests; put them inside a describe: ${hooked.join(' ')}\n`,
    )
    process.exit(1)
  }
  const isolate = process.env.TSQ_UNIT_ISOLATE === '1'
  const own = files.filter((f) => isolate || /^\/\/ tsq-test: own-process\b/m.test(text.get(f)))
  const shared = files.filter((f) => !own.includes(f))
  const count = Math.max(1, Math.min(Number(process.env.TSQ_UNIT_SHARDS ?? availableParallelism()), shared.length || 1))
  // Heaviest first, each to the lightest shard.
  const weight = (f) => (/^\/\/ tsq-test: slow\b/m.test(text.get(f)) ? 10 : 1)
  const shards = Array.from({ length: count }, () => ({ files: [], weight: 0 }))
  for (const f of [...shared].sort((a, b) => weight(b) - weight(a) || a.localeCompare(b))) {
    const lightest = shards.reduce((a, b) => (b.weight < a.weight ? b : a))
    lightest.files.push(f)
    lightest.weight += weight(f)
  }
  process.stdout.write(`[unit] ${shared.length} files in ${count} processes, ${own.length} in their own\n`)
  const reporter = ['--test-reporter=spec']
  const jobs = shards
    .filter((s) => s.files.length > 0)
    .map((s, i) => () => run([...reporter, process.argv[1], SHARD_ENTRY, ...s.files.sort()], `shard ${i + 1} (${s.files.length} files)`))
  for (const f of own) jobs.push(() => run(['--test', ...reporter, f], f))
  // As many at once as there are shards; the own-process files queue behind them.
  const results = []
  const queue = [...jobs]
  await Promise.all(
    Array.from({ length: count }, async () => {
      for (let job = queue.shift(); job; job = queue.shift()) results.push(await job())
    }),
  )
  const failed = results.filter((ok) => !ok).length
  process.stdout.write(
    `[unit] ${files.length} files in ${((Date.now() - started) / 1000).toFixed(1)} s${failed ? `; ${failed} process(es) FAILED` : ''}\n`,
  )
  process.exit(failed ? 1 : 0)
}
