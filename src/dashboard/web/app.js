// The dashboard's pages: ES modules (this one: the router; live.js: the
// page's embedded state and the event stream; workers.js, tasks.js,
// charts.js, features.js, failed.js: the pages; lib.js: what they build with), no
// framework, no build step. Every value that came from a worker, a task or a
// user goes into the page as a text node (lib.js's h() never parses HTML), so
// a task whose args hold <script> shows text.
// A page draws the rows its first response carried before it asks for
// anything; live updates come from the server's event stream, and a page
// reloads only the one page of rows it shows, never the whole table.
import { overviewPage, queuesPage } from './charts.js'
import { failedPage } from './failed.js'
import { archivePage, locksPage, schedulePage } from './features.js'
import { api, h, leavePage, main } from './lib.js'
import { connectStream, forgetInitial, listeners, pagePath } from './live.js'
import { taskPage, tasksPage } from './tasks.js'
import { workerPage, workersPage } from './workers.js'

// ---- router ------------------------------------------------------------------

function route() {
  leavePage()
  listeners.clear()
  const path = pagePath()
  for (const a of document.querySelectorAll('header nav a')) a.classList.toggle('active', path.startsWith(`/${a.dataset.page}`))
  main.replaceChildren()
  let page
  if (path.startsWith('/worker/')) page = workerPage(decodeURIComponent(path.slice(8)))
  else if (path.startsWith('/task/')) page = taskPage(decodeURIComponent(path.slice(6)))
  else if (path === '/tasks') page = tasksPage()
  else if (path === '/queues' || path === '/broker') page = queuesPage()
  else if (path === '/overview') page = overviewPage()
  else if (path === '/failed') page = failedPage()
  else if (path === '/archive') page = archivePage()
  else if (path === '/locks') page = locksPage()
  else if (path === '/schedule') page = schedulePage()
  else page = workersPage()
  // A page takes its embedded rows before it awaits anything; a page opened later asks for its own.
  forgetInitial()
  Promise.resolve(page).catch((error) => main.replaceChildren(h('p', { class: 'offline' }, `Could not load: ${error.message}`)))
}

document.addEventListener('click', (e) => {
  const a = e.target.closest('a[data-nav], a[data-link]')
  if (!a || e.ctrlKey || e.metaKey || e.shiftKey) return
  e.preventDefault()
  history.pushState(null, '', a.getAttribute('href'))
  route()
})
window.addEventListener('popstate', route)

/** The nav shows a feature's page only where the feature is present. */
async function showFeatures() {
  const present = await api('/api/ui/features').catch(() => ({}))
  for (const a of document.querySelectorAll('header nav a[data-feature]')) a.hidden = !present[a.dataset.feature]
}

connectStream()
void showFeatures()
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', route)
else route()
