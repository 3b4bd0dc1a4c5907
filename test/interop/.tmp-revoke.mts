import { startPythonWorker, runCelery, runPyScript } from './helpers/python-worker.ts'
const peer = { broker: 'redis://127.0.0.1:6379/0', backend: 'redis://127.0.0.1:6379/1', queue: 'tsq-interop-rv-' + process.pid }
const w = await startPythonWorker({ peer })
try {
  const c = await runCelery(['call', 'proj.sleep', '--args', '[30]', '--queue', peer.queue], peer)
  const id = c.stdout.trim()
  for (let i = 0; i < 30; i++) { const r = await runCelery(['inspect', 'query_task', id, '-d', w.nodename, '--json'], peer); if (r.stdout.includes('active')) break }
  const r = await runCelery(['control', 'terminate', 'SIGTERM', id, '-d', w.nodename, '--json'], peer)
  console.log(r.stdout)
  console.log((await runPyScript('result_state.py', [id, '20'], peer)).stdout)
} finally { await w.stop() }
