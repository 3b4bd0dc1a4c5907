// tsq-test: slow 3
// Interop with Python Celery 5.2.6 over RabbitMQ: tsq's remote control (inspect, control) and
// task calls against a real Celery worker, compared case by case (helpers/inspect-control-suite.ts).
import { inspectControlSuite } from './helpers/inspect-control-suite.js'

await inspectControlSuite('amqp')
