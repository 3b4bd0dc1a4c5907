// The dashboard's route table (src/dashboard/routes.ts): no row is shadowed
// by an earlier one, every endpoint of Flower's API docs/dashboard.md lists is in it
// with its method, every API path the pages call (web/*.js) has a row, and
// a pattern's name is taken whole, decoded, and never empty.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { paramOf, ROUTES, RouteTable, takes } from '../../../src/dashboard/routes.js'

const table = new RouteTable()
const sample = (pattern: string): string => pattern.replace(/:[a-z]+$/, 'x').replace(/\*$/, 'x')

describe("the dashboard's route table", () => {
  it('every row is reached by its own paths: no earlier row shadows it, no pattern is listed twice', () => {
    for (const route of ROUTES) assert.equal(table.match(sample(route.path))?.route, route, route.path)
    assert.equal(new Set(ROUTES.map((r) => r.path)).size, ROUTES.length)
  })

  it("every endpoint of Flower's API docs/dashboard.md lists is answered with its method", () => {
    const readme = readFileSync(new URL('../../../docs/dashboard.md', import.meta.url), 'utf8')
    const section = readme.slice(readme.indexOf("**Flower's REST API**"), readme.indexOf('**`GET /metrics`**'))
    const listed = [...section.replace(/\s+/g, ' ').matchAll(/`(GET|POST) (\/[^`]+)`/g)]
    assert.ok(listed.length >= 13, `the page's list was read (${listed.length})`)
    for (const [, method, pattern] of listed) {
      const braces = /\{([^}]+)\}/.exec(pattern!)
      const paths = braces ? braces[1]!.split(',').map((alt) => pattern!.replace(braces[0], alt)) : [pattern!]
      for (const path of paths.map((p) => p.replace(/<[a-z]+>/, 'x'))) {
        const matched = table.match(path)
        assert.ok(matched && takes(matched.route, method!), `${method} ${path}`)
      }
    }
  })

  it('every API path the pages call has a row', () => {
    const web = new URL('../../../src/dashboard/web/', import.meta.url)
    const pages = readdirSync(web)
      .filter((name) => name.endsWith('.js'))
      .map((name) => readFileSync(new URL(name, web), 'utf8'))
    const called = new Set(pages.flatMap((page) => [...page.matchAll(/[`'](\/api\/[^`'?$]*)/g)].map((m) => m[1]!)))
    assert.ok(called.size >= 10, `the pages' calls were read (${called.size})`)
    for (const path of called) assert.ok(table.match(path.endsWith('/') ? `${path}x` : path), path)
  })

  it("a name is the rest of the path, decoded; an empty one is no match; a malformed escape is the client's error", () => {
    const matched = table.match('/api/worker/pool/grow/celery%40host%2Fa')!
    assert.equal(matched.route.path, '/api/worker/pool/grow/:name')
    assert.equal(paramOf(matched), 'celery@host/a')
    assert.equal(table.match('/api/task/info/'), null)
    assert.equal(paramOf(table.match('/static/%2e%2e')!), '%2e%2e', 'a `*` rest is given as written')
    assert.throws(
      () => paramOf(table.match('/api/task/info/%E0%A4%A')!),
      (e: { status?: number }) => e.status === 400,
    )
  })

  it('GET rows answer HEAD; POST rows only POST; the health check any method', () => {
    const route = (path: string) => table.match(path)!.route
    assert.ok(takes(route('/api/tasks'), 'HEAD') && !takes(route('/api/tasks'), 'POST'))
    assert.ok(takes(route('/api/task/revoke/x'), 'POST') && !takes(route('/api/task/revoke/x'), 'GET'))
    assert.ok(takes(route('/healthcheck'), 'DELETE') && route('/healthcheck').open)
  })
})
