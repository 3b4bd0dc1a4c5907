// Protocol errors: a message tsq cannot read is the sender's fault, so the
// worker rejects it without requeue; the code says which rule it broke.

export class ProtocolError extends Error {
  readonly code: string
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.name = new.target.name
  }
}

/** A message that cannot be decoded: bad JSON, missing id/task, wrong types, bad dates. */
export class MalformedMessageError extends ProtocolError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('MALFORMED_MESSAGE', message, options)
  }
}

/**
 * A content type tsq does not accept (not in accept_content, which is JSON
 * alone by default, as in Celery). A subclass so callers that reject malformed
 * messages treat it the same way.
 */
export class UnsupportedContentTypeError extends MalformedMessageError {
  override readonly code: string = 'UNSUPPORTED_CONTENT_TYPE'
  readonly contentType: string
  constructor(contentType: string) {
    super(`content type ${JSON.stringify(contentType)} is not accepted (only application/json)`)
    this.contentType = contentType
  }
}

/** An unknown %x key in a node-name or file template (Celery raises ValueError). */
export class NodeTemplateError extends ProtocolError {
  constructor(message: string) {
    super('NODE_TEMPLATE', message)
  }
}

/**
 * A value kombu's JSON cannot carry (a function, a circular structure, bytes):
 * kombu.exceptions.EncodeError. `reason` is the cause as Python shows it,
 * `TypeError('Object of type function is not JSON serializable')`, which is
 * what Celery stores as the EncodeError's argument.
 */
export class EncodeError extends ProtocolError {
  readonly reason: string
  constructor(cause: unknown) {
    const message = cause instanceof Error ? cause.message : String(cause)
    super('ENCODE', message, { cause })
    this.reason = pythonReason(cause, message)
  }
}

function pythonReason(cause: unknown, message: string): string {
  if (cause instanceof RangeError) return "RecursionError('maximum recursion depth exceeded while encoding a JSON object')"
  const type = cause instanceof Error && cause.name === 'OverflowError' ? 'OverflowError' : message === 'Circular reference detected' ? 'ValueError' : 'TypeError'
  return `${type}(${JSON.stringify(message).replace(/^"|"$/g, "'")})`
}
