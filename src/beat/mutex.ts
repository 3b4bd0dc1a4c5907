// The AMQP mutex of aos-scheduler (`--ha mutex`): before sending run N of entry
// E, declare the exclusive queue `celery_beat_<E>_<N>.mutex`. RabbitMQ lets
// only one connection own it; another beat's declare fails with 405
// RESOURCE_LOCKED (a BrokerRequestError from the transport), and that beat
// skips the run. A beat that dies holding it loses it with its connection.
import { BrokerRequestError, type Transport } from '../transport/index.js'

export function mutexQueueName(entry: string, runCount: number): string {
  return `celery_beat_${entry}_${runCount}.mutex`
}

export class AmqpMutex {
  constructor(private readonly transport: Transport) {}

  /** Returns a release function if this beat won run `runCount`, else null. */
  async tryLock(entry: string, runCount: number): Promise<(() => Promise<void>) | null> {
    const name = mutexQueueName(entry, runCount)
    try {
      await this.transport.declareQueue({ name, durable: false, exclusive: true, autoDelete: false })
    } catch (error) {
      if (error instanceof BrokerRequestError && error.code === 'RESOURCE_LOCKED') return null
      throw error
    }
    return async () => {
      await this.transport.deleteQueue(name).catch(() => undefined)
    }
  }
}
