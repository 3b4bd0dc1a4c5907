// Task locks on RabbitMQ: the amqp:// lock store (an exclusive
// queue per held lock) that the broker chooses, fencing tokens counted in the
// Redis result backend (db 8), where the tasks also record their runs. The
// shared suite: test/helpers/locks-suite.ts.
import { AMQP_URL, brokerSkipReason, REDIS_URL } from '../helpers/brokers.js'
import { lockSuite } from '../helpers/locks-suite.js'

const skip = (await brokerSkipReason('amqp')) || (await brokerSkipReason('redis'))
lockSuite({ kind: 'amqp', broker: AMQP_URL, redisUrl: REDIS_URL.replace(/\/\d*$/, '/8'), skip, downUrl: 'amqp://127.0.0.1:1/' })
