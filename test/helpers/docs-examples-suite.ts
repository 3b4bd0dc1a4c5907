// The suite of test/integration/docs-examples-{1,2,3}.test.ts: every code example in README.md and
// docs/ runs as written: each page's ```ts/```js modules and ```sh/```bash command lines, in the
// page's order, in a folder of its own where `import ... from 'tsq'` and the `tsq` command are this
// checkout, on a private embedded broker. A block fails the test when it exits with another status
// than it says (0 unless `exit=N`), lacks the output it says it prints, or a `bg` block never says it
// is ready. Blocks marked `norun="why"` are not run, and are listed with their reasons (by the first
// shard, for every page picked); blocks that `needs=redis` (this test's own Redis database) or
// `needs=celery` (Python Celery on the PATH) run where those are at hand. The info strings are read by
// test/helpers/markdown.ts.
//
// The pages are shared out to three files (docsShards: by their runnable blocks, so the lanes end
// together). TSQ_DOCS_PAGES=README.md,docs/x.md runs some pages only, in whichever shard holds them:
// `TSQ_DOCS_PAGES=docs/locks.md node --import tsx --test test/integration/docs-examples-*.test.ts`.
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { brokerSkipReason, REDIS_URL } from './brokers.js'
import { blocks, markdownPages, ROOT, RUN_LANGS, type Block } from './markdown.js'
import { GroupProcess, sleep } from './process-group.js'

const PYTHON = '/usr/bin/python3'
const BLOCK_TIMEOUT_MS = 180_000
const READY_TIMEOUT_MS = 90_000

const only = process.env.TSQ_DOCS_PAGES?.split(',').filter(Boolean)
const pages = markdownPages().filter((page) => !only || only.includes(page))

/** The files the pages are shared out to, each run by a lane of its own. */
export const DOCS_SHARDS = 3

/** A page's blocks the test takes: those it runs or lists, and the modules written for the blocks after them. */
function pageBlocksOf(page: string): Block[] {
  return blocks(page).filter((b) => RUN_LANGS.has(b.lang) || b.attrs.file !== undefined)
}

/**
 * Each page's shard (0-based), from every page (not only TSQ_DOCS_PAGES's), so a page stays in its
 * shard when some are picked: the pages by their runnable blocks, most first (then by name), each to
 * the shard with the fewest runnable blocks so far (the lowest-numbered on a tie).
 */
export function docsShards(): Map<string, number> {
  const weighed = markdownPages()
    .map((page) => ({ page, runs: pageBlocksOf(page).filter(isRun).length }))
    .sort((a, b) => b.runs - a.runs || a.page.localeCompare(b.page))
  const load = Array.from({ length: DOCS_SHARDS }, () => 0)
  const shardOf = new Map<string, number>()
  for (const { page, runs } of weighed) {
    const shard = load.indexOf(Math.min(...load))
    shardOf.set(page, shard)
    load[shard]! += runs
  }
  return shardOf
}

/** Whether a block is run, and if not, why. */
function isRun(block: Block): boolean {
  return RUN_LANGS.has(block.lang) && block.attrs.norun === undefined
}

function label(block: Block): string {
  // norun's reason is given as the skip's, not twice.
  const attrs = Object.entries(block.attrs).map(([k, v]) =>
    v === '' || k === 'norun' ? k : `${k}=${v.includes(' ') ? JSON.stringify(v) : v}`,
  )
  return `${block.page}:${block.line} ${[block.lang, ...attrs].join(' ')}`
}

const pythonCelery = spawnSync(PYTHON, ['-c', 'import celery'], { stdio: 'ignore' }).status === 0
const redisSkip = await brokerSkipReason('redis')

function needsSkip(block: Block): string | false {
  for (const need of (block.attrs.needs ?? '').split(',').filter(Boolean)) {
    if (need === 'redis' && redisSkip) return redisSkip
    if (need === 'celery' && !pythonCelery) {
      const reason = `Python Celery is not importable by ${PYTHON}`
      if (process.env.CI) throw new Error(`CI requires it: ${reason}`)
      return reason
    }
  }
  return false
}

/** A page's folder: `tsq` importable and on the PATH, Celery's `celery` too, and a home for the embedded broker. */
class PageFolder {
  readonly dir = mkdtempSync(join(tmpdir(), 'tsq-docs-'))
  readonly home = join(this.dir, '.tsq-home')
  private readonly bg: GroupProcess[] = []

  constructor() {
    mkdirSync(join(this.dir, 'node_modules'))
    symlinkSync(ROOT, join(this.dir, 'node_modules', 'tsq'))
    symlinkSync(join(ROOT, 'node_modules', 'tsx'), join(this.dir, 'node_modules', 'tsx'))
    // The OpenTelemetry API and SDK a traced example imports (docs/tracing.md).
    if (existsSync(join(ROOT, 'node_modules', '@opentelemetry')))
      symlinkSync(join(ROOT, 'node_modules', '@opentelemetry'), join(this.dir, 'node_modules', '@opentelemetry'))
    // A project of ES modules, as a `.ts` task module needs (docs/getting-started-node.md).
    writeFileSync(join(this.dir, 'package.json'), JSON.stringify({ name: 'docs-example', private: true, type: 'module' }) + '\n')
    const bin = join(this.dir, '.bin')
    mkdirSync(bin)
    this.script(join(bin, 'tsq'), `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(join(ROOT, 'bin', 'run.js'))} "$@"`)
    if (pythonCelery) this.script(join(bin, 'celery'), `exec ${PYTHON} -m celery "$@"`)
  }

  private script(path: string, line: string): void {
    writeFileSync(path, `#!/bin/sh\n${line}\n`)
    chmodSync(path, 0o755)
  }

  env(block: Block): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${join(this.dir, '.bin')}:${process.env.PATH}`,
      HOME: this.dir,
      TSQ_HOME: this.home,
      // The caller's shell names no broker for the examples: the embedded one, unless the block needs another.
      TSQ_BROKER_URL: '',
      CELERY_BROKER_URL: '',
      TSQ_RESULT_BACKEND: '',
      CELERY_RESULT_BACKEND: '',
      NO_COLOR: '1',
      PYTHONDONTWRITEBYTECODE: '1',
    }
    // As a Python shop's machines have them: the environment Celery's own workers read.
    if ((block.attrs.needs ?? '').split(',').includes('redis'))
      Object.assign(env, { CELERY_BROKER_URL: REDIS_URL, CELERY_RESULT_BACKEND: REDIS_URL })
    return env
  }

  /** The command that runs a block, after writing what it needs into the folder. */
  command(block: Block): string[] {
    const name = block.attrs.file ?? (block.lang === 'ts' ? `example-${block.line}.ts` : `example-${block.line}.js`)
    if (block.lang === 'sh' || block.lang === 'bash') return ['bash', '-e', '-o', 'pipefail', '-c', block.body]
    return [process.execPath, '--import', 'tsx', name]
  }

  write(block: Block): void {
    const name =
      block.attrs.file ??
      (block.lang === 'sh' || block.lang === 'bash'
        ? undefined
        : block.lang === 'ts'
          ? `example-${block.line}.ts`
          : `example-${block.line}.js`)
    if (!name) return
    mkdirSync(dirname(join(this.dir, name)), { recursive: true })
    writeFileSync(join(this.dir, name), block.body)
  }

  async run(block: Block): Promise<void> {
    this.write(block)
    const [cmd, ...args] = this.command(block)
    const child = spawn(cmd!, args, { cwd: this.dir, env: this.env(block), stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    const proc = new GroupProcess(child)
    if (block.attrs.bg !== undefined) {
      this.bg.push(proc)
      const ready = block.attrs.ready
      assert.ok(ready, `${label(block)}: a bg block says what its output shows once it is ready (ready="...")`)
      const deadline = Date.now() + READY_TIMEOUT_MS
      while (!proc.log.includes(ready)) {
        if (proc.hasExited) assert.fail(`${label(block)} exited before it said ${JSON.stringify(ready)}:\n${proc.logTail()}`)
        if (Date.now() > deadline)
          assert.fail(`${label(block)} did not say ${JSON.stringify(ready)} within ${READY_TIMEOUT_MS / 1000} s:\n${proc.logTail()}`)
        await sleep(100)
      }
      return
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-proc.pid, 'SIGKILL')
      } catch {
        // gone
      }
    }, BLOCK_TIMEOUT_MS)
    const status = await proc.exited
    clearTimeout(timer)
    const expected = Number(block.attrs.exit ?? 0)
    assert.equal(status, expected, `${label(block)} ended with ${status}, not ${expected}:\n${proc.logTail()}`)
    if (block.attrs.prints !== undefined)
      assert.ok(
        proc.log.includes(block.attrs.prints),
        `${label(block)} did not print ${JSON.stringify(block.attrs.prints)}:\n${proc.logTail()}`,
      )
  }

  /** Stops what the page left running: its bg blocks (TERM, as an operator's Ctrl-C), then any detached worker by its pidfile. */
  async close(): Promise<void> {
    for (const proc of this.bg.reverse()) {
      if (proc.hasExited) continue
      try {
        process.kill(-proc.pid, 'SIGTERM')
      } catch {
        // gone
      }
      const killed = setTimeout(() => {
        try {
          process.kill(-proc.pid, 'SIGKILL')
        } catch {
          // gone
        }
      }, 30_000)
      await proc.exited
      clearTimeout(killed)
    }
    for (const pidfile of pidfiles(this.dir)) {
      const pid = Number(readFileSync(pidfile, 'utf8').trim())
      if (!(pid > 0) || !isOurs(pid, this.dir)) continue
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone
      }
    }
    rmSync(this.dir, { recursive: true, force: true })
  }
}

function pidfiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((d) => d.isFile() && d.name.endsWith('.pid'))
    .map((d) => join(d.parentPath, d.name))
}

/** A live process started from this page's folder (its pidfile may be stale, or name someone else's pid). */
function isOurs(pid: number, dir: string): boolean {
  try {
    return existsSync(`/proc/${pid}`) && readFileSync(`/proc/${pid}/environ`, 'utf8').includes(`TSQ_HOME=${join(dir, '.tsq-home')}`)
  } catch {
    return false
  }
}

/** Why a block is not run, or false: its norun reason, else a service it needs that is missing. */
function skipReason(block: Block): string | false {
  const runs = isRun(block)
  return RUN_LANGS.has(block.lang) && !runs ? block.attrs.norun! : runs ? needsSkip(block) : false
}

/**
 * The pages of one shard (0-based), each page's blocks in its order in a folder of its own; the
 * first shard also lists the examples not run, of every page picked.
 */
export function docsExamplesShard(shard: number): void {
  const shardOf = docsShards()
  for (const page of pages) {
    if (shardOf.get(page) !== shard) continue
    const pageBlocks = pageBlocksOf(page)
    if (pageBlocks.length === 0) continue
    describe(page, () => {
      let folder: PageFolder
      before(() => {
        folder = new PageFolder()
        // A module that is not run is still there for the blocks after it.
        for (const block of pageBlocks) if (block.attrs.file !== undefined && block.attrs.norun !== undefined) folder.write(block)
      })
      after(async () => {
        await folder.close()
      })
      for (const block of pageBlocks) {
        const runs = isRun(block)
        it(label(block), { skip: skipReason(block), timeout: BLOCK_TIMEOUT_MS + READY_TIMEOUT_MS }, async () => {
          if (runs) await folder.run(block)
          else folder.write(block)
        })
      }
    })
  }

  if (shard !== 0) return
  describe('the examples not run', () => {
    it('are listed, each with its reason', (t) => {
      const skipped = pages.flatMap((page) =>
        pageBlocksOf(page).flatMap((block) => {
          const skip = skipReason(block)
          return skip ? [`${label(block)}: ${skip}`] : []
        }),
      )
      t.diagnostic(`${skipped.length} example(s) not run:`)
      for (const line of skipped) t.diagnostic(`  ${line}`)
      const runnable = pages.flatMap((page) => blocks(page).filter((b) => RUN_LANGS.has(b.lang)))
      assert.ok(runnable.length === 0 || skipped.length < runnable.length, 'some examples run')
    })
  })
}
