/**
 * The requests `npm run demo` prints a curl line for: one per cached route (src/routes/
 * route-table.ts), with values the recorded regtest chain of the fake upstream knows. A test
 * (test/integration/demo-examples.test.ts) fails when a route has none or an example stops
 * answering 200.
 */
import { RECORDED } from '../testkit/index.js';

/** A transaction of the recorded chain that moved STX of this contract principal. */
const TRANSFER = { principal: 'ST000000000000000000002AMW42H', txId: '0x66146a2549bb199c4960d58af1a9ed3022904896976cfa14bb05b4b5d3844d80' };

/** By route id: what the example shows. */
export const DEMO_EXAMPLES: readonly { routeId: string; path: string }[] = [
  { routeId: 'block', path: '/extended/v2/blocks/latest' },
  { routeId: 'block', path: '/extended/v2/blocks/1' },
  { routeId: 'tx_by_id', path: `/extended/v1/tx/${RECORDED.confirmedTxId}` },
  { routeId: 'tx_multiple', path: `/extended/v1/tx/multiple?tx_id=${RECORDED.confirmedTxId}&tx_id=${RECORDED.pendingTxId}` },
  { routeId: 'address_stx_balance', path: `/extended/v1/address/${RECORDED.principal}/stx` },
  { routeId: 'address_balances', path: `/extended/v1/address/${RECORDED.principal}/balances` },
  { routeId: 'address_transactions', path: `/extended/v1/address/${RECORDED.principal}/transactions?limit=5` },
  { routeId: 'address_transactions_v2', path: `/extended/v2/addresses/${RECORDED.principal}/transactions` },
  { routeId: 'tx_events', path: `/extended/v1/tx/events?tx_id=${RECORDED.confirmedTxId}` },
  { routeId: 'contract_events', path: `/extended/v1/contract/${RECORDED.contractId}/events` },
  { routeId: 'block_by_burn_height', path: `/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithBlock}` },
  { routeId: 'mempool_fees', path: '/extended/v2/mempool/fees' },
  { routeId: 'mempool_stats', path: '/extended/v1/tx/mempool/stats' },
  { routeId: 'tx_with_transfers', path: `/extended/v1/address/${TRANSFER.principal}/${TRANSFER.txId}/with_transfers` },
];
