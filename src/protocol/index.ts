// Public names of the protocol layer (pure: no I/O; from node: only crypto's
// sign and verify, for the auth serializer, keys passed in). Every other layer
// imports it here.

// Names, ids, dates, errors and masking, shared by what follows.
export {
  TsqError,
  codedError,
  isTsqError,
  ExitCode,
  exitCodeOfCode,
  exitCodesByErrorCode,
  ProtocolError,
  MalformedMessageError,
  UnsupportedContentTypeError,
  NodeTemplateError,
  EncodeError,
} from './errors.js'
export type { ExitCodeValue } from './errors.js'
export { MissingPackageError, importOptional, isPackageNotFound } from './optional-package.js'
export { formatIsoDate, parseIsoDate } from './iso-date.js'
export { uuid4 } from './uuid.js'
export {
  NODENAME_SEP,
  NODENAME_DEFAULT,
  nodeSplit,
  defaultNodename,
  anonNodename,
  hostFormat,
  workerNodename,
  nodeFormat,
  multiExpand,
} from './nodenames.js'
export {
  HIDDEN_SETTINGS,
  SETTING_MASK,
  URL_MASK,
  maskUrl,
  maskUrlsInText,
  urlHasSecret,
  maskSetting,
  filterHiddenSettings,
  shownSetting,
  escapeControl,
  escapeControlKeepLines,
  taskLabel,
} from './secrets.js'
export { didYouMean, editDistance, nearestNames } from './suggest.js'
export { escapeSegment, unescapeSegment, isContainedSegment, PathNameError, MAX_SEGMENT } from './path-segment.js'
export type { SegmentAlphabet } from './path-segment.js'

// codecs/: how values are written and read: kombu's JSON, Python's repr and
// pformat, plain pickle, the serializer registry and signed bodies (auth), and
// the size and depth limits checked before a parse.
export { PyFloat, PyTuple, comparePyStr, formatPyFloat, formatPyNumber } from './codecs/py-types.js'
export { dumps, loads, quoteJsonString, isoformatUtc } from './codecs/kombu-json.js'
export type { LoadsOptions } from './codecs/kombu-json.js'
export { pyRepr, pyStr, pyStrRepr, pyBytesRepr, saferepr, argsRepr, kwargsRepr, REPR_MAXSIZE } from './codecs/python-repr.js'
export { readFlatDictRepr } from './codecs/python-literal.js'
export {
  SERIALIZERS,
  TRUSTED_CONTENT,
  acceptContent,
  serialize,
  deserialize,
  serializerSpec,
  ContentDisallowedError,
  PickleRefusedError,
  UnknownSerializerError,
} from './codecs/serializers.js'
export type { SerializerName, SerializerSpec, Serialized } from './codecs/serializers.js'
export { SecurityError, certificateId, storeCertificate, digestName, signAndPack, unpackAndVerify } from './codecs/auth.js'
export type { CertStore, StoreCertificate, Signer, InnerBody } from './codecs/auth.js'
export { encodeBody, decodeBody } from './codecs/message-body.js'
export {
  DEFAULT_MAX_DEPTH,
  DEFAULT_MAX_BYTES,
  DEFAULT_MESSAGE_LIMITS,
  YAML_MAX_DEPTH,
  MessageLimitError,
  jsonDepthExceeds,
  checkJsonText,
  yamlDepthBound,
  valueLimitExceeded,
  checkJsonDepth,
  checkYamlDepth,
  checkValueLimits,
  depthError,
  sizeError,
  limitSetting,
} from './codecs/limits.js'
export type { MessageLimits } from './codecs/limits.js'
export type { BodyEncoder, BodyDecoder } from './codecs/message-body.js'
export { loadsPickle, loadsGroupPickle } from './codecs/plain-pickle.js'
export { PickleCall, dumpsPickle, dumpsGroupPickle } from './codecs/plain-pickle-writer.js'
export {
  PickleValueRefusedError,
  MAX_PICKLE_DEPTH,
  MAX_PICKLE_VALUES,
  MAX_PICKLE_CHARS,
  MAX_PICKLE_BYTES,
  MAX_PICKLE_INT_BYTES,
  MAX_PICKLE_INT_DIGITS,
} from './codecs/plain-pickle-limits.js'
export { pformat } from './codecs/pformat.js'

// messages/: Celery's messages: tasks (protocol v2) and the canvas they carry, results and chord parts,
// remote-control requests and replies (and the command table), events.
export {
  EventLimitError,
  checkEventText,
  checkEventValue,
  MAX_EVENT_DEPTH,
  MAX_EVENT_BODY,
  MAX_EVENT_VALUES,
} from './messages/event-limits.js'
export { encodeTaskV2, encodeTaskV2With, decodeTaskMessage } from './messages/task-message.js'
export {
  TRACEPARENT,
  TRACESTATE,
  BAGGAGE,
  SENT_AT,
  ATTR as TRACE_ATTR,
  formatTraceparent,
  parseTraceparent,
  parseBaggage,
  formatBaggage,
  producerAttributes,
  consumerAttributes,
  producerSpanName,
  consumerSpanName,
  sentAtNow,
  queueWaitSeconds,
} from './messages/trace-headers.js'
export type { TraceParent, BaggageItem, TraceAttributes, RunRequest } from './messages/trace-headers.js'
export {
  signature,
  canvasKind,
  signatureList,
  tasksOf,
  chordBody,
  chordHeader,
  chordHeaderOptions,
  argsWith,
  chainEmbed,
  unrollHeader,
  withResultTask,
  resultTaskKind,
  withErrbacks,
  chainStepsWithOptions,
  accumulatingChord,
  frozenStep,
} from './messages/canvas.js'
export type { Signature, CanvasKind, FrozenResult, ResultOf } from './messages/canvas.js'
export type {
  TaskEmbed,
  TaskSendOptions,
  EncodedMessage,
  SerializedTaskMessage,
  TaskRequest,
  TaskMessageInput,
} from './messages/task-message.js'
export {
  States,
  READY_STATES,
  UNREADY_STATES,
  EXCEPTION_STATES,
  PROPAGATE_STATES,
  statePrecedence,
  encodeException,
  jsErrorName,
  isExceptionInfo,
  exceptionRepr,
  exceptionText,
  encodeResultMeta,
  encodeRpcResult,
  resultMetaValue,
  rpcResultValue,
  decodeResultMeta,
  resultMetaFrom,
  describeResult,
  encodeChordPart,
  joinChordParts,
  resultTuple,
  resultFromTuple,
  resultTreeTaskIds,
  joinResultTree,
} from './messages/result.js'
export type {
  StateName,
  TaskState,
  ExceptionInfo,
  ExtendedResultFields,
  ResultMetaInput,
  RpcResultInput,
  ResultMeta,
  ChordJoin,
  ResultNode,
} from './messages/result.js'
export {
  encodeControlRequest,
  decodeControlRequest,
  controlRequestHeaders,
  controlReplyHeaders,
  fnmatchToRegExp,
  matchPattern,
  matchesDestination,
  encodeControlReply,
  decodeControlReply,
} from './messages/control.js'
export type { ControlRequest, ControlReplyTo } from './messages/control.js'
export {
  buildEvent,
  eventRoutingKey,
  eventGroup,
  batchRoutingKey,
  utcoffsetHours,
  roundLoadavg,
  WORKER_SW,
  workerSoftware,
  workerEventFields,
  EVENT_FIELDS,
  orderEventFields,
  encodeEvent,
  encodeEventBatch,
  decodeEvents,
  dumpEventLine,
  utcTimestampText,
  heartbeatExpires,
} from './messages/events.js'
export type { EventBase, WorkerSoftware } from './messages/events.js'
export * from './messages/control-commands.js'
