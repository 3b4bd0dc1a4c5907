// A missing table means "run the migrations"; a missing database or user is
// another fault, and its message is shown as the driver wrote it.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isMissingTable } from '../../../src/backends/sql-client.js'

describe('[sql] isMissingTable', () => {
  it('is true for a missing table as PostgreSQL, MariaDB and SQLite word it', () => {
    assert.equal(isMissingTable(new Error('relation "django_celery_results_taskresult" does not exist')), true)
    assert.equal(isMissingTable(new Error("Table 'test.django_celery_results_taskresult' doesn't exist")), true)
    assert.equal(isMissingTable(new Error('no such table: django_celery_results_taskresult')), true)
  })
  it('is false for a missing database, a missing role and other errors', () => {
    assert.equal(isMissingTable(new Error('database "nope" does not exist')), false)
    assert.equal(isMissingTable(new Error('role "nobody" does not exist')), false)
    assert.equal(isMissingTable(new Error("Unknown database 'nope'")), false)
    assert.equal(isMissingTable(new Error('connect ECONNREFUSED 127.0.0.1:5432')), false)
    assert.equal(isMissingTable(undefined), false)
  })
})
