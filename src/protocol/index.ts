// Public names of the protocol layer (pure: no I/O; from node: only crypto's
// sign and verify, for the auth serializer, keys passed in).

export { ProtocolError, MalformedMessageError, UnsupportedContentTypeError, NodeTemplateError, EncodeError } from './errors.js'
export { EventLimitError, checkEventText, checkEventValue, MAX_EVENT_DEPTH, MAX_EVENT_BODY, MAX_EVENT_VALUES } from './event-limits.js'
export { PyFloat, PyTuple, comparePyStr, formatPyFloat, formatPyNumber } from './py-types.js'
export { dumps, loads, quoteJsonString, isoformatUtc } from './kombu-json.js'
export type { LoadsOptions } from './kombu-json.js'
export { pyRepr, pyStr, pyStrRepr, pyBytesRepr, saferepr, argsRepr, kwargsRepr, REPR_MAXSIZE } from './python-repr.js'
export { formatIsoDate, parseIsoDate } from './iso-date.js'
export { uuid4 } from './uuid.js'
export { encodeTaskV2, encodeTaskV2With, decodeTaskMessage } from './task-message.js'
export type { Signature, TaskEmbed, TaskSendOptions, EncodedMessage, SerializedTaskMessage, TaskRequest, TaskMessageInput } from './task-message.js'
export { SERIALIZERS, TRUSTED_CONTENT, acceptContent, serialize, deserialize, serializerSpec, ContentDisallowedError, PickleRefusedError, UnknownSerializerError } from './serializers.js'
export type { SerializerName, SerializerSpec, Serialized } from './serializers.js'
export { SecurityError, certificateId, storeCertificate, digestName, signAndPack, unpackAndVerify } from './auth.js'
export type { CertStore, StoreCertificate, Signer, InnerBody } from './auth.js'
export { encodeBody, decodeBody } from './message-body.js'
export {
  DEFAULT_MAX_DEPTH, DEFAULT_MAX_BYTES, DEFAULT_MESSAGE_LIMITS, YAML_MAX_DEPTH, MessageLimitError,
  jsonDepthExceeds, checkJsonText, yamlDepthBound, valueLimitExceeded, checkJsonDepth, checkYamlDepth, checkValueLimits, depthError, sizeError, limitSetting,
} from './limits.js'
export type { MessageLimits } from './limits.js'
export type { BodyEncoder, BodyDecoder } from './message-body.js'
export {
  States, READY_STATES, UNREADY_STATES, EXCEPTION_STATES, PROPAGATE_STATES, statePrecedence,
  encodeException, isExceptionInfo, exceptionRepr, exceptionText,
  encodeResultMeta, encodeRpcResult, resultMetaValue, rpcResultValue, decodeResultMeta, resultMetaFrom, describeResult, encodeChordPart, joinChordParts,
  resultTuple, resultFromTuple, resultTreeTaskIds, joinResultTree,
} from './result.js'
export type { StateName, TaskState, ExceptionInfo, ExtendedResultFields, ResultMetaInput, RpcResultInput, ResultMeta, ChordJoin, ResultNode } from './result.js'
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
export { PickleCall, PickleValueRefusedError, dumpsPickle, loadsPickle, dumpsGroupPickle, loadsGroupPickle, MAX_PICKLE_DEPTH, MAX_PICKLE_VALUES, MAX_PICKLE_CHARS, MAX_PICKLE_BYTES, MAX_PICKLE_INT_BYTES, MAX_PICKLE_INT_DIGITS } from './plain-pickle.js'
export { HIDDEN_SETTINGS, SETTING_MASK, URL_MASK, maskUrl, maskUrlsInText, urlHasSecret, maskSetting, filterHiddenSettings, shownSetting, escapeControl, escapeControlKeepLines, taskLabel } from './secrets.js'
export { escapeSegment, unescapeSegment, isContainedSegment, PathNameError, MAX_SEGMENT } from './path-segment.js'
export type { SegmentAlphabet } from './path-segment.js'
