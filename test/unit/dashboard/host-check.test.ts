// The names the dashboard's Host check accepts: the bound address, localhost
// and loopback when bound there, the machine's own when bound to all, those
// given, '*' for none; and the escaping of what error pages echo.
import assert from 'node:assert/strict'
import { networkInterfaces } from 'node:os'
import { test } from 'node:test'
import { allowedHostNames, hostName } from '../../../src/dashboard/access.js'
import { escapeHtml } from '../../../src/dashboard/http.js'

test("a Host header's name: port, brackets, case and a trailing dot dropped", () => {
  assert.equal(hostName('Rebind.Evil.Example:5596'), 'rebind.evil.example')
  assert.equal(hostName('[::1]:5555'), '::1')
  assert.equal(hostName('localhost.'), 'localhost')
  assert.equal(hostName('127.0.0.1'), '127.0.0.1')
  assert.equal(hostName('fd00::2'), 'fd00::2')
})

test('bound to loopback: loopback names and those given only', () => {
  const names = allowedHostNames('127.0.0.1', ['dash.example', ' Other.Example:80 '])!
  for (const n of ['127.0.0.1', 'localhost', '::1', 'dash.example', 'other.example']) assert.ok(names.has(n), n)
  assert.equal(names.has('rebind.evil.example'), false)
  const lan = allowedHostNames('10.1.2.3')!
  assert.ok(lan.has('10.1.2.3') && lan.has('localhost'))
  assert.equal(lan.has('127.0.0.1'), false)
})

test("bound to all: the machine's addresses; '*' turns the check off", () => {
  const names = allowedHostNames('0.0.0.0')!
  for (const list of Object.values(networkInterfaces()))
    for (const i of list ?? []) assert.ok(names.has(i.address.toLowerCase()), i.address)
  assert.equal(names.has('rebind.evil.example'), false)
  assert.equal(allowedHostNames('127.0.0.1', ['*']), null)
})

test('error pages escape what they echo', () => {
  assert.equal(
    escapeHtml(`Failed to grow '<img src=x onerror="alert(1)">@w' & more`),
    'Failed to grow &#39;&#60;img src=x onerror=&#34;alert(1)&#34;&#62;@w&#39; &#38; more',
  )
})
