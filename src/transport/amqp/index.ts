// The AMQP driver's door for code outside transport/ that opens a connection
// of its own (the locks' AMQP store). Loaded only by what talks AMQP, so that
// importing transport/index.ts never loads amqplib.
export { amqpConnectSettings } from './connection/connect-options.js'
export type { AmqpConnectSettings, AmqpUrlSettings } from './connection/connect-options.js'
export { openAmqpConnection } from './connection/open-connection.js'
