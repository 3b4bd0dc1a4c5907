import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after } from 'node:test'
import { createTransport } from '../../../src/transport/registry.js'
import { describeTransportConformance } from './conformance/index.js'

const dir = mkdtempSync(join(tmpdir(), 'tsq-conf-file-'))
after(() => rmSync(dir, { recursive: true, force: true }))

describeTransportConformance('file', () => createTransport(`file://${dir}`), {
  kind: 'file',
  // The file broker has no connection to drop.
  killConnections: async () => undefined,
  crashUrl: `file://${dir}`,
})
