// Packages a tsq install leaves out unless the project adds them (package.json's
// optional peerDependencies: the SQL drivers, two of them native): the caller
// imports one on first use through importOptional, and when it is absent gets
// one line naming the package and its install command instead of Node's
// resolution error. Pure: the import itself is the caller's.
import { TsqError } from './errors.js'

/** An optional package that is not installed: what needed it, and the command that adds it. */
export class MissingPackageError extends TsqError {
  readonly packageName: string
  constructor(what: string, packageName: string, options?: { cause?: unknown }) {
    super('MISSING_PACKAGE', `${what} needs the "${packageName}" package: npm install ${packageName}`, options)
    this.packageName = packageName
  }
}

/**
 * True when `error` says that `packageName` itself cannot be found, not a file
 * inside it or a package it imports (those are a broken install, told as Node
 * tells them).
 */
export function isPackageNotFound(error: unknown, packageName: string): boolean {
  const code = (error as { code?: unknown } | null)?.code
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false
  const message = (error as Error).message
  // ESM: "Cannot find package 'pg' imported from …"; CommonJS: "Cannot find module 'pg'" (or 'mysql2/promise').
  return (
    message.includes(`package '${packageName}'`) ||
    message.includes(`module '${packageName}'`) ||
    message.includes(`module '${packageName}/`)
  )
}

/**
 * Runs `load` (an `import('pkg')` written at the call site, so types and the
 * bundle's externals see the literal name); a missing `packageName` becomes a
 * MissingPackageError saying `what` needs it.
 */
export async function importOptional<T>(load: () => Promise<T>, packageName: string, what: string): Promise<T> {
  try {
    return await load()
  } catch (error) {
    if (isPackageNotFound(error, packageName)) throw new MissingPackageError(what, packageName, { cause: error })
    throw error
  }
}
