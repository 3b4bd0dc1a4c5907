// What a page's first response carries: the rows its tables start with (the
// same views its own API calls answer), so the first paint shows the cluster
// and not an empty table waiting for a fetch or the live stream.
import type { Cluster } from './cluster.js'
import { HttpError, jsonText } from './http.js'
import { overviewView, summary, tasksView, workersView } from './views.js'

/** The tasks page's rows per page when its address names none (web/tasks.js's default). */
export const TASKS_PAGE_SIZE = 25

/**
 * The state for the page at `path` (below --url-prefix) with its query: the status line's summary,
 * and the rows of the workers, tasks, queues or overview page. A query the tasks API refuses (an
 * unknown sort key, a bad date) leaves the tasks out: the page asks and shows the refusal itself.
 */
export function initialState(cluster: Cluster, path: string, query: URLSearchParams): Record<string, unknown> {
  const state: Record<string, unknown> = { path, summary: summary(cluster) }
  if (path === '/' || path === '/workers') state.workers = workersView(cluster)
  else if (path === '/queues' || path === '/broker' || path === '/overview') state.overview = overviewView(cluster)
  else if (path === '/tasks') {
    const asked = new URLSearchParams(query)
    if (!asked.has('limit')) asked.set('limit', String(TASKS_PAGE_SIZE))
    try {
      state.tasks = tasksView(cluster, asked)
    } catch (error) {
      if (!(error instanceof HttpError)) throw error
    }
  }
  return state
}

/**
 * JSON for a `<script type="application/json">` block: every `<`, `>` and `&` escaped, so no value
 * (a task named `</script><script>...`) can end the block or open a comment; JSON.parse reads it back
 * unchanged.
 */
export function scriptJson(value: unknown): string {
  return jsonText(value).replace(/[<>&\u2028\u2029]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
