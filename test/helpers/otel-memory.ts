// A tracer provider that keeps its ended spans in memory, written against
// @opentelemetry/api alone (what a user's SDK does, reduced to what the tests
// read): name, kind, ids, parent, attributes, links, status, events. With
// `file`, each ended span is also appended there as a JSON line, so a test can
// read the spans of a worker's pool slots (other threads and processes).
import { appendFileSync, existsSync, readFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { AsyncLocalStorage } from 'node:async_hooks'
import * as api from '@opentelemetry/api'

export interface RecordedSpan {
  name: string
  kind: number
  traceId: string
  spanId: string
  parentSpanId: string | null
  attributes: Record<string, unknown>
  links: Array<{ traceId: string; spanId: string }>
  status: { code: number; message?: string }
  events: string[]
  pid: number
}

class MemorySpan implements api.Span {
  readonly record: RecordedSpan
  private ended = false
  constructor(
    private readonly sc: api.SpanContext,
    name: string,
    options: api.SpanOptions,
    parent: api.SpanContext | undefined,
    private readonly onEnd: (s: RecordedSpan) => void,
  ) {
    this.record = {
      name,
      kind: options.kind ?? api.SpanKind.INTERNAL,
      traceId: sc.traceId,
      spanId: sc.spanId,
      parentSpanId: parent?.spanId ?? null,
      attributes: { ...(options.attributes ?? {}) },
      links: (options.links ?? []).map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
      status: { code: api.SpanStatusCode.UNSET },
      events: [],
      pid: process.pid,
    }
  }
  spanContext(): api.SpanContext {
    return this.sc
  }
  setAttribute(key: string, value: api.SpanAttributeValue): this {
    this.record.attributes[key] = value
    return this
  }
  setAttributes(attributes: api.SpanAttributes): this {
    Object.assign(this.record.attributes, attributes)
    return this
  }
  addEvent(name: string): this {
    this.record.events.push(name)
    return this
  }
  addLink(link: api.Link): this {
    this.record.links.push({ traceId: link.context.traceId, spanId: link.context.spanId })
    return this
  }
  addLinks(links: api.Link[]): this {
    for (const l of links) this.addLink(l)
    return this
  }
  setStatus(status: api.SpanStatus): this {
    this.record.status = { ...status }
    return this
  }
  updateName(name: string): this {
    this.record.name = name
    return this
  }
  end(): void {
    if (this.ended) return
    this.ended = true
    this.onEnd(this.record)
  }
  isRecording(): boolean {
    return !this.ended
  }
  recordException(exception: api.Exception): void {
    const e = exception as { name?: string; message?: string }
    this.record.events.push(`exception:${e.name ?? ''}:${e.message ?? ''}`)
  }
}

export class MemoryTracerProvider implements api.TracerProvider {
  readonly spans: RecordedSpan[] = []
  constructor(private readonly file?: string) {}

  getTracer(): api.Tracer {
    const onEnd = (s: RecordedSpan) => {
      this.spans.push(s)
      if (this.file) appendFileSync(this.file, `${JSON.stringify(s)}\n`)
    }
    const startSpan = (name: string, options: api.SpanOptions = {}, ctx: api.Context = api.context.active()): api.Span => {
      const parent = options.root ? undefined : api.trace.getSpanContext(ctx)
      const valid = parent && api.isSpanContextValid(parent) ? parent : undefined
      const sc: api.SpanContext = {
        traceId: valid?.traceId ?? randomBytes(16).toString('hex'),
        spanId: randomBytes(8).toString('hex'),
        traceFlags: api.TraceFlags.SAMPLED,
        traceState: valid?.traceState,
      }
      return new MemorySpan(sc, name, options, valid, onEnd)
    }
    return {
      startSpan,
      startActiveSpan: ((name: string, ...rest: unknown[]) => {
        const fn = rest.pop() as (span: api.Span) => unknown
        const span = startSpan(name, (rest[0] as api.SpanOptions) ?? {})
        return api.context.with(api.trace.setSpan(api.context.active(), span), fn, undefined, span)
      }) as api.Tracer['startActiveSpan'],
    }
  }

  clear(): void {
    this.spans.length = 0
  }
}

/** An AsyncLocalStorage context manager: what @opentelemetry/context-async-hooks gives an application. */
export class AlsContextManager implements api.ContextManager {
  private readonly als = new AsyncLocalStorage<api.Context>()
  active(): api.Context {
    return this.als.getStore() ?? api.ROOT_CONTEXT
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: api.Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.als.run(ctx, () => fn.apply(thisArg, args))
  }
  bind<T>(_ctx: api.Context, target: T): T {
    return target
  }
  enable(): this {
    return this
  }
  disable(): this {
    return this
  }
}

/** The spans a file of JSON lines holds (MemoryTracerProvider's `file`). */
export function readSpans(file: string): RecordedSpan[] {
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RecordedSpan)
}
