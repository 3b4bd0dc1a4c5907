// The state a dashboard page's first response carries (initial-state.ts):
// each list page gets the rows its own API call would answer, and the JSON is
// escaped for its <script> block, so a task whose name or args hold
// `</script><script>...` or `<!--` cannot end the block or run anything, and
// reads back unchanged.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Cluster } from '../../../src/dashboard/cluster.js'
import { initialState, scriptJson, TASKS_PAGE_SIZE } from '../../../src/dashboard/initial-state.js'
import { tasksView, workersView } from '../../../src/dashboard/views.js'

const HOSTILE_NAME = 'proj.</script><script>window.__xss = 1</script>'
const HOSTILE_ARGS = "('</SCRIPT ><!--', '<img src=x onerror=alert(1)>', '\u2028&amp;')"

function cluster(tasks = 3): Cluster {
  // Never started: no broker, the state fed its events directly.
  const c = new Cluster({ brokerUrl: 'memory://', maxTasks: 1000 })
  const now = Date.now() / 1000
  c.state.apply({ type: 'worker-online', hostname: 'tsq@h', timestamp: now, pid: 42, sw_ident: 'tsq', sw_ver: '1.0', freq: 2 })
  for (let i = 0; i < tasks; i++) {
    c.state.apply({
      type: 'task-received',
      uuid: `task-${i}`,
      name: i === 0 ? HOSTILE_NAME : 'proj.add',
      args: i === 0 ? HOSTILE_ARGS : `(${i}, 1)`,
      kwargs: '{}',
      hostname: 'tsq@h',
      timestamp: now + i,
      clock: i + 1,
    })
  }
  return c
}

describe("a dashboard page's embedded state", () => {
  it('the workers page gets the rows /api/ui/workers answers, and every page the summary', () => {
    const c = cluster()
    for (const path of ['/', '/workers']) {
      const state = initialState(c, path, new URLSearchParams())
      assert.deepEqual(state.workers, workersView(c))
      assert.equal((state.summary as { workers: number }).workers, 1)
    }
    const other = initialState(c, '/task/x', new URLSearchParams())
    assert.deepEqual(Object.keys(other).sort(), ['path', 'summary'])
  })

  it("the tasks page gets its address's query, TASKS_PAGE_SIZE rows a page where it names no limit", () => {
    const c = cluster(TASKS_PAGE_SIZE + 5)
    const all = initialState(c, '/tasks', new URLSearchParams()).tasks as { rows: unknown[]; filtered: number }
    assert.equal(all.rows.length, TASKS_PAGE_SIZE)
    assert.equal(all.filtered, TASKS_PAGE_SIZE + 5)
    const query = new URLSearchParams({ limit: '10', offset: '2', sort_by: 'name' })
    assert.deepEqual(initialState(c, '/tasks', query).tasks, tasksView(c, query))
  })

  it('a query the tasks API refuses leaves the rows out (the page asks, and shows the refusal)', () => {
    const state = initialState(cluster(), '/tasks', new URLSearchParams({ sort_by: 'nope' }))
    assert.equal(state.tasks, undefined)
    assert.ok(state.summary)
  })

  it('a hostile task name and args cannot close the block or open a comment, and read back unchanged', () => {
    const state = initialState(cluster(), '/tasks', new URLSearchParams())
    const text = scriptJson(state)
    assert.doesNotMatch(text, /[<>&\u2028\u2029]/)
    const html = `<script type="application/json" id="tsq-initial">${text}</script>`
    assert.equal(html.match(/<\/script/gi)?.length, 1, 'only the block ends it')
    const back = JSON.parse(text) as typeof state
    assert.deepEqual(back, JSON.parse(JSON.stringify(state)))
    const rows = (back.tasks as { rows: { name: string; args: string }[] }).rows
    assert.ok(rows.some((r) => r.name === HOSTILE_NAME && r.args === HOSTILE_ARGS))
  })
})
