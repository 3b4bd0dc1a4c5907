// Private folders and files for every file:// store (broker, results, locks,
// beat schedule, dashboard state, worker state): folders 0700 and files 0600
// whatever the umask, and a folder someone else could write to, or that
// someone else owns, refused with one line instead of trusted.
import { mkdirSync, statSync, chmodSync, writeFileSync, renameSync, unlinkSync, type Stats } from 'node:fs'
import { chmod, mkdir, rename, stat, unlink, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { codedError } from '../protocol/index.js'

export const PRIVATE_DIR_MODE = 0o700
export const PRIVATE_FILE_MODE = 0o600

export class UnsafeStoreError extends codedError('UNSAFE_STORE') {}

const myUid = () => (typeof process.getuid === 'function' ? process.getuid() : undefined)
const myGid = () => (typeof process.getgid === 'function' ? process.getgid() : undefined)
const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0')

/**
 * Why `st` (a store's own folder) must not be used, or undefined. Another
 * user's folder, or one others can write to, could feed us messages or read
 * results; a group-writable one is tolerated only for our own primary group
 * (a umask of 002 made such folders before tsq made them 0700).
 */
function unsafeDir(path: string, what: string, st: Stats): string | undefined {
  if (!st.isDirectory()) return `${what} ${path} is not a folder`
  const uid = myUid()
  if (uid === undefined) return undefined
  if (st.uid !== uid)
    return `${what} ${path} is owned by uid ${st.uid}, not by this user (uid ${uid}): refusing to use it; chown it or choose another folder`
  if (st.mode & 0o002 || (st.mode & 0o020 && st.gid !== myGid()))
    return `${what} ${path} is writable by others (mode ${octal(st.mode)}): refusing to use it; chmod 700 it or choose another folder`
  return undefined
}

/**
 * Creates `dir` 0700 (and its missing parents), or checks an existing one:
 * refused when unsafe, tightened to 0700 when it is ours but looser (older
 * tsq made them 755).
 */
export async function ensurePrivateDir(dir: string, what: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
  const st = await stat(dir)
  const why = unsafeDir(dir, what, st)
  if (why) throw new UnsafeStoreError(why)
  if (myUid() !== undefined && (st.mode & 0o777) !== PRIVATE_DIR_MODE) await chmod(dir, PRIVATE_DIR_MODE)
}

/**
 * For a store that is one file the user names (beat's schedule, the
 * dashboard's and the worker's state): its folder is the user's (often the
 * working directory), so it is only created 0700 when missing and refused
 * when others may replace files in it; the file itself, if there, must be
 * ours and is tightened to 0600.
 */
export function ensurePrivateFileSync(path: string, what: string): void {
  const dir = dirname(path)
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE })
  const uid = myUid()
  if (uid === undefined) return
  const d = statSync(dir)
  // Sticky (like /tmp): others may add files but not replace ours.
  if (d.mode & 0o002 && !(d.mode & 0o1000))
    throw new UnsafeStoreError(
      `${what} ${path}: its folder ${dir} is writable by others (mode ${octal(d.mode)}): refusing to use it; choose another folder`,
    )
  let f: Stats
  try {
    f = statSync(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
    throw err
  }
  if (f.uid !== uid)
    throw new UnsafeStoreError(
      `${what} ${path} is owned by uid ${f.uid}, not by this user (uid ${uid}): refusing to use it; chown it or choose another file`,
    )
  if (f.mode & 0o022)
    throw new UnsafeStoreError(
      `${what} ${path} is writable by others (mode ${octal(f.mode)}): refusing to use it; chmod 600 it or choose another file`,
    )
  if ((f.mode & 0o777) !== PRIVATE_FILE_MODE) chmodSync(path, PRIVATE_FILE_MODE)
}

/** Writes a new file 0600; a write that fails (a full disk) removes what it began, so no partial file is left. */
export async function writeNewFile(path: string, data: string | Uint8Array): Promise<void> {
  try {
    await writeFile(path, data, { mode: PRIVATE_FILE_MODE, flag: 'w' })
  } catch (err) {
    await unlink(path).catch(() => undefined)
    throw err
  }
}

/** Write to `tmp`, then rename over `path`: a reader sees the old file or the whole new one; nothing is left behind on failure. */
export async function replaceFile(tmp: string, path: string, data: string | Uint8Array): Promise<void> {
  await writeNewFile(tmp, data)
  try {
    await rename(tmp, path)
  } catch (err) {
    await unlink(tmp).catch(() => undefined)
    throw err
  }
}

/** replaceFile, synchronously (beat's store, the state files written at exit). */
export function replaceFileSync(tmp: string, path: string, data: string | Uint8Array): void {
  try {
    writeFileSync(tmp, data, { mode: PRIVATE_FILE_MODE, flag: 'w' })
    renameSync(tmp, path)
  } catch (err) {
    try {
      unlinkSync(tmp)
    } catch {
      // Never created, or renamed already.
    }
    throw err
  }
}
