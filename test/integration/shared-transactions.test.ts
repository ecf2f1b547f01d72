/**
 * One entry per transaction across routes: /extended/v1/tx/{id} and a tx/multiple member with
 * the same query are the same upstream bytes, so either route's answer serves the other.
 * Through real HTTP against the fake upstream, which counts what it is asked.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RECORDED, startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';
import { startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw } from '../support/http.js';
import type { ProxyServer } from '../../src/composition-root.js';

const TX = RECORDED.confirmedTxId;
/** Another transaction mined on the recorded chain. */
const OTHER = '0xf767164c588e43b1af80e466e59f120037c17bd49b25b1529543132a2aa331a8';
const PENDING = RECORDED.pendingTxId;
const UNKNOWN = RECORDED.unknownTxId;

let upstream: FakeUpstream;
let proxy: ProxyServer;

beforeEach(async () => {
  upstream = await startFakeUpstream();
  proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
});
afterEach(async () => {
  await proxy.close();
  await upstream.close();
});

const listRequests = () => upstream.requests.filter((r) => r.path === '/extended/v1/tx/multiple');

describe('a transaction /tx/{id} fetched', () => {
  it('is not asked for again by tx/multiple: one upstream request, for the other id only', async () => {
    expect((await fetchRaw(`${proxy.url}/extended/v1/tx/${TX}`)).headers.get('x-cache')).toBe('MISS');
    upstream.resetCounts();

    const path = `/extended/v1/tx/multiple?tx_id=${TX},${OTHER}`;
    const list = await fetchRaw(proxy.url + path);
    expect(list.status).toBe(200);
    // One request for the client (the tracker's check of the block the fetched member names carries no request id).
    expect(upstream.count((r) => r.headers['x-request-id'] !== undefined)).toBe(1);
    expect(listRequests().map((r) => r.url)).toEqual([`/extended/v1/tx/multiple?tx_id=${OTHER}`]);
    // Composed from the /tx/{id} entry and the fetched member, byte for byte the upstream's list.
    expect(list.body.toString()).toBe((await fetchRaw(upstream.url + path)).body.toString());
  });

  it('is shared only under the same query (event paging changes the body)', async () => {
    await fetchRaw(`${proxy.url}/extended/v1/tx/${TX}?event_limit=5`);
    upstream.resetCounts();

    await fetchRaw(`${proxy.url}/extended/v1/tx/multiple?tx_id=${TX},${OTHER}&event_limit=5`);
    expect(listRequests().map((r) => r.url)).toEqual([`/extended/v1/tx/multiple?tx_id=${OTHER}&event_limit=5`]);

    upstream.resetCounts();
    await fetchRaw(`${proxy.url}/extended/v1/tx/multiple?tx_id=${TX}`);
    expect(listRequests().map((r) => r.url)).toEqual([`/extended/v1/tx/multiple?tx_id=${TX}`]);
  });
});

describe('a transaction tx/multiple fetched', () => {
  it('answers /tx/{id} from the cache, with the upstream /tx/{id} bytes and headers', async () => {
    await fetchRaw(`${proxy.url}/extended/v1/tx/multiple?tx_id=${TX},${PENDING}`);
    upstream.resetCounts();

    const mined = await fetchRaw(`${proxy.url}/extended/v1/tx/${TX}`);
    const pending = await fetchRaw(`${proxy.url}/extended/v1/tx/${PENDING}`);
    expect(upstream.count()).toBe(0);
    expect(mined.headers.get('x-cache')).toBe('HIT');
    expect(mined.headers.get('x-cache-class')).toBe('final');
    expect(pending.headers.get('x-cache')).toBe('HIT');
    expect(pending.headers.get('x-cache-class')).toBe('mempool');

    const direct = await fetchRaw(`${upstream.url}/extended/v1/tx/${TX}`);
    expect(mined.status).toBe(200);
    expect(mined.body.toString()).toBe(direct.body.toString());
    for (const header of ['content-type', 'warning', 'x-api-version']) {
      expect(mined.headers.get(header), header).toBe(direct.headers.get(header));
    }
    expect(pending.body.toString()).toBe((await fetchRaw(`${upstream.url}/extended/v1/tx/${PENDING}`)).body.toString());
  });

  it('sends tx/multiple to the upstream once, then composes it from the same entries', async () => {
    const path = `/extended/v1/tx/multiple?tx_id=${OTHER},${TX}`;
    await fetchRaw(proxy.url + path);
    await fetchRaw(`${proxy.url}/extended/v1/tx/${OTHER}`);
    upstream.resetCounts();

    const again = await fetchRaw(`${proxy.url}/extended/v1/tx/multiple?tx_id=${TX}&tx_id=${OTHER}`);
    expect(again.headers.get('x-cache')).toBe('HIT');
    expect(upstream.count()).toBe(0);
    expect(again.body.toString()).toBe((await fetchRaw(upstream.url + path)).body.toString());
  });
});

describe('not-found transactions', () => {
  it('are not shared: a 404 and a found:false member differ in bytes, so each route keeps its own', async () => {
    const notFound = await fetchRaw(`${proxy.url}/extended/v1/tx/${UNKNOWN}`);
    expect(notFound.status).toBe(404);
    upstream.resetCounts();

    const path = `/extended/v1/tx/multiple?tx_id=${UNKNOWN}`;
    const list = await fetchRaw(proxy.url + path);
    expect(listRequests().map((r) => r.url)).toEqual([path]);
    expect(list.body.toString()).toBe(`{"${UNKNOWN}":{"found":false,"result":{"tx_id":"${UNKNOWN}"}}}`);

    // Neither displaced the other: both answer from the cache.
    upstream.resetCounts();
    const again = await fetchRaw(`${proxy.url}/extended/v1/tx/${UNKNOWN}`);
    const listAgain = await fetchRaw(proxy.url + path);
    expect(upstream.count()).toBe(0);
    expect([again.status, again.headers.get('x-cache')]).toEqual([404, 'HIT']);
    expect(again.body.toString()).toBe(notFound.body.toString());
    expect(listAgain.headers.get('x-cache')).toBe('HIT');
    expect(listAgain.body.toString()).toBe(list.body.toString());
  });
});

describe('a tx/multiple answer fetched whole (mixed-case ids)', () => {
  it('takes the class of its least fresh member instead of reading the list as one transaction', async () => {
    const upper = `0x${TX.slice(2).toUpperCase()}`;
    const finalOnly = await fetchRaw(`${proxy.url}/extended/v1/tx/multiple?tx_id=${upper}`);
    expect(finalOnly.status).toBe(200);
    expect(finalOnly.headers.get('x-cache')).toBe('MISS');
    expect(finalOnly.headers.get('x-cache-class')).toBe('final');

    const withPending = await fetchRaw(`${proxy.url}/extended/v1/tx/multiple?tx_id=${upper},${PENDING}`);
    expect(withPending.headers.get('x-cache-class')).toBe('mempool');

    upstream.resetCounts();
    const again = await fetchRaw(`${proxy.url}/extended/v1/tx/multiple?tx_id=${upper}`);
    expect(again.headers.get('x-cache')).toBe('HIT');
    expect(upstream.count()).toBe(0);
  });
});
