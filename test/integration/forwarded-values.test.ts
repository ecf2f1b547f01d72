/**
 * What reaches the upstream, read from the fake upstream's request log: numbers as the client's
 * digits, whatever their length (never `1e+21`, which the upstream's parseInt reads as 1, nor
 * the other digits of the double the upstream reads), keyed by one form per number; over-long input refused
 * by the proxy with the upstream's 400 shape or left to the upstream as the non-route it is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECORDED, startFakeUpstream, testConfig, type FakeUpstream } from '../../testkit/index.js';
import { routeKey } from '../../src/cache/key.js';
import { startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw, getLiteralPath } from '../support/http.js';
import type { ProxyServer } from '../../src/composition-root.js';

const P = RECORDED.principal;
const BIG = '1000000000000000000000';
const D61 = `1${'0'.repeat(60)}`;

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
 * The URLs the upstream saw for one client request, sent with its path as given: those carrying
 * its request id (the tracker's own, tip polls and checks of the block an answer names, carry none).
 */
async function forwarded(path: string): Promise<{ status: number; urls: string[]; cache: string | null }> {
  upstream.resetCounts();
  const response = await getLiteralPath(proxy.url, path);
  const urls = upstream.requests.filter((r) => r.headers['x-request-id'] !== undefined).map((r) => r.url);
  return { status: response.status, urls, cache: response.headers.get('x-cache') };
}

describe('numbers reach the upstream as the client wrote the digits', () => {
  it.each([
    ['until_block', `/extended/v1/address/${P}/stx?until_block=${BIG}`, `/extended/v1/address/${P}/stx?until_block=${BIG}`],
    ['offset', `/extended/v1/address/${P}/transactions?offset=${BIG}`, `/extended/v1/address/${P}/transactions?offset=${BIG}`],
    ['height', `/extended/v1/address/${P}/transactions?height=${BIG}`, `/extended/v1/address/${P}/transactions?height=${BIG}`],
    ['event_offset', `/extended/v1/tx/${RECORDED.confirmedTxId}?event_offset=${BIG}`, `/extended/v1/tx/${RECORDED.confirmedTxId}?event_offset=${BIG}`],
    ['block height', `/extended/v2/blocks/${BIG}`, `/extended/v2/blocks/${BIG}`],
    ['burn block height', `/extended/v1/block/by_burn_block_height/${BIG}`, `/extended/v1/block/by_burn_block_height/${BIG}`],
    // The client's digits, leading zeros and all: the upstream reads them as the same number.
    ['a limit with a leading zero', `/extended/v1/address/${P}/transactions?limit=050`, `/extended/v1/address/${P}/transactions?limit=050`],
    // 61 digits: the double parseInt reads has other digits (999999999999999949387135297074018866963645011013410073083904).
    ['until_block with 61 digits', `/extended/v1/address/${P}/stx?until_block=${D61}`, `/extended/v1/address/${P}/stx?until_block=${D61}`],
    // Not digits: the digits of the number Ajv reads.
    ['a limit in exponent form', `/extended/v1/address/${P}/transactions?limit=1e1`, `/extended/v1/address/${P}/transactions?limit=10`],
  ])('%s', async (_name, path, expected) => {
    const { urls } = await forwarded(path);
    expect(urls).toEqual([expected]);
  });

  it('holds for every integer parameter of the 13 routes', async () => {
    const sent = `00${'9'.repeat(40)}`; // leading zeros, and past 2^53
    const TX = RECORDED.confirmedTxId;
    for (const path of [
      `/extended/v1/address/${P}/transactions?offset=${sent}`,
      `/extended/v1/address/${P}/transactions?height=${sent}`,
      `/extended/v1/address/${P}/transactions?limit=007`,
      `/extended/v2/addresses/${P}/transactions?offset=${sent}`,
      `/extended/v2/addresses/${P}/transactions?limit=007`,
      `/extended/v1/tx/${TX}?event_offset=${sent}`,
      `/extended/v1/tx/${TX}?event_limit=007`,
      `/extended/v1/tx/events?offset=${sent}&tx_id=${TX}`,
      `/extended/v1/tx/events?limit=007&tx_id=${TX}`,
      `/extended/v1/contract/${RECORDED.contractId}/events?offset=${sent}`,
      `/extended/v1/contract/${RECORDED.contractId}/events?limit=007`,
      `/extended/v2/blocks/${sent}`,
      `/extended/v1/block/by_burn_block_height/${sent}`,
    ]) {
      const { urls } = await forwarded(path);
      expect(urls.length, path).toBeGreaterThan(0);
      for (const url of urls) expect(url, path).toBe(path);
    }
    // tx/multiple asks for its members with the client's digits too.
    const other = `000${'8'.repeat(40)}`;
    const { urls } = await forwarded(`/extended/v1/tx/multiple?tx_id=${TX}&event_offset=${other}`);
    expect(urls.length).toBeGreaterThan(0);
    for (const url of urls) expect(url).toContain(`event_offset=${other}`);
  });

  it('keys every spelling of one number together, and numbers the upstream reads apart, apart', async () => {
    await forwarded(`/extended/v1/address/${P}/transactions?limit=07&offset=${D61}`);
    for (const spelling of [
      `limit=7&offset=${D61}`,
      `limit=007&offset=999999999999999949387135297074018866963645011013410073083904`,
      `limit=7e0&offset=1e60`,
    ]) {
      const { urls } = await forwarded(`/extended/v1/address/${P}/transactions?${spelling}`);
      expect(urls, spelling).toEqual([]);
    }
    const { urls } = await forwarded(`/extended/v1/address/${P}/transactions?limit=7&offset=1${'0'.repeat(59)}`);
    expect(urls).toHaveLength(1);
  });
});

describe('an address with a suffix on /extended/v2/addresses/{address}/transactions', () => {
  it('goes to the upstream as sent, uncached, every time, and makes no key', async () => {
    const path = `/extended/v2/addresses/${P}%2F..%2F..%2Fx/transactions`;
    for (let i = 0; i < 2; i++) {
      const { urls, cache } = await forwarded(path);
      expect(urls).toEqual([path]);
      expect(cache).toBe('BYPASS');
    }
    const { keyPrefix } = testConfig({ upstreamUrls: [upstream.url] }).cache;
    expect(proxy.store.peek(routeKey(keyPrefix, 'address_transactions_v2', path))).toBeUndefined();
    // A real principal is cached as ever.
    const real = `/extended/v2/addresses/${P}/transactions?limit=2`;
    expect((await forwarded(real)).urls).toEqual([real]);
    expect(await forwarded(real)).toMatchObject({ urls: [], cache: 'HIT' });
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
