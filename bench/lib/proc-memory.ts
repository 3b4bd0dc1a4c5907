// A worker's memory as Linux accounts it, summed over its whole process tree
// (the main process and its pool children), read from /proc.
//
//   anon  Pss_Anon (smaps_rollup): heap, stacks, malloc arenas and buffers, the
//         memory the program asks for. A page shared copy-on-write by N
//         processes (a Celery prefork child's inherited heap) counts 1/N in
//         each, so the sum counts it once.
//   rss   VmRSS: anon plus, in every process, each page it maps of its
//         runtime's binary and shared libraries (~40 MB of node's per Node
//         process, a few MB of Python's), whatever the program does.
//   pss   Pss: rss with shared pages divided among their sharers.
import { readFileSync, readdirSync } from 'node:fs'

export interface TreeMemory {
  /** Processes read (the root and its descendants alive at the time). */
  pids: number[]
  anonMb: number
  rssMb: number
  pssMb: number
}

/** pid and all its descendants. */
export function processTree(root: number): number[] {
  const parent = new Map<number, number>()
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]))
    } catch {
      /* gone */
    }
  }
  const tree = new Set([root])
  for (let grew = true; grew;) {
    grew = false
    for (const [pid, ppid] of parent)
      if (tree.has(ppid) && !tree.has(pid)) {
        tree.add(pid)
        grew = true
      }
  }
  return [...tree]
}

function field(text: string, name: string): number {
  const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)
  return m ? Number(m[1]) : 0
}

/** One process's figures in kB, or null when it is gone (or a zombie: no smaps). */
export function processMemoryKb(pid: number): { anon: number; rss: number; pss: number } | null {
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8')
    if (!/Pss_Anon:/.test(rollup)) throw new Error('this kernel has no Pss_Anon in smaps_rollup (Linux >= 5.7 needed)')
    return { anon: field(rollup, 'Pss_Anon'), rss: field(rollup, 'Rss'), pss: field(rollup, 'Pss') }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ESRCH') return null
    // A zombie's smaps_rollup reads empty.
    if ((error as Error).message.includes('Pss_Anon') && readState(pid) === 'Z') return null
    throw error
  }
}

function readState(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
  } catch {
    return 'X'
  }
}

/** The figures of root and its descendants, summed, in MiB. */
export function treeMemory(root: number): TreeMemory {
  const pids: number[] = []
  let anon = 0
  let rss = 0
  let pss = 0
  for (const pid of processTree(root)) {
    const m = processMemoryKb(pid)
    if (!m) continue
    pids.push(pid)
    anon += m.anon
    rss += m.rss
    pss += m.pss
  }
  return { pids, anonMb: anon / 1024, rssMb: rss / 1024, pssMb: pss / 1024 }
}
