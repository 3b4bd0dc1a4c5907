// The docs hold together without running anything: every relative link of
// README.md and docs/ reaches a file of this repository (and the heading it
// names), nothing points outside the repository, every code block's info string
// is one the examples test reads, and README.md stays the front door: short,
// with its two set-up commands real npm scripts and every command in its table.
// (The examples themselves run in test/integration/docs-examples-*.test.ts.)
import assert from 'node:assert/strict'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { anchors, ATTRIBUTES, blocks, links, markdownPages, NEEDS, readPage, ROOT, RUN_LANGS } from '../helpers/markdown.js'

// Pages other branches are writing at the same time; a link to one may wait for it while it is missing.
const WRITTEN_ELSEWHERE = new Set<string>([])

const pages = markdownPages()

describe('links in the docs', () => {
  it('reach a file of this repository, and the heading they name', () => {
    const broken: string[] = []
    for (const page of pages) {
      for (const { target, line } of links(readPage(page))) {
        if (/^[a-z][a-z+.-]*:/i.test(target)) continue // https:, mailto:: outside by nature, and not a path
        const [path, anchor] = target.split('#') as [string, string | undefined]
        const file = path === '' ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), decodeURIComponent(path))
        const where = `${page}:${line} ${target}`
        const inRepo = relative(ROOT, file)
        if (inRepo.startsWith('..') || inRepo.startsWith('/')) {
          broken.push(`${where}: points outside the repository`)
          continue
        }
        if (!existsSync(file)) {
          if (!WRITTEN_ELSEWHERE.has(inRepo)) broken.push(`${where}: no such file`)
          continue
        }
        if (anchor && file.endsWith('.md') && statSync(file).isFile() && !anchors(readFileSync(file, 'utf8')).has(anchor))
          broken.push(`${where}: no heading #${anchor} in ${inRepo}`)
      }
    }
    assert.deepEqual(broken, [])
  })

  it('name no place outside the repository in their text either', () => {
    const outside = pages.flatMap((page) =>
      readPage(page)
        .split('\n')
        .flatMap((text, i) => (/\]\(\.\.\/\.\.\/|\/work\/|\.\.\/shared\b/.test(text) ? [`${page}:${i + 1}: ${text.trim()}`] : [])),
    )
    assert.deepEqual(outside, [])
  })
})

describe("the code blocks' info strings", () => {
  it('say only what the examples test reads: a language, then file, bg ready, needs, exit, prints or norun with a reason', () => {
    const wrong: string[] = []
    for (const page of pages) {
      for (const b of blocks(page)) {
        const where = `${page}:${b.line} ${b.lang}`
        for (const key of Object.keys(b.attrs)) if (!ATTRIBUTES.has(key)) wrong.push(`${where}: unknown attribute ${key}`)
        if (Object.keys(b.attrs).length > 0 && !RUN_LANGS.has(b.lang) && Object.keys(b.attrs).some((k) => k !== 'file'))
          wrong.push(`${where}: only file= means something on a block that is not run`)
        if (b.attrs.norun !== undefined && b.attrs.norun.trim().length < 10) wrong.push(`${where}: norun says why`)
        if (b.attrs.bg !== undefined && !b.attrs.ready) wrong.push(`${where}: bg needs ready="what its output says once ready"`)
        if (b.attrs.exit !== undefined && !/^\d+$/.test(b.attrs.exit)) wrong.push(`${where}: exit is a number`)
        for (const need of (b.attrs.needs ?? '').split(',').filter(Boolean))
          if (!NEEDS.has(need)) wrong.push(`${where}: unknown need ${need}`)
        if (b.attrs.file !== undefined && (b.attrs.file === '' || b.attrs.file.startsWith('/') || b.attrs.file.includes('..')))
          wrong.push(`${where}: file= names a file inside the page's folder`)
      }
    }
    assert.deepEqual(wrong, [])
  })

  it('are read as written: a language, then key=value and key="a value" attributes', () => {
    const [b] = blocks('x.md', '```sh bg ready="visit me at" needs=redis,celery\ntsq dashboard\n```\n')
    assert.deepEqual(
      { lang: b!.lang, attrs: b!.attrs, body: b!.body },
      {
        lang: 'sh',
        attrs: { bg: '', ready: 'visit me at', needs: 'redis,celery' },
        body: 'tsq dashboard\n',
      },
    )
    const [indented] = blocks('x.md', '- a list item:\n\n  ```js\n  const a = 1\n  ```\n')
    assert.equal(indented!.body, 'const a = 1\n')
  })
})

describe('README.md, the front door', () => {
  const readme = readPage('README.md')

  it('is at most 300 lines', () => {
    assert.ok(readme.split('\n').length <= 300, `README.md has ${readme.split('\n').length} lines`)
  })

  it("gives exactly two set-up commands, each of them this package's npm scripts", () => {
    const setUp = blocks('README.md', readme.slice(readme.indexOf('## Set-up')))[0]!
    const commands = setUp.body.split('\n').filter((line) => line.trim() && !line.trim().startsWith('#'))
    assert.equal(commands.length, 2, commands.join('\n'))
    const scripts = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
    for (const command of commands) {
      const named = [...command.matchAll(/npm (?:run ([\w:-]+)|(test))/g)].map((m) => m[1] ?? m[2]!)
      assert.ok(named.length > 0, `${command}: runs an npm script`)
      for (const script of named) assert.ok(scripts[script], `${command}: package.json has no script ${script}`)
    }
  })

  it("lists every command of the CLI's manifest, linked to its reference page", () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as {
      commands: Record<string, { hidden?: boolean }>
    }
    const tops = new Set(
      Object.entries(manifest.commands)
        .filter(([, c]) => !c.hidden)
        .map(([id]) => id.split(':')[0]!),
    )
    const table = readme.slice(readme.indexOf('## Commands'), readme.indexOf('## Exit codes'))
    const missing = [...tops].filter((top) => !table.includes(`[\`tsq ${top}\`](docs/commands/${top}.md)`))
    assert.deepEqual(missing, [])
  })
})
