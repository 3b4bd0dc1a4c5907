// The shipping service of the events demo (`npm run demo`): it ships the
// parcel of every paid invoice. Its carrier's API times out once for invoice
// 1 (the event is retried after 1 s) and always for invoice 13 (after its 2
// retries, 1 s and 2 s, the event goes to shipping's archive).
//   tsq -A examples/events/shipping.js worker -P solo --without-mingle --without-gossip --without-heartbeat
import { createEventsApp, currentTask } from 'tsq'

export const app = createEventsApp('shipping')

app.handler(
  'billing.invoice.paid',
  (invoice) => {
    const { retries } = currentTask()
    if (invoice.id === 13 || (invoice.id === 1 && retries === 0)) throw new Error(`carrier API timed out for invoice ${invoice.id}`)
    console.info(
      `shipping: parcel for invoice ${invoice.id} sent${retries ? ` (after ${retries} retr${retries === 1 ? 'y' : 'ies'})` : ''}`,
    )
  },
  { maxRetries: 2 },
)
