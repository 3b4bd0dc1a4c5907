// Node names and %-templates (spec §6, §9), ported from
// celery/utils/nodenames.py and celery/apps/multi.py build_expander. The
// caller passes the machine's hostname: this layer does no I/O.

import { NodeTemplateError } from './errors.js'

export const NODENAME_SEP = '@'
export const NODENAME_DEFAULT = 'celery'

/** `celery.utils.nodenames.nodesplit`, with a missing name as ''. */
export function nodeSplit(nodename: string): [name: string, host: string] {
  const i = nodename.indexOf(NODENAME_SEP)
  return i < 0 ? ['', nodename] : [nodename.slice(0, i), nodename.slice(i + 1)]
}

/** `default_nodename`: `-n w1` is a *host*, giving `celery@w1`; missing parts get defaults. */
export function defaultNodename(value: string | undefined, hostname: string): string {
  const [name, host] = nodeSplit(value ?? '')
  return `${name || NODENAME_DEFAULT}${NODENAME_SEP}${host || hostname}`
}

/** `anon_nodename`: the origin of messages sent by a non-worker, `gen<pid>@host`. */
export function anonNodename(pid: number, hostname: string): string {
  return `gen${pid}${NODENAME_SEP}${hostname}`
}

type Keys = Record<string, string>

// celery.utils.text.simple_format: `%(\w)`, so `%%` never matches as a pair
// and survives as-is; an unknown key is an error.
const FORMAT_KEY = /%([\p{L}\p{N}_])/gu

function simpleFormat(template: string, keys: Keys): string {
  if (!template) return template
  return template.replace(FORMAT_KEY, (_m, key: string) => {
    const v = keys[key]
    if (v === undefined) throw new NodeTemplateError(`Unknown format %${key} in string ${JSON.stringify(template)}`)
    return v
  })
}

function processIndexKeys(processIndex: number | undefined): Keys {
  const idx = processIndex ?? 0
  return { i: idx ? String(idx) : '0', I: idx ? `-${idx}` : '' }
}

function hostKeys(host: string, name: string | undefined, processIndex?: number): Keys {
  const dot = host.indexOf('.')
  const hname = dot < 0 ? host : host.slice(0, dot)
  const domain = dot < 0 ? '' : host.slice(dot + 1)
  return { h: host, n: name || hname, d: domain, ...processIndexKeys(processIndex) }
}

/** `host_format(s)` for `-n`: %h hostname, %n its first label, %d the domain, %i `0`, %I ''. */
export function hostFormat(template: string, hostname: string): string {
  return simpleFormat(template, hostKeys(hostname, undefined))
}

/** The worker's node name from `-n`: `host_format(default_nodename(value))`. */
export function workerNodename(value: string | undefined, hostname: string): string {
  return hostFormat(defaultNodename(value, hostname), hostname)
}

/**
 * `node_format` for --logfile/--pidfile/--statedb: %p node name, %h its host,
 * %n its name, %d the host's domain, %i/%I the pool process index (0 = main).
 * `fallbackHost` stands in for gethostname() when the node has no host part.
 */
export function nodeFormat(template: string, nodename: string, processIndex?: number, fallbackHost = ''): string {
  const [short, host] = nodeSplit(nodename)
  return simpleFormat(template, { ...hostKeys(host || fallbackHost, short || NODENAME_DEFAULT, processIndex), p: nodename })
}

/**
 * `celery multi`'s expander (build_expander): %h and %p are the full node
 * name, %n/%N the short name, %d the host part; %i/%I stay for the worker.
 */
export function multiExpand(template: string, nodename: string): string {
  const [short, host] = nodeSplit(nodename)
  const keys: Keys = {
    h: nodename,
    n: short || NODENAME_DEFAULT,
    N: short,
    d: host,
    p: nodename,
    i: '%i',
    I: '%I',
  }
  return simpleFormat(template, keys)
}
