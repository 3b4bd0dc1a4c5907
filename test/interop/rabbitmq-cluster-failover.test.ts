// tsq-test: slow 4 (three RabbitMQ nodes of its own; started first so the other lanes run beside it)
// tsq over a 3-node RabbitMQ cluster with quorum queues and the failover list: 5,000 tasks through two
// tsq workers and a Celery 5.2.6 worker survive the stop of the node they are connected to, then of
// the queue leader's node (helpers/rabbitmq-cluster-suite.ts).
import { rabbitClusterSuite } from './helpers/rabbitmq-cluster-suite.js'

rabbitClusterSuite('failover')
