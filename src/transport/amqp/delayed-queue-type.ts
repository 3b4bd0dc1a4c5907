// The queue type of the delayed-delivery ladder (delayed-delivery.ts says which
// to pick), apart from that file: the broker options that name it are part of
// the package's public declarations, which must not import amqplib's types (an
// install of tsq does not carry @types/amqplib).
export type DelayedQueueType = 'classic' | 'quorum'
