// Exchanges and bindings on disk, so every process routes a publish the same
// way (kombu's virtual exchange table, spec §4.4, kept in files instead of
// client memory because our clients are separate processes).
import { mkdir, readFile, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../private-files.js'
import { BrokerRequestError } from '../errors.js'
import type { ExchangeSpec, ExchangeType } from '../transport.js'
import { type FileLayout, ignoreMissing, isErrno, listDir, writeFileAtomic } from './layout.js'
import { bindingFileName, escapeName, parseBindingFileName } from './names.js'

/** AMQP topic matching: words split on '.', `*` is exactly one word, `#` zero or more. */
export function topicMatches(pattern: string, key: string): boolean {
  const p = pattern.split('.')
  const k = key.split('.')
  const match = (i: number, j: number): boolean => {
    if (i === p.length) return j === k.length
    if (p[i] === '#') {
      for (let n = j; n <= k.length; n++) if (match(i + 1, n)) return true
      return false
    }
    if (j === k.length) return false
    return (p[i] === '*' || p[i] === k[j]) && match(i + 1, j + 1)
  }
  return match(0, 0)
}

export interface Binding {
  queue: string
  routingKey: string
}

export class ExchangeTable {
  // Types never change for a declared exchange (a redeclare with another type is refused).
  private readonly types = new Map<string, ExchangeType>()

  constructor(private readonly layout: FileLayout) {}

  async declare(spec: ExchangeSpec): Promise<void> {
    if (spec.name === '') return
    const existing = await this.typeOf(spec.name)
    if (existing !== undefined) {
      if (existing !== spec.type) {
        throw new BrokerRequestError(
          'PRECONDITION_FAILED',
          `exchange '${spec.name}' exists with type ${existing}, not ${spec.type}`,
        )
      }
      return
    }
    await writeFileAtomic(this.layout, this.layout.exchangeFile(spec.name), JSON.stringify(spec))
    await mkdir(this.layout.bindingDir(spec.name), { recursive: true, mode: PRIVATE_DIR_MODE })
    this.types.set(spec.name, spec.type)
  }

  async typeOf(exchange: string): Promise<ExchangeType | undefined> {
    const known = this.types.get(exchange)
    if (known) return known
    try {
      const spec = JSON.parse(await readFile(this.layout.exchangeFile(exchange), 'utf8')) as ExchangeSpec
      this.types.set(exchange, spec.type)
      return spec.type
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return undefined
      throw err
    }
  }

  async bind(queue: string, exchange: string, routingKey: string): Promise<void> {
    if (exchange === '') throw new BrokerRequestError('ACCESS_REFUSED', 'cannot bind to the default exchange')
    if ((await this.typeOf(exchange)) === undefined) {
      throw new BrokerRequestError('NOT_FOUND', `no exchange '${exchange}'`)
    }
    const dir = this.layout.bindingDir(exchange)
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
    await writeFile(join(dir, bindingFileName(queue, routingKey)), '', { mode: PRIVATE_FILE_MODE })
  }

  async unbind(queue: string, exchange: string, routingKey: string): Promise<void> {
    if (exchange === '') return
    await ignoreMissing(unlink(join(this.layout.bindingDir(exchange), bindingFileName(queue, routingKey))))
  }

  async bindings(exchange: string): Promise<Binding[]> {
    const out: Binding[] = []
    for (const file of await listDir(this.layout.bindingDir(exchange))) {
      const b = parseBindingFileName(file)
      if (b) out.push(b)
    }
    return out
  }

  /** The queues a publish reaches; empty means the message is dropped, as AMQP does. */
  async route(exchange: string, routingKey: string): Promise<string[]> {
    if (exchange === '') return [routingKey]
    const type = await this.typeOf(exchange)
    if (type === undefined) return []
    const matched = new Set<string>()
    for (const b of await this.bindings(exchange)) {
      if (type === 'fanout' || (type === 'direct' && b.routingKey === routingKey) || (type === 'topic' && topicMatches(b.routingKey, routingKey))) {
        matched.add(b.queue)
      }
    }
    return [...matched]
  }

  /** Drops every binding of a deleted queue. */
  async removeQueue(queue: string): Promise<void> {
    const prefix = `${escapeName(queue)}~`
    for (const exDir of await listDir(this.layout.bindings)) {
      const dir = join(this.layout.bindings, exDir)
      for (const file of await listDir(dir)) {
        if (file.startsWith(prefix)) await ignoreMissing(unlink(join(dir, file)))
      }
    }
  }
}
