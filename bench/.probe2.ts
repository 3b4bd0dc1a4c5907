import { createApp } from '/work/wt/send/src/index.js'
const url = process.argv[3] ?? 'amqp://guest:guest@127.0.0.1:5672/tsq-wt-send'
const N = Number(process.argv[2] ?? 10000)
const app = createApp({ broker: url, defaultQueue: 'probe-q2' })
const noop = app.task('proj.noop', () => undefined)
await noop.delay(0)
let t = performance.now()
let next = 0
await Promise.all(Array.from({ length: 1000 }, async () => { while (next < N) await noop.delay(next++) }))
console.log('tsq in-flight', Math.round(N / (performance.now() - t) * 1000))
const tr = await app.transport(); await tr.deleteQueue('probe-q2')
await app.close()
