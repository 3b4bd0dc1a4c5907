import type { ChainableCommander } from 'ioredis'

/** Runs a MULTI or pipeline and surfaces the first per-command error (ioredis reports them per entry). */
export async function execChecked(batch: ChainableCommander): Promise<unknown[]> {
  const results = await batch.exec()
  if (!results) throw new Error('transaction aborted')
  return results.map(([error, value]) => {
    if (error) throw error
    return value
  })
}
