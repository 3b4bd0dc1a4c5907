import { fileURLToPath } from 'node:url'
import { isTypeScript, tsxImportUrl } from '../load-app.js'

/** slot-main next to this file: .js when built, .ts when run from the sources. */
export function slotEntryPath(): string {
  const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js'
  return fileURLToPath(new URL(`./slot-main${ext}`, import.meta.url))
}

/** A slot needs tsx when either the worker's own code or the user's module is TypeScript. */
export function slotExecArgv(modulePath: string): string[] {
  return isTypeScript(modulePath) || slotEntryPath().endsWith('.ts') ? ['--import', tsxImportUrl()] : []
}
