// Where publishes go: on the transport's connection, or with separatePublisher
// (a worker) on a connection of their own, as kombu keeps its producer pool
// apart from the consumer's connection: RabbitMQ's alarms block a connection
// once it publishes, and a blocked connection reads no frame at all, acks and
// declarations included. One confirm channel for confirmed publishes, and on
// the publishing connection one channel for casts.
import type { Channel, ChannelModel, ConfirmChannel } from 'amqplib'
import { ChannelSlot } from './channel-slot.js'
import type { BlockedConnections } from './connection/blocked.js'
import type { AmqpConnectSettings } from './connection/connect-options.js'
import { watchHeartbeats } from './connection/heartbeat.js'
import { openAmqpConnection } from './connection/open-connection.js'

export interface PublishChannelsHost {
  readonly separatePublisher: boolean
  /** The transport's connection name; the publishing connection is `<it>-publish`. */
  readonly connectionName: string
  readonly blocked: BlockedConnections
  /** The node in use, for the publishing connection. */
  node(): AmqpConnectSettings
  /** The transport's closed error once it closed, else null. */
  closedError(): Error | null
}

export class PublishChannels {
  /** Confirmed publishes; once open (`ready`), a publish on it needs no await. */
  readonly confirm = new ChannelSlot<ConfirmChannel>()
  /** Unconfirmed publishes (control casts, replies) on the publishing connection. */
  private readonly cast = new ChannelSlot<Channel>()
  /** The publishing connection, with separatePublisher; opened on the first publish. */
  private readonly publisher = new ChannelSlot<ChannelModel>()
  /** The broker's reason a channel closed, read by publishes whose confirm failed. */
  private readonly closeErrors = new WeakMap<Channel, Error>()

  constructor(private readonly host: PublishChannelsHost) {}

  /** The connection publishes go on: `conn` itself, or with separatePublisher one of their own, opened on first use. */
  connectionFor(conn: ChannelModel): Promise<ChannelModel> {
    if (!this.host.separatePublisher) return Promise.resolve(conn)
    return this.publisher.get(() =>
      openAmqpConnection(this.host.node(), `${this.host.connectionName}-publish`).then((pc) => {
        pc.on('error', () => undefined)
        watchHeartbeats(pc, this.host.node().heartbeatCheckrate)
        pc.on('close', () => this.host.blocked.forget(pc))
        this.host.blocked.watch(pc)
        const closed = this.host.closedError()
        if (closed) {
          void pc.close().catch(() => undefined)
          throw closed
        }
        return pc
      }),
    )
  }

  castChannelFor(conn: ChannelModel): Promise<Channel> {
    return this.cast.get(() =>
      this.connectionFor(conn)
        .then((pc) => pc.createChannel())
        .then(quiet),
    )
  }

  confirmChannelFor(conn: ChannelModel): Promise<ConfirmChannel> {
    return this.confirm.get(() =>
      this.connectionFor(conn)
        .then((pc) => pc.createConfirmChannel())
        .then((ch) => {
          ch.on('error', (err: Error) => this.closeErrors.set(ch, err))
          return ch
        }),
    )
  }

  /** Why `channel` closed, as the broker said it, if it did. */
  closeErrorOf(channel: Channel): Error | undefined {
    return this.closeErrors.get(channel)
  }

  /** The transport's connection is gone: a confirm channel on it goes too; the publishing connection's outlive it. */
  connectionLost(): void {
    if (!this.host.separatePublisher) this.confirm.reset()
  }

  /** Forgets every channel; the publishing connection, if one was opened, is the caller's to close. */
  close(): Promise<ChannelModel> | null {
    const publisher = this.publisher.current
    this.confirm.reset()
    this.cast.reset()
    this.publisher.reset()
    return publisher
  }
}

/** A channel whose errors are read from its close and the operation that failed, not from an 'error' event. */
export function quiet<C extends Channel>(ch: C): C {
  ch.on('error', () => undefined)
  return ch
}
