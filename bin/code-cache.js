// Loads a CommonJS bundle through V8's code cache, so a short-lived command
// skips compiling the functions it ran last time. Hand-written because Node 20
// has no public switch for it (module.enableCompileCache arrived in Node 22.1,
// and is used instead where it exists) and the npm packages that did this
// (v8-compile-cache) hook require() for every module, which a single bundle
// does not need.
//
// The cache sits beside the bundle: `<bundle>.v8cache` holds one JSON header
// line (the bundle's size and mtime, and the keys the cache was made under)
// and then V8's data. V8 checks only the source's length, so the header is what
// ties a cache to one build. A run whose key (the broker scheme it used) is not
// yet covered rewrites the cache on exit; V8's data then holds every function
// compiled so far, so after one run per broker the cache covers them all.
// Switch: TSQ_NO_CODE_CACHE (or TSQ_NO_TRICKS): bin/run.js then requires the
// bundle plainly and this module is not loaded.
'use strict'
const fs = require('node:fs')
const path = require('node:path')
const vm = require('node:vm')
const Module = require('node:module')

function readCache(cacheFile, stamp) {
  try {
    const raw = fs.readFileSync(cacheFile)
    const newline = raw.indexOf(10)
    const header = JSON.parse(raw.subarray(0, newline).toString('utf8'))
    if (header.stamp !== stamp || !Array.isArray(header.keys)) return undefined
    return { keys: header.keys, data: raw.subarray(newline + 1) }
  } catch {
    return undefined
  }
}

function writeCache(cacheFile, stamp, keys, data) {
  const tmp = `${cacheFile}.${process.pid}.tmp`
  try {
    fs.writeFileSync(tmp, Buffer.concat([Buffer.from(`${JSON.stringify({ stamp, keys })}\n`), data]))
    fs.renameSync(tmp, cacheFile)
  } catch {
    // A read-only install runs without a cache; it is only an optimisation.
    try {
      fs.unlinkSync(tmp)
    } catch {
      // Never written, or gone already.
    }
  }
}

/**
 * require(file), compiled with the cache when there is a valid one.
 * `keyOf(exports)` names what this run exercised; a new key refreshes the cache.
 */
function requireWithCodeCache(file, keyOf) {
  if (typeof Module.enableCompileCache === 'function') {
    Module.enableCompileCache()
    return require(file)
  }
  const source = fs.readFileSync(file, 'utf8')
  const stat = fs.statSync(file)
  const stamp = `${stat.size}:${stat.mtimeMs}`
  const cacheFile = `${file}.v8cache`
  const cache = readCache(cacheFile, stamp)
  const script = new vm.Script(Module.wrap(source), { filename: file, cachedData: cache && cache.data })
  const mod = new Module(file, module)
  mod.filename = file
  mod.paths = Module._nodeModulePaths(path.dirname(file))
  script.runInThisContext().call(mod.exports, mod.exports, (id) => mod.require(id), mod, file, path.dirname(file))
  mod.loaded = true
  process.once('exit', () => {
    const key = keyOf(mod.exports)
    const keys = cache && !script.cachedDataRejected ? cache.keys : []
    if (key === undefined || keys.includes(key)) return
    writeCache(cacheFile, stamp, [...keys, key], script.createCachedData())
  })
  return mod.exports
}

module.exports = { requireWithCodeCache }
