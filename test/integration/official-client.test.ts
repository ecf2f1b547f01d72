/**
 * The official client (@stacks/blockchain-api-client) pointed at the proxy gets the same
 * data as when pointed at the upstream, for every endpoint it types, and repeats are hits.
 */
import { createClient } from '@stacks/blockchain-api-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECORDED, startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';
import { startTestProxy } from '../support/proxy-harness.js';
import type { ProxyServer } from '../../src/composition-root.js';

let upstream: FakeUpstream;
let proxy: ProxyServer;
let viaProxy: ReturnType<typeof createClient>;
let direct: ReturnType<typeof createClient>;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
  viaProxy = createClient({ baseUrl: proxy.url });
  direct = createClient({ baseUrl: upstream.url });
});
afterAll(async () => {
  await proxy.close();
  await upstream.close();
});

type Call = (client: ReturnType<typeof createClient>) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

const P = RECORDED.principal;
const TX = RECORDED.confirmedTxId;
const CALLS: Array<{ name: string; call: Call }> = [
  { name: 'get_account_stx_balance', call: (c) => c.GET('/extended/v1/address/{principal}/stx', { params: { path: { principal: P } } }) },
  { name: 'get_mempool_fee_priorities', call: (c) => c.GET('/extended/v2/mempool/fees') },
  { name: 'get_account_balance', call: (c) => c.GET('/extended/v1/address/{principal}/balances', { params: { path: { principal: P } } }) },
  { name: 'get_transaction_by_id', call: (c) => c.GET('/extended/v1/tx/{tx_id}', { params: { path: { tx_id: TX } } }) },
  { name: 'get_block', call: (c) => c.GET('/extended/v2/blocks/{height_or_hash}', { params: { path: { height_or_hash: 5 } } }) },
  {
    name: 'get_tx_list_details',
    call: (c) => c.GET('/extended/v1/tx/multiple', { params: { query: { tx_id: [TX, RECORDED.pendingTxId] } } }),
  },
  { name: 'get_mempool_transaction_stats', call: (c) => c.GET('/extended/v1/tx/mempool/stats') },
  { name: 'get_filtered_events', call: (c) => c.GET('/extended/v1/tx/events', { params: { query: { tx_id: TX } } }) },
  {
    name: 'get_contract_events_by_id',
    call: (c) => c.GET('/extended/v1/contract/{contract_id}/events', { params: { path: { contract_id: RECORDED.contractId } } }),
  },
  {
    name: 'get_account_transactions',
    call: (c) => c.GET('/extended/v1/address/{principal}/transactions', { params: { path: { principal: P } } }),
  },
  {
    name: 'get_address_transactions',
    call: (c) => c.GET('/extended/v2/addresses/{address}/transactions', { params: { path: { address: P }, query: { limit: 5 } } }),
  },
  {
    name: 'get_block_by_burn_block_height',
    call: (c) =>
      c.GET('/extended/v1/block/by_burn_block_height/{burn_block_height}', {
        params: { path: { burn_block_height: RECORDED.burnHeightWithBlock } },
      }),
  },
  {
    name: 'get_single_transaction_with_transfers',
    call: (c) =>
      c.GET('/extended/v1/address/{principal}/{tx_id}/with_transfers', {
        params: { path: { principal: 'ST000000000000000000002AMW42H', tx_id: '0x66146a2549bb199c4960d58af1a9ed3022904896976cfa14bb05b4b5d3844d80' } },
      }),
  },
];

describe('official client through the proxy', () => {
  it.each(CALLS)('$name: same data as from the upstream, then served from cache', async ({ call }) => {
    const expected = await call(direct);
    const first = await call(viaProxy);
    expect(first.response.status).toBe(expected.response.status);
    expect(first.error).toEqual(expected.error);
    expect(first.data).toEqual(expected.data);
    const second = await call(viaProxy);
    expect(second.data).toEqual(expected.data);
    expect(second.response.headers.get('x-cache')).toBe('HIT');
  });

  it('gets the upstream error shape for input the proxy rejects', async () => {
    const result = await viaProxy.GET('/extended/v1/tx/{tx_id}', { params: { path: { tx_id: '0x1234' } } });
    expect(result.response.status).toBe(400);
    expect(result.error).toEqual({
      statusCode: 400,
      code: 'FST_ERR_VALIDATION',
      error: 'Bad Request',
      message: 'params/tx_id must match pattern "^(0x)?[a-fA-F0-9]{64}$"',
    });
  });
});
