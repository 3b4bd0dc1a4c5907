// The settings registry: every setting has a status and a note, and the table that ends
// docs/configuration.md is what scripts/settings-table.ts writes from it. Against Python Celery's own list and defaults:
// test/interop/celery-settings-defaults.test.ts.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { SETTINGS } from '../../../src/config/settings.js'
import { generatedPart, renderSettingsTable, TABLE_PATH } from '../../../scripts/settings-table.js'

describe('settings registry', () => {
  it('gives each setting a status and a note', () => {
    for (const [name, s] of Object.entries(SETTINGS)) {
      assert.ok(['honoured', 'refused', 'not-applicable'].includes(s.status), name)
      assert.ok(s.note.length > 10, `${name}: a note saying where or why`)
    }
  })
})

describe("docs/configuration.md's settings table", () => {
  it('is what scripts/settings-table.ts writes from the registry (run it after changing src/config/settings.ts)', () => {
    assert.equal(generatedPart(readFileSync(TABLE_PATH, 'utf8')), renderSettingsTable())
  })

  it('has one row per setting', () => {
    const rows = generatedPart(readFileSync(TABLE_PATH, 'utf8'))
      .split('\n')
      .filter((l) => l.startsWith('| `'))
    assert.equal(rows.length, Object.keys(SETTINGS).length)
  })
})
