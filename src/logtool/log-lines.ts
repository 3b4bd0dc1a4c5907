// The lines of worker logs, streamed: constant memory whatever the size.
// `-` is stdin; a gzip file (by its magic bytes, whatever its name) is
// inflated as it is read.
import { createReadStream } from 'node:fs'
import { open } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { PassThrough, type Readable } from 'node:stream'
import { createGunzip } from 'node:zlib'
import { codedError } from '../protocol/index.js'

/** A log that cannot be read: no such file, unreadable, not gzip after all. */
export class LogFileError extends codedError('BAD_ARGUMENT') {}

async function isGzip(path: string): Promise<boolean> {
  const handle = await open(path, 'r').catch((error: NodeJS.ErrnoException) => {
    throw new LogFileError(`cannot read ${path}: ${error.code === 'ENOENT' ? 'no such file' : error.message}`)
  })
  try {
    const head = Buffer.alloc(2)
    const { bytesRead } = await handle.read(head, 0, 2, 0)
    return bytesRead === 2 && head[0] === 0x1f && head[1] === 0x8b
  } finally {
    await handle.close()
  }
}

async function openInput(path: string): Promise<Readable> {
  if (path === '-') {
    // stdin read through a pass-through, so its end does not end the process's stdin for others.
    const input = new PassThrough()
    process.stdin.pipe(input)
    return input
  }
  const gz = await isGzip(path)
  const file = createReadStream(path)
  if (!gz) return file
  const gunzip = createGunzip()
  file.on('error', (error) => gunzip.destroy(error))
  return file.pipe(gunzip)
}

/** Every line of every file in order (no files: stdin, as Celery's FileInput). */
export async function* readLogLines(paths: readonly string[]): AsyncGenerator<string> {
  for (const path of paths.length ? paths : ['-']) {
    const input = await openInput(path)
    const lines = createInterface({ input, crlfDelay: Infinity })
    try {
      for await (const line of lines) yield line
    } catch (error) {
      throw new LogFileError(`cannot read ${path}: ${(error as Error).message}`)
    }
  }
}
