import { startSentinelCluster } from '../test/helpers/sentinel-cluster.ts'
import { createTransport } from '../src/transport/index.ts'
const c = await startSentinelCluster('/tmp/sent-smoke/c' + process.pid)
try {
  console.log('cluster', c.url(), await c.masterPort())
  const t = await createTransport(c.url(), { sentinel: { masterName: 'mymaster' } })
  t.on('connection:lost', (e) => console.log('lost', e.message))
  t.on('connection:restored', () => console.log('restored'))
  await t.connect()
  await t.declareQueue({ name: 'q1', durable: true, exclusive: false, autoDelete: false })
  let got = 0
  await t.consume('q1', async (d) => { got++; await d.ack() }, { prefetch: 4 })
  for (let i = 0; i < 100; i++) await t.publish('', 'q1', { body: Buffer.from('x'), properties: { contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, deliveryMode: 2, priority: 0 } } as any)
  await new Promise((r) => setTimeout(r, 1000))
  console.log('got', got)
  const f = await c.failover()
  console.log('failover', f)
  for (let i = 0; i < 100; i++) await t.publish('', 'q1', { body: Buffer.from('x'), properties: { contentType: 'text/plain', contentEncoding: 'utf-8', headers: {}, deliveryMode: 2, priority: 0 } } as any)
  await new Promise((r) => setTimeout(r, 3000))
  console.log('got', got)
  await t.close()
  const bad = await createTransport(c.url(), { sentinel: { masterName: 'nope' } })
  await bad.connect().catch((e) => console.log('bad:', e.message))
} finally { await c.stop() }
