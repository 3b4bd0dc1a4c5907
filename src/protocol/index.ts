// Public names of the protocol layer (pure: no I/O, nothing from node:).

export { ProtocolError, MalformedMessageError, UnsupportedContentTypeError, NodeTemplateError, EncodeError } from './errors.js'
export { PyFloat, PyTuple, comparePyStr, formatPyFloat, formatPyNumber } from './py-types.js'
export { dumps, loads, quoteJsonString, isoformatUtc } from './kombu-json.js'
export type { LoadsOptions } from './kombu-json.js'
export { pyRepr, pyStr, pyStrRepr, pyBytesRepr, saferepr, argsRepr, kwargsRepr, REPR_MAXSIZE } from './python-repr.js'
export { formatIsoDate, parseIsoDate } from './iso-date.js'
export { encodeTaskV2, decodeTaskMessage } from './task-message.js'
export type { Signature, TaskEmbed, TaskSendOptions, EncodedMessage, TaskRequest, TaskMessageInput } from './task-message.js'
export {
  States, READY_STATES, UNREADY_STATES, EXCEPTION_STATES, PROPAGATE_STATES, statePrecedence,
  encodeException, isExceptionInfo, exceptionRepr, exceptionText,
  encodeResultMeta, encodeRpcResult, decodeResultMeta, describeResult, encodeChordPart, joinChordParts,
} from './result.js'
export type { StateName, TaskState, ExceptionInfo, ExtendedResultFields, ResultMetaInput, RpcResultInput, ResultMeta, ChordJoin } from './result.js'
export {
  encodeControlRequest, decodeControlRequest, controlRequestHeaders, controlReplyHeaders,
  fnmatchToRegExp, matchPattern, matchesDestination, encodeControlReply, decodeControlReply,
} from './control.js'
export type { ControlRequest, ControlReplyTo } from './control.js'
export {
  buildEvent, eventRoutingKey, eventGroup, batchRoutingKey, utcoffsetHours, roundLoadavg,
  WORKER_SW, workerSoftware, workerEventFields, EVENT_FIELDS, orderEventFields,
  encodeEvent, encodeEventBatch, decodeEvents, dumpEventLine, utcTimestampText, heartbeatExpires,
} from './events.js'
export type { EventBase, WorkerSoftware } from './events.js'
export {
  NODENAME_SEP, NODENAME_DEFAULT, nodeSplit, defaultNodename, anonNodename,
  hostFormat, workerNodename, nodeFormat, multiExpand,
} from './nodenames.js'
export * from './control-commands.js'
