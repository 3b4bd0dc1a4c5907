// tsq-test: slow 3 (three RabbitMQ nodes of its own; started first so the other lanes run beside it)
// tsq over a 3-node RabbitMQ cluster with quorum queues: ETA tasks wait in the broker's delayed
// delivery, survive a worker restart and run at their time (helpers/rabbitmq-cluster-suite.ts).
import { rabbitClusterSuite } from './helpers/rabbitmq-cluster-suite.js'

rabbitClusterSuite('eta')
