// Dedup ids on RabbitMQ and file://: the whole state is one small JSON
// document, read, changed by rules.ts and written back while holding the lock
// store's mutex, so every change is atomic across processes. On RabbitMQ the
// document is the one message of the queue `tsq.dedup` (its mutex the
// exclusive queue `tsq.dedup.mutex`, as the `once` marks'); on file:// it is
// `locks/tsq-dedup.json`. One document keeps `tsq dedup ls` a single read, and
// serializes every dedup send of a cluster: fine for these brokers' rates
// (docs/deduplication.md says so); Redis keeps one key per id.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { replaceFile } from '../../transport/index.js'
import type { AmqpLockStore } from '../amqp-store.js'
import type { FileLockStore } from '../file-store.js'
import type { LockStore } from '../lock.js'
import type { DedupStore } from './store.js'
import {
  claim,
  emptyDocument,
  listing,
  offer,
  release,
  remove,
  type ClaimAnswer,
  type DedupDocument,
  type DedupListing,
  type DedupRequest,
  type OfferAnswer,
} from './rules.js'

/** Reads the document, lets `fn` change it, writes it back, all under one mutex. */
export type DocumentUpdate = <R>(fn: (doc: DedupDocument) => R) => Promise<R>

export const AMQP_DEDUP_QUEUE = 'tsq.dedup'
export const FILE_DEDUP_NAME = 'tsq-dedup'

export class DocumentDedupStore implements DedupStore {
  constructor(
    readonly kind: 'amqp' | 'file' | 'memory',
    private readonly update: DocumentUpdate,
  ) {}

  offer(r: DedupRequest, now = Date.now()): Promise<OfferAnswer> {
    return this.update((doc) => offer(doc, r, now))
  }

  claim(key: string, taskId: string, now = Date.now()): Promise<ClaimAnswer> {
    return this.update((doc) => claim(doc, key, taskId, now))
  }

  release(key: string, taskId: string): Promise<boolean> {
    return this.update((doc) => release(doc, key, taskId))
  }

  list(now = Date.now()): Promise<DedupListing[]> {
    return this.update((doc) => listing(doc, now))
  }

  remove(key: string): Promise<boolean> {
    return this.update((doc) => remove(doc, key))
  }

  /** The lock store it lives in is closed with the lock stores. */
  async close(): Promise<void> {}
}

/** A document in this process's memory: the rules' unit tests, on a fake clock. */
export function memoryDocument(doc: DedupDocument = emptyDocument()): DocumentUpdate {
  let turn: Promise<unknown> = Promise.resolve()
  return <R>(fn: (d: DedupDocument) => R): Promise<R> => {
    const next = turn.then(() => fn(doc))
    turn = next.catch(() => undefined)
    return next
  }
}

function parse(text: string): DedupDocument | null {
  try {
    const doc = JSON.parse(text) as DedupDocument
    return doc && typeof doc.entries === 'object' && typeof doc.gone === 'object' ? doc : null
  } catch {
    return null
  }
}

/**
 * The document as the one message of `tsq.dedup`. The new one is confirmed
 * before the old one is acked; a crash between leaves both, and the next
 * reader keeps the higher version.
 */
export function amqpDocument(locks: LockStore): DocumentUpdate {
  const store = locks as AmqpLockStore
  return <R>(fn: (doc: DedupDocument) => R): Promise<R> =>
    store.withQueueMutex(AMQP_DEDUP_QUEUE, async (ch, queue) => {
      const read = []
      let doc: DedupDocument | null = null
      for (;;) {
        const msg = await ch.get(queue, { noAck: false })
        if (!msg) break
        read.push(msg)
        const found = parse(msg.content.toString())
        if (found && (!doc || found.version > doc.version)) doc = found
      }
      const current = doc ?? emptyDocument()
      const answer = fn(current)
      current.version += 1
      ch.sendToQueue(queue, Buffer.from(JSON.stringify(current)), { persistent: true })
      await ch.waitForConfirms()
      for (const msg of read) ch.ack(msg)
      return answer
    })
}

/** The document as `locks/tsq-dedup.json`, replaced whole (a rename) under the file store's mutex. */
export function fileDocument(locks: LockStore): DocumentUpdate {
  const store = locks as FileLockStore
  const path = join(store.dir, `${FILE_DEDUP_NAME}.json`)
  return <R>(fn: (doc: DedupDocument) => R): Promise<R> =>
    store.withMutex(FILE_DEDUP_NAME, async () => {
      const text = await readFile(path, 'utf8').catch(() => '')
      const doc = parse(text) ?? emptyDocument()
      const answer = fn(doc)
      doc.version += 1
      await replaceFile(`${path}.${process.pid}.tmp`, path, JSON.stringify(doc))
      return answer
    })
}
