// `tsq events` in a terminal: the rows laid out as Celery 5.2.6's curses
// monitor lays them out (format_row captured from celery.events.cursesmon at
// two screen widths), and the state behind the screen (the cluster state the
// dashboard reads too): task states and names across events, a late event
// under Celery's precedence, the latest task first, and workers alive by heartbeat.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ClusterView, describeReplies, formatRow, renderScreen } from '../../../src/cli/events/event-monitor.js'

const UUID = '355843e6-8cc6-41d1-b62b-d03ca1d6b15c'

describe("[events monitor] rows as Celery's CursesMonitor.format_row", () => {
  // Celery's display width is the screen's minus 4; these are its rows for screens 104 and 60 wide.
  it('a 104-column screen', () => {
    assert.equal(
      formatRow(100, 'UUID', 'TASK', 'WORKER', 'TIME', 'STATE'),
      'UUID                                 WORKER                TASK                    TIME     STATE   ',
    )
    assert.equal(
      formatRow(100, UUID, 'proj.very.long.module.path.add', 'worker-with-a-long-name@host.example.com', '01:00:04', 'RECEIVED'),
      `${UUID} worker-with-a-long... proj.very.long.mo[.]add 01:00:04 RECEIVED`,
    )
  })

  it('a 60-column screen: the uuid gives way first', () => {
    assert.equal(formatRow(56, 'UUID', 'TASK', 'WORKER', 'TIME', 'STATE'), 'UUID  WORKER          TASK             TIME     STATE   ')
    assert.equal(
      formatRow(56, UUID, 'proj.very.long.module.path.add', 'worker-with-a-long-name@host.example.com', '01:00:04', 'RECEIVED'),
      '35... worker-with-... proj.very.[.]add 01:00:04 RECEIVED',
    )
  })
})

describe('[events monitor] the state behind the screen', () => {
  const T = 1_800_000_000
  function cluster(): ClusterView {
    const view = new ClusterView()
    view.apply({ type: 'worker-online', hostname: 'w1@h', freq: 2, timestamp: T, local_received: T })
    view.apply({ type: 'worker-heartbeat', hostname: 'w2@h', freq: 2, timestamp: T, local_received: T })
    view.apply({
      type: 'task-received',
      uuid: 'a',
      name: 'proj.add',
      args: '(2, 2)',
      kwargs: '{}',
      hostname: 'w1@h',
      timestamp: T + 1,
      local_received: T + 1,
    })
    view.apply({
      type: 'task-received',
      uuid: 'b',
      name: 'proj.mul',
      args: '(3, 3)',
      kwargs: '{}',
      hostname: 'w1@h',
      timestamp: T + 2,
      local_received: T + 2,
    })
    view.apply({ type: 'task-started', uuid: 'a', hostname: 'w1@h', timestamp: T + 3, local_received: T + 3 })
    view.apply({
      type: 'task-succeeded',
      uuid: 'a',
      result: '4',
      runtime: 0.0123,
      hostname: 'w1@h',
      timestamp: T + 4,
      local_received: T + 4,
    })
    return view
  }

  it('a task keeps the name its task-received gave it, takes each later state, and moves to the top', () => {
    const [first, second] = cluster().latestTasks(10)
    assert.deepEqual([first!.uuid, first!.name, first!.state, first!.hostname], ['a', 'proj.add', 'SUCCESS', 'w1@h'])
    assert.deepEqual([second!.uuid, second!.state], ['b', 'RECEIVED'])
    assert.deepEqual(first!.fields, { args: '(2, 2)', kwargs: '{}', result: '4', runtime: 0.0123 })
  })

  it('a worker is alive within two heartbeat intervals of its last event, and not after worker-offline', () => {
    const view = cluster()
    assert.deepEqual(view.aliveWorkers(T + 3.5), ['w1@h', 'w2@h'])
    assert.deepEqual(view.aliveWorkers(T + 5), ['w1@h'], "w2 sent nothing after T; w1's task events count")
    view.apply({ type: 'worker-offline', hostname: 'w1@h', timestamp: T + 5, local_received: T + 5 })
    assert.deepEqual(view.aliveWorkers(T + 5), [])
  })

  it("the screen: title, header, the latest task first, the selected task's fields, workers online and the counts", () => {
    const lines = renderScreen(cluster(), { width: 104, height: 16, now: T + 3.5, selected: 'a', greet: 'tsq events v0' })
    assert.equal(lines.length, 15)
    assert.equal(lines[0], '   tsq events v0')
    assert.match(lines[2]!, /^ {3}UUID +WORKER +TASK +TIME +STATE/)
    assert.match(lines[3]!, /a +w1@h +proj\.add +\d\d:\d\d:\d\d SUCCESS/)
    assert.ok(lines[3]!.includes('\x1b[7m'), 'the selected row is shown reversed')
    assert.match(lines[4]!, /b +w1@h +proj\.mul +\d\d:\d\d:\d\d RECEIVED/)
    assert.deepEqual(lines.slice(-4), [
      '   Selected: args=(2, 2) kwargs={} result=4 runtime=0.01',
      '   Workers online: w1@h, w2@h',
      '   Info: events: 6 tasks:2 workers:2/2',
      '   Keys: j:down k:up c:revoke q: quit',
    ])
  })

  it("the state is the one the dashboard reads: a late event leaves the later state, the fields follow Task.info's order", () => {
    const view = new ClusterView()
    view.apply({ type: 'task-succeeded', uuid: 'c', result: '1', runtime: 2, hostname: 'w1@h', timestamp: T + 2, local_received: T + 2 })
    view.apply({
      type: 'task-received',
      uuid: 'c',
      name: 'proj.late',
      args: '()',
      kwargs: '{}',
      retries: 0,
      root_id: 'c',
      hostname: 'w1@h',
      timestamp: T + 1,
      local_received: T + 3,
    })
    view.apply({ type: 'task-sent', uuid: 'd', name: 'proj.sent', hostname: 'client@h', timestamp: T + 4, local_received: T + 4 })
    view.apply({ type: 'not-an-event' })
    const [sent, late] = view.latestTasks(10)
    assert.deepEqual([late!.uuid, late!.name, late!.state, late!.hostname], ['c', 'proj.late', 'SUCCESS', 'w1@h'])
    assert.deepEqual(Object.keys(late!.fields), ['args', 'kwargs', 'retries', 'result', 'runtime', 'root_id'])
    assert.deepEqual([sent!.uuid, sent!.state, sent!.hostname], ['d', 'PENDING', null], 'only sent: no worker yet (*NONE*)')
    assert.equal(view.state.tasks.get('c')?.state, 'SUCCESS', "the monitor's view reads the cluster state itself")
    assert.equal(view.eventCount, 4, "every event counts, as in Celery's State.event_count")
  })

  it("a revoke's replies take the selected task's line for a while, node by node", () => {
    const text = describeReplies('Revoke a', [{ 'w1@h': { ok: 'tasks a flagged as revoked' } }, { 'w2@h': { error: 'nope' } }])
    assert.equal(text, 'Revoke a: w1@h: tasks a flagged as revoked; w2@h: error: nope')
    assert.equal(describeReplies('Revoke a', []), 'Revoke a: no reply')
    const lines = renderScreen(cluster(), { width: 104, height: 16, now: T + 3.5, selected: 'a', greet: 'g', notice: text })
    assert.equal(lines.at(-4), `   ${text}`)
  })
})
