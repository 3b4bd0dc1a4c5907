// Task locks on Redis (broker and lock store, db 8): the shared suite (test/helpers/locks-suite.ts).
import { brokerSkipReason, REDIS_URL } from '../helpers/brokers.js'
import { lockSuite } from '../helpers/locks-suite.js'

const url = REDIS_URL.replace(/\/\d*$/, '/8')
lockSuite({ kind: 'redis', broker: url, redisUrl: url, skip: await brokerSkipReason('redis'), downUrl: 'redis://127.0.0.1:1/0' })
