// Mailbox ids (the reply queue's oid, each request's ticket) are random
// version-4 UUIDs (protocol/uuid.ts): well-formed and unique.
import assert from 'node:assert/strict'
import { it } from 'node:test'
import { MailboxClient } from '../../../src/transport/mailbox.js'
import type { Transport } from '../../../src/transport/transport.js'

const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

it('[mailbox] every client gets a well-formed, distinct version-4 oid', () => {
  const seen = new Set<string>()
  for (let i = 0; i < 20_000; i += 1) {
    const { oid } = new MailboxClient({} as Transport)
    assert.match(oid, UUID4)
    seen.add(oid)
  }
  assert.equal(seen.size, 20_000)
})
