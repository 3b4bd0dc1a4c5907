// The two amqplib internals tsq touches (see install-codec.ts); amqplib ships no types for them.
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
    encodeProperties(id: number, channel: number, size: number, fields: Record<string, unknown>): Buffer
  }
  export default defs
}
