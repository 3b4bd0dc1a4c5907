// Reading the docs as the tests check them: the markdown files (README.md and
// docs/), their fenced code blocks with what each block's info string says
// about running it, their links and the anchors their headings make.
//
// A block's info string is its language, then attributes (docs/development.md,
// "The docs are tested", says what each means):
//   ```ts file=tasks.ts          written to tasks.ts in the page's folder, then run
//   ```sh bg ready="ready."      started, waited for until its output says `ready.`, stopped when the page ends
//   ```sh needs=redis,celery     run only where that service is at hand
//   ```sh exit=64                expected to end with that status
//   ```sh prints="5"             its output (stdout and stderr) holds that text
//   ```sh norun="why"            not run; the reason is listed by the test
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** The languages whose blocks are run: JavaScript and TypeScript modules, and shell. */
export const RUN_LANGS = new Set(['js', 'ts', 'sh', 'bash'])
export const ATTRIBUTES = new Set(['file', 'bg', 'ready', 'needs', 'exit', 'prints', 'norun'])
/** What a block may need beyond the embedded broker: the test's own Redis database, Python Celery 5.2.6 on the PATH. */
export const NEEDS = new Set(['redis', 'celery'])

export interface Block {
  /** The page, relative to the repository (`README.md`, `docs/locks.md`). */
  page: string
  /** 1-based line of the opening fence. */
  line: number
  lang: string
  attrs: Record<string, string>
  body: string
}

/** README.md and every .md under docs/, relative paths, sorted. */
export function markdownPages(): string[] {
  const out = ['README.md']
  const walk = (dir: string) => {
    for (const name of readdirSync(join(ROOT, dir)).sort()) {
      const path = join(dir, name)
      if (statSync(join(ROOT, path)).isDirectory()) walk(path)
      else if (name.endsWith('.md')) out.push(relative(ROOT, join(ROOT, path)))
    }
  }
  walk('docs')
  return out
}

export function readPage(page: string): string {
  return readFileSync(join(ROOT, page), 'utf8')
}

/** `lang key=value key="a value" flag` into its language and attributes (a bare flag is `''`). */
export function parseInfo(info: string): { lang: string; attrs: Record<string, string> } {
  const tokens = [...info.matchAll(/([^\s=]+)(?:=("([^"]*)"|\S*))?/g)]
  const [first, ...rest] = tokens
  const attrs: Record<string, string> = {}
  for (const m of rest) attrs[m[1]!] = m[3] ?? m[2] ?? ''
  return { lang: first?.[1] ?? '', attrs }
}

/** Every fenced block of a page, in order; a fence indented in a list item gives its body without that indent. */
export function blocks(page: string, text = readPage(page)): Block[] {
  const lines = text.split('\n')
  const out: Block[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^( *)(```+|~~~+)(.*)$/.exec(lines[i]!)
    if (!open) continue
    const [, indent, fence, info] = open
    const body: string[] = []
    let j = i + 1
    for (; j < lines.length; j++) {
      const line = lines[j]!
      const t = line.trim()
      if (t.startsWith(fence!) && /^(`+|~+)$/.test(t)) break
      body.push(line.startsWith(indent!) ? line.slice(indent!.length) : line.trimStart())
    }
    out.push({ page, line: i + 1, ...parseInfo(info!.trim()), body: body.join('\n') + '\n' })
    i = j
  }
  return out
}

/** The page's text with its fenced blocks and inline code blanked, so links and headings are read from the prose only. */
export function prose(text: string): string {
  const lines = text.split('\n')
  let fence: string | null = null
  return lines
    .map((line) => {
      const m = /^ *(```+|~~~+)/.exec(line)
      if (fence) {
        if (m && line.trim().startsWith(fence) && /^(`+|~+)$/.test(line.trim())) fence = null
        return ''
      }
      if (m) {
        fence = m[1]!
        return ''
      }
      return line.replace(/`[^`]*`/g, (code) => ' '.repeat(code.length))
    })
    .join('\n')
}

/** GitHub's anchor for a heading's text: lower case, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-')
}

/** The anchors a page's headings give, numbered as GitHub numbers repeats (`x`, `x-1`). */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  const lines = text.split('\n')
  let fence: string | null = null
  for (const line of lines) {
    const m = /^ *(```+|~~~+)/.exec(line)
    if (fence) {
      if (m && /^(`+|~+)$/.test(line.trim())) fence = null
      continue
    }
    if (m) {
      fence = m[1]!
      continue
    }
    const heading = /^#{1,6} (.+?)#*\s*$/.exec(line)
    if (!heading) continue
    // A link in a heading gives its text; the rest of the markup (`code`, **bold**) is punctuation the slug drops.
    const base = slug(heading[1]!.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1'))
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

/** Every inline link and image target of the prose, with its line. */
export function links(text: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = []
  prose(text)
    .split('\n')
    .forEach((line, i) => {
      for (const m of line.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) out.push({ target: m[1]!, line: i + 1 })
    })
  return out
}
