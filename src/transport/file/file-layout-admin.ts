// The file broker's exchanges and bindings read and changed directly, for the
// admin verbs the Transport contract leaves out (virtual/admin.ts).
import { unlink } from 'node:fs/promises'
import type { BindingRow } from '../admin.js'
import type { VirtualLayout } from '../virtual/admin.js'
import { FileLayout, ignoreMissing, listDir, removeTree } from './layout.js'
import { QueueStore } from './queues.js'
import { unescapeName } from './names.js'
import { ExchangeTable } from './routing.js'

export class FileLayoutAdmin implements VirtualLayout {
  readonly vhost: string
  private readonly layout: FileLayout
  private readonly exchanges: ExchangeTable

  constructor(root: string) {
    this.vhost = root
    this.layout = new FileLayout(root)
    this.exchanges = new ExchangeTable(this.layout)
  }

  async bindings(): Promise<BindingRow[]> {
    const rows: BindingRow[] = []
    for (const dir of (await listDir(this.layout.bindings)).sort()) {
      const exchange = unescapeName(dir)
      for (const b of await this.exchanges.table(exchange)) rows.push({ queue: b.queue, exchange, routingKey: b.routingKey })
    }
    return rows
  }

  async exchangeExists(exchange: string): Promise<boolean> {
    return (await this.exchanges.typeOf(exchange)) !== undefined
  }

  async deleteExchange(exchange: string): Promise<void> {
    await ignoreMissing(unlink(this.layout.exchangeFile(exchange)))
    await removeTree(this.layout, this.layout.bindingDir(exchange))
  }

  async unbindQueue(queue: string): Promise<void> {
    await this.exchanges.removeQueue(queue)
  }

  queueExists(queue: string): Promise<boolean> {
    return new QueueStore(this.layout, this.exchanges).exists(queue)
  }

  async close(): Promise<void> {}
}
