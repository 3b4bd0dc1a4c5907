// Every performance trick has one switch, read the same way everywhere, listed
// in docs/tricks.md and docs/performance.md: the registry (src/tricks/index.ts), the
// launcher (bin/run.js), the build's patches and both tables name the same
// switches, and no TSQ_NO_* is read anywhere that the registry does not list.
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ALL_PATCHES, patchApplies } from '../../scripts/bundle-patches.mjs'
import { ALL_TRICKS_OFF, TRICKS, trickOn, type TrickName } from '../../src/tricks/index.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8')
const names = Object.keys(TRICKS) as TrickName[]
const switches = [ALL_TRICKS_OFF, ...names.map((name) => TRICKS[name].env)]

/** The switches a markdown table lists, one per row that starts with a `TSQ_NO_*` cell. */
function tableSwitches(markdown: string): string[] {
  return [...markdown.matchAll(/^\| `(TSQ_NO_[A-Z_]+)` \|/gm)].map((m) => m[1]!)
}

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(join(ROOT, path)).isDirectory()) return name === 'web' ? [] : files(path)
    return /\.(ts|js|mjs)$/.test(name) ? [path] : []
  })
}

describe('trick switches', () => {
  it('each trick has its own switch, and a home that exists', () => {
    assert.equal(new Set(switches).size, switches.length, 'two tricks share a switch')
    for (const name of names)
      assert.ok(existsSync(join(ROOT, TRICKS[name].home.split(' ')[0]!.replace(/,$/, ''))), `${name}: ${TRICKS[name].home}`)
  })

  it('docs/tricks.md and docs/performance.md list exactly these switches', () => {
    assert.deepEqual(tableSwitches(read('docs/tricks.md')).sort(), [...switches].sort())
    assert.deepEqual(tableSwitches(read('docs/performance.md')).sort(), [...switches].sort())
  })

  it('a switch is off when set to anything but the empty string, and TSQ_NO_TRICKS turns every one off', () => {
    for (const name of names) {
      const env = TRICKS[name].env
      assert.equal(trickOn(name, {}), true, name)
      assert.equal(trickOn(name, { [env]: '' }), true, `${name}: empty`)
      assert.equal(trickOn(name, { [env]: '1' }), false, name)
      assert.equal(trickOn(name, { [ALL_TRICKS_OFF]: '1' }), false, `${name}: master switch`)
    }
    assert.equal(trickOn('busyPoll', { TSQ_NO_CLAIM_OVERLAP: '1' }), true, "one trick's switch leaves the others on")
  })

  it("the build's performance patches are the registry's build-time tricks, and the fix applies whatever the switches", () => {
    const atBuild = names.filter((name) => (TRICKS[name] as { atBuild?: true }).atBuild)
    const tricks = ALL_PATCHES.filter((patch) => patch.trick)
    assert.deepEqual(tricks.map((patch) => patch.trick).sort(), [...atBuild].sort())
    for (const patch of tricks) {
      assert.equal(patch.trickEnv, TRICKS[patch.trick as TrickName].env, patch.name)
      assert.equal(patchApplies(patch, {}), true)
      assert.equal(patchApplies(patch, { [patch.trickEnv!]: '1' }), false)
      assert.equal(patchApplies(patch, { TSQ_NO_TRICKS: '1' }), false)
    }
    for (const fix of ALL_PATCHES.filter((patch) => !patch.trick)) assert.equal(patchApplies(fix, { TSQ_NO_TRICKS: '1' }), true, fix.name)
  })

  it("bin/run.js reads the launcher's switches and the master switch, in JavaScript and in its sh lines", () => {
    const launcher = read('bin/run.js')
    for (const env of [TRICKS.fastPath.env, TRICKS.codeCache.env, ALL_TRICKS_OFF])
      assert.match(launcher, new RegExp(`'${env}'|process\\.env\\.${env}`), env)
    const sh = launcher.split('\n')[1]!
    for (const env of [TRICKS.deferredCaCerts.env, ALL_TRICKS_OFF]) assert.ok(sh.includes(`[ -z "$${env}" ]`), `sh: ${env}`)
  })

  it('no TSQ_NO_* is read in src/, bin/ or scripts/ that the registry does not list', () => {
    const used = new Set<string>()
    for (const file of [...files('src'), ...files('bin'), ...files('scripts')]) {
      for (const m of read(file).matchAll(/\bTSQ_NO_[A-Z_]+\b/g)) used.add(m[0])
    }
    assert.deepEqual(
      [...used].filter((env) => !switches.includes(env)),
      [],
    )
  })
})
