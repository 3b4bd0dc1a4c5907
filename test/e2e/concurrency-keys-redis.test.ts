// Concurrency per key, fair between keys, on Redis (broker and store, db 9):
// 10,000 of tenant A's tasks before B's 100, and a worker killed with -9. The
// shared suite: test/helpers/concurrency-suite.ts.
// tsq-test: slow 4
import { brokerSkipReason, REDIS_URL } from '../helpers/brokers.js'
import { concurrencySuite } from '../helpers/concurrency-suite.js'

const url = REDIS_URL.replace(/\/\d*$/, '/9')
concurrencySuite({ kind: 'redis', broker: url, redisUrl: url, skip: await brokerSkipReason('redis'), aTasks: 10_000, bTasks: 100 })
