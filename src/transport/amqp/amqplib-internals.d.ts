// The amqplib internals tsq touches (see install-codec.ts and topology.ts); amqplib ships no types for them.
declare module 'amqplib/lib/codec.js' {
  const codec: {
    encodeTable(buffer: Buffer, table: Record<string, unknown>, offset: number): number
    decodeFields(slice: Buffer): Record<string, unknown>
  }
  export default codec
}

declare module 'amqplib/lib/defs.js' {
  const defs: {
    BasicProperties: number
    BasicPublish: number
    ConnectionClose: number
    ConnectionTuneOk: number
    ExchangeDeclare: number
    QueueDeclare: number
    QueueBind: number
    encodeProperties(id: number, channel: number, size: number, fields: Record<string, unknown>): Buffer
    encodeMethod(id: number, channel: number, fields: Record<string, unknown>): Buffer
  }
  export default defs
}

// Field builders of amqplib's own declare/bind calls; used to send those methods with nowait (topology.ts).
declare module 'amqplib/lib/api_args.js' {
  type Fields = Record<string, unknown>
  const Args: {
    assertExchange(exchange: string, type: string, options?: Record<string, unknown>): Fields
    assertQueue(queue: string, options?: Record<string, unknown>): Fields
    bindQueue(queue: string, source: string, pattern: string, argt?: Record<string, unknown>): Fields
    publish(exchange: string, routingKey: string, options?: Record<string, unknown>): Fields
  }
  export default Args
}

// Connection#sendMessage, which tests hold publish-frames.ts's bytes against; open and sendMethod, wrapped by connection/heartbeat.ts.
declare module 'amqplib/lib/connection.js' {
  const connection: {
    Connection: {
      new (stream: unknown): unknown
      prototype: {
        sendMessage(
          this: unknown,
          channel: number,
          method: number,
          fields: object,
          properties: number,
          props: object,
          content: Buffer,
        ): void
      }
    }
  }
  export default connection
}

// The classes whose methods the tricks call (tricks/amqplib-pin.ts checks they are there).
declare module 'amqplib/lib/channel.js' {
  const channel: { Channel?: { prototype: object } }
  export default channel
}

declare module 'amqplib/lib/mux.js' {
  const mux: { Mux?: { prototype: object } }
  export default mux
}
