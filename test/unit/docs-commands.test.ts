// The command reference, docs/commands/, is what scripts/gen-command-docs.mjs
// renders from oclif.manifest.json (each command's --help, as `oclif readme`
// renders it): a flag or description changed without `npm run docs:commands`
// fails here, and so does a page left behind by a command that is gone.
// tsq-test: own-process (oclif's Config keeps the loaded config in a module-wide cache)
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { COMMANDS_DIR, renderCommandDocs } from '../../scripts/gen-command-docs.mjs'

describe('docs/commands/', () => {
  it("is what npm run docs:commands renders from the CLI's manifest", async () => {
    const pages = await renderCommandDocs()
    const committed = readdirSync(COMMANDS_DIR).filter((name) => name.endsWith('.md'))
    const stale = [
      ...[...pages]
        .filter(([name, text]) => !committed.includes(name) || readFileSync(join(COMMANDS_DIR, name), 'utf8') !== text)
        .map(([name]) => name),
      ...committed.filter((name) => !pages.has(name)),
    ]
    assert.deepEqual(stale, [], 'the reference is stale, run npm run docs:commands')
  })

  it('has a page for every command the manifest lists, each with its --help text', async () => {
    const pages = await renderCommandDocs()
    const manifest = JSON.parse(readFileSync(join(COMMANDS_DIR, '..', '..', 'oclif.manifest.json'), 'utf8')) as {
      commands: Record<string, { hidden?: boolean; aliases: string[] }>
    }
    for (const [id, command] of Object.entries(manifest.commands)) {
      if (command.hidden) continue
      const page = pages.get(`${id.split(':')[0]}.md`)
      assert.ok(page, `${id}: no page`)
      assert.ok(page.includes(`$ tsq ${id.replaceAll(':', ' ')}`), `${id}: its USAGE line`)
    }
    assert.ok(pages.get('dashboard.md')!.includes('$ tsq flower'), "an alias is listed on its command's page")
  })
})
