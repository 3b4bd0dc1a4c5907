// Exchanges and bindings on disk, the store under the virtual layer's
// exchanges (virtual/exchanges.ts): kombu's virtual exchange table (spec §4.4)
// kept in files instead of client memory, because our clients are separate
// processes and every one must route a publish the same way. Topic bindings
// are matched by AMQP's word rules, so a binding keeps only its key.
import { mkdir, readFile, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../private-files.js'
import { BrokerRequestError } from '../errors.js'
import type { ExchangeSpec, ExchangeType } from '../transport.js'
import type { BindingRow, ExchangeStore } from '../virtual/exchanges.js'
import { AMQP_TOPIC } from '../virtual/topic.js'
import { type FileLayout, ignoreMissing, isErrno, listDir, writeFileAtomic } from './layout.js'
import { bindingFileName, escapeName, parseBindingFileName } from './names.js'

export class ExchangeTable implements Pick<ExchangeStore, 'typeOf' | 'table' | 'storeBinding'> {
  // Types never change for a declared exchange (a redeclare with another type is refused).
  private readonly types = new Map<string, ExchangeType>()

  constructor(private readonly layout: FileLayout) {}

  async declare(spec: ExchangeSpec): Promise<void> {
    if (spec.name === '') return
    const existing = await this.typeOf(spec.name)
    if (existing !== undefined) {
      if (existing !== spec.type) {
        throw new BrokerRequestError('PRECONDITION_FAILED', `exchange '${spec.name}' exists with type ${existing}, not ${spec.type}`)
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

  /** A binding is an empty file named by its queue and key (the exchange's existence checked by the virtual layer). */
  async storeBinding(exchange: string, _type: ExchangeType, row: BindingRow): Promise<void> {
    const dir = this.layout.bindingDir(exchange)
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
    await writeFile(join(dir, bindingFileName(row.queue, row.routingKey)), '', { mode: PRIVATE_FILE_MODE })
  }

  async unbind(queue: string, exchange: string, routingKey: string): Promise<void> {
    if (exchange === '') return
    await ignoreMissing(unlink(join(this.layout.bindingDir(exchange), bindingFileName(queue, routingKey))))
  }

  async table(exchange: string): Promise<BindingRow[]> {
    const out: BindingRow[] = []
    for (const file of await listDir(this.layout.bindingDir(exchange))) {
      const b = parseBindingFileName(file)
      if (b) out.push({ ...b, pattern: AMQP_TOPIC.pattern(b.routingKey) })
    }
    return out
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
