// An example task module: `tsq worker -A examples/tasks.js`; its tests,
// which need no broker, are examples/tasks.test.mjs.
import { createApp, currentTask } from 'tsq'

export const app = createApp({ name: 'proj' })

export const add = app.task('proj.add', (x, y) => x + y)

export const mul = app.task('proj.mul', (x, y) => x * y)

export const fail = app.task('proj.fail', (message) => {
  throw new TypeError(message)
})

export const sleep = app.task('proj.sleep', async (seconds) => {
  const { signal } = currentTask()
  await new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, seconds * 1000)
    signal.addEventListener('abort', () => {
      clearTimeout(timer)
      reject(signal.reason)
    })
  })
  return seconds
})

app.controlCommand('proj.hello', (args, worker) => ({ ok: `hello ${args.name ?? 'world'} from ${worker.hostname}` }), { kind: 'inspect' })
