// Concurrency per key, fair between keys, with RabbitMQ as the broker and the
// slots and backlogs in Redis (conf.lock_url, db 10): a parked message moves
// from RabbitMQ to Redis. 3,000 of tenant A's tasks before B's 100, and a
// worker killed with -9. The shared suite: test/helpers/concurrency-suite.ts.
// tsq-test: slow 3
import { AMQP_URL, brokerSkipReason, REDIS_URL } from '../helpers/brokers.js'
import { concurrencySuite } from '../helpers/concurrency-suite.js'

const skip = (await brokerSkipReason('amqp')) || (await brokerSkipReason('redis'))
const redisUrl = REDIS_URL.replace(/\/\d*$/, '/10')
concurrencySuite({ kind: 'amqp', broker: AMQP_URL, redisUrl, skip, aTasks: 3000, bTasks: 100 })
