/**
 * What reaches the upstream, read from the fake upstream's request log: numbers as the client's
 * digits (never `1e+21`, which the upstream's parseInt reads as 1), and over-long input refused
 * by the proxy with the upstream's 400 shape or left to the upstream as the non-route it is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECORDED, startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';
import { startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw } from '../support/http.js';
import type { ProxyServer } from '../../src/composition-root.js';

const P = RECORDED.principal;
const BIG = '1000000000000000000000';

let upstream: FakeUpstream;
let proxy: ProxyServer;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
});

afterAll(async () => {
  await proxy?.close();
  await upstream?.close();
});

/**
 * The URLs the upstream saw for one client request: those carrying its request id (the
 * tracker's own, tip polls and checks of the block an answer names, carry none).
 */
async function forwarded(path: string): Promise<{ status: number; urls: string[] }> {
  upstream.resetCounts();
  const response = await fetchRaw(`${proxy.url}${path}`);
  const urls = upstream.requests.filter((r) => r.headers['x-request-id'] !== undefined).map((r) => r.url);
  return { status: response.status, urls };
}

describe('numbers reach the upstream as the client wrote the digits', () => {
  it.each([
    ['until_block', `/extended/v1/address/${P}/stx?until_block=${BIG}`, `/extended/v1/address/${P}/stx?until_block=${BIG}`],
    ['offset', `/extended/v1/address/${P}/transactions?offset=${BIG}`, `/extended/v1/address/${P}/transactions?offset=${BIG}`],
    ['height', `/extended/v1/address/${P}/transactions?height=${BIG}`, `/extended/v1/address/${P}/transactions?height=${BIG}`],
    ['event_offset', `/extended/v1/tx/${RECORDED.confirmedTxId}?event_offset=${BIG}`, `/extended/v1/tx/${RECORDED.confirmedTxId}?event_offset=${BIG}`],
    ['block height', `/extended/v2/blocks/${BIG}`, `/extended/v2/blocks/${BIG}`],
    ['burn block height', `/extended/v1/block/by_burn_block_height/${BIG}`, `/extended/v1/block/by_burn_block_height/${BIG}`],
    // Spellings the upstream reads as the same number share one canonical form.
    ['a limit with a leading zero', `/extended/v1/address/${P}/transactions?limit=050`, `/extended/v1/address/${P}/transactions?limit=50`],
  ])('%s', async (_name, path, expected) => {
    const { urls } = await forwarded(path);
    expect(urls).toEqual([expected]);
  });
});

describe('over-long input', () => {
  it('refuses a 15 KB until_block with the 400 a maxLength would give, without asking the upstream', async () => {
    upstream.resetCounts();
    const response = await fetchRaw(`${proxy.url}/extended/v1/address/${P}/stx?until_block=${'1'.repeat(15 * 1024)}`);
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body.toString())).toEqual({
      statusCode: 400,
      code: 'FST_ERR_VALIDATION',
      error: 'Bad Request',
      message: 'querystring/until_block must NOT have more than 256 characters',
    });
    expect(upstream.count((r) => r.url !== '/extended')).toBe(0);
  });

  it('refuses a 15 KB principal in tx/events with the handler message, without asking the upstream', async () => {
    upstream.resetCounts();
    const principal = `${P}${'A'.repeat(15 * 1024)}`;
    const response = await fetchRaw(`${proxy.url}/extended/v1/tx/events?address=${principal}`);
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body.toString()).message).toBe(`invalid STX address "${principal}"`);
    expect(upstream.count((r) => r.url !== '/extended')).toBe(0);
  });

  it('does not serve a path parameter over 100 characters as a read route: it is no route upstream either', async () => {
    const path = `/extended/v1/address/${P}${'A'.repeat(200)}/stx`;
    const before = proxy.store.memory.entryCount;
    upstream.resetCounts();
    const response = await fetchRaw(`${proxy.url}${path}`);
    // Not validated or cached: forwarded as it came (the real upstream answers its route 404), nothing stored.
    expect(response.headers.get('x-cache')).toBe('BYPASS');
    expect(upstream.requests.filter((r) => r.url !== '/extended').map((r) => r.url)).toEqual([path]);
    expect(proxy.store.memory.entryCount).toBe(before);
  });
});
