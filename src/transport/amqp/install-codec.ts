// Puts tsq's field-table codec (field-table.ts says why) into amqplib. amqplib's
// frame codec (lib/defs.js) copies the two table functions from lib/codec.js
// when it loads, so they must be replaced before anything loads amqplib itself:
// amqplib.ts imports this module first, and checks that it took.
import codec from 'amqplib/lib/codec.js'
import { decodeFields, encodeTable } from './field-table.js'

codec.encodeTable = encodeTable
codec.decodeFields = decodeFields
