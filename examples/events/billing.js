// The billing service of the events demo (`npm run demo`): it fires
// billing.invoice.paid, and handles it too, for its own ledger.
//   tsq -A examples/events/billing.js worker -P solo --without-mingle --without-gossip --without-heartbeat
import { createEventsApp } from 'tsq'

export const app = createEventsApp('billing')

/** Refuses an invoice without an id before anything is sent. */
export const invoicePaid = app.event('billing.invoice.paid', (invoice) => {
  if (!invoice || invoice.id === undefined) throw new Error('no id')
})

app.handler('billing.invoice.paid', (invoice) => {
  console.info(`ledger: invoice ${invoice.id} paid, ${invoice.total}`)
})
