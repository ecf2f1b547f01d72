/**
 * The wider read surface through real HTTP: the proxy in front of a counting upstream that
 * answers the surface routes each test scripts (and forwards the rest to testkit's chain model).
 * Tip-keyed node reads are asked once per tip; POST reads are keyed by their canonical body and
 * forwarded byte for byte; nothing is final without evidence; ETag families are revalidated;
 * what the upstream refuses, and anything that is not a plain JSON read, reaches the client as
 * the upstream answered it.
 */
import { request as httpRequest } from 'node:http';
import { makeSTXTokenTransfer, randomPrivateKey } from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import { RECORDED } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { nodeAnswer, startSurfaceTestUpstream, withEtag, type SurfaceTestUpstream } from '../support/surface-test-upstream.js';

const { defer } = useCleanups();

const P = RECORDED.principal;
const WARNING = '299 - "Deprecated: See https://docs.hiro.so/stacks/api for more information"';
const CALL_READ = `/v2/contracts/call-read/${RECORDED.contractId.replace('.', '/')}/get-pox-info`;

async function setup(overrides: Record<string, unknown> = {}) {
  const upstream = await startSurfaceTestUpstream();
  defer(() => upstream.close());
  const proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides });
  defer(() => proxy.close());
  return { upstream, proxy };
}

/** A new block upstream, and the proxy's tip poll seeing it. */
async function newBlock(upstream: SurfaceTestUpstream, proxy: Awaited<ReturnType<typeof setup>>['proxy']): Promise<void> {
  upstream.fake.advanceTip();
  await proxy.tracker.pollOnce();
}

const post = (url: string, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  fetchRaw(url, { method: 'POST', body, headers });

const cacheOf = (r: { headers: Headers }) => [r.headers.get('x-cache'), r.headers.get('x-cache-class')];

describe('tip-keyed node RPC reads', () => {
  it("asks for a wallet's /v2/accounts once per tip, and again at the next block", async () => {
    const { upstream, proxy } = await setup();
    let nonce = 4;
    upstream.script({ match: /^\/v2\/accounts\//, answer: () => nodeAnswer({ balance: '0x10', locked: '0x0', nonce: nonce++ }) });
    const url = `${proxy.url}/v2/accounts/${P}?proof=0`;

    const first = await fetchRaw(url);
    const second = await fetchRaw(url);
    expect(cacheOf(first)).toEqual(['MISS', 'tip']);
    expect(cacheOf(second)).toEqual(['HIT', 'tip']);
    expect(second.body.equals(first.body)).toBe(true);
    expect(upstream.count(/^\/v2\/accounts\//)).toBe(1);
    expect(upstream.received[0]?.url).toBe(`/v2/accounts/${P}?proof=0`);

    await newBlock(upstream, proxy);
    const third = await fetchRaw(url);
    expect(cacheOf(third)).toEqual(['MISS', 'tip']);
    expect(JSON.parse(third.body.toString()).nonce).toBe(5);
    expect(upstream.count(/^\/v2\/accounts\//)).toBe(2);
    expect(await metricValue(proxy, 'stacks_proxy_surface_requests_total', { family: 'v2_accounts', change: 'tip', cache: 'HIT' })).toBe(1);
    expect(await metricValue(proxy, 'stacks_proxy_http_requests_total', { route: 'v2_accounts' })).toBe(3);
  });

  it('serves HEAD from the GET entry and answers If-None-Match with 304', async () => {
    const { upstream, proxy } = await setup();
    upstream.script({ match: /^\/v2\/info$/, answer: () => nodeAnswer({ stacks_tip_height: 50, burn_block_height: 136 }) });
    const got = await fetchRaw(`${proxy.url}/v2/info`);
    const head = await fetchRaw(`${proxy.url}/v2/info`, { method: 'HEAD' });
    expect([head.status, head.headers.get('x-cache'), head.headers.get('etag')]).toEqual([200, 'HIT', got.headers.get('etag')]);
    const conditional = await fetchRaw(`${proxy.url}/v2/info`, { headers: { 'if-none-match': got.headers.get('etag') ?? '' } });
    expect(conditional.status).toBe(304);
    expect(upstream.count(/^\/v2\/info/)).toBe(1);
  });
});

describe('POST reads', () => {
  it('keys call-read by its canonical body: another spelling is a hit, other arguments a miss; bodies go upstream as sent', async () => {
    const { upstream, proxy } = await setup();
    upstream.script({
      method: 'POST',
      match: /^\/v2\/contracts\/call-read\//,
      answer: (r) => nodeAnswer({ okay: true, result: `0x${r.body.length.toString(16)}` }),
    });
    const spelled = '{"sender":"SP000000000000000000002Q6VF78","arguments":["0x0100000000000000000000000000000001"]}';
    const respelled = ' {\n  "arguments" : [ "0x0100000000000000000000000000000001" ],\n  "sender":"SP000000000000000000002Q6VF78" }';
    const other = '{"sender":"SP000000000000000000002Q6VF78","arguments":["0x0100000000000000000000000000000002"]}';

    const first = await post(proxy.url + CALL_READ, spelled);
    const second = await post(proxy.url + CALL_READ, respelled);
    expect(cacheOf(first)).toEqual(['MISS', 'tip']);
    expect(cacheOf(second)).toEqual(['HIT', 'tip']);
    expect(upstream.count(/call-read/, 'POST')).toBe(1);
    expect(upstream.received[0]?.body.toString()).toBe(spelled);
    expect(upstream.received[0]?.headers['content-type']).toBe('application/json');

    const third = await post(proxy.url + CALL_READ, other);
    expect(cacheOf(third)).toEqual(['MISS', 'tip']);
    expect(upstream.count(/call-read/, 'POST')).toBe(2);
    await newBlock(upstream, proxy);
    expect(cacheOf(await post(proxy.url + CALL_READ, respelled))).toEqual(['MISS', 'tip']);
    expect(upstream.count(/call-read/, 'POST')).toBe(3);
  });

  it('forwards a body that is not JSON (or has a duplicate key), and stores nothing of its answer', async () => {
    const { upstream, proxy } = await setup();
    upstream.script({ method: 'POST', match: /^\/v2\/fees\/transaction$/, answer: () => nodeAnswer({ estimations: [] }) });
    for (const body of ['{"transaction_payload":', '{"a":1,"a":2}']) {
      const before = upstream.count(/fees/, 'POST');
      const one = await post(`${proxy.url}/v2/fees/transaction`, body);
      const two = await post(`${proxy.url}/v2/fees/transaction`, body);
      expect([one.status, one.headers.get('x-cache'), two.headers.get('x-cache')]).toEqual([200, 'BYPASS', 'BYPASS']);
      expect(upstream.count(/fees/, 'POST')).toBe(before + 2);
      expect(upstream.received.at(-1)?.body.toString()).toBe(body);
    }
  });

  it('leaves a chunked body, another content type and a broadcast to the passthrough, untouched', async () => {
    const { upstream, proxy } = await setup();
    upstream.script({ method: 'POST', match: /^\/v2\/contracts\/call-read\//, answer: () => nodeAnswer({ okay: true, result: '0x01' }) });
    upstream.script({
      method: 'POST',
      match: /^\/v2\/transactions$/,
      answer: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '"txid"' }),
    });
    const body = '{"sender":"SP000000000000000000002Q6VF78","arguments":[]}';

    const chunked = await new Promise<{ status: number; cache: string | undefined }>((resolve, reject) => {
      const req = httpRequest(
        proxy.url + CALL_READ,
        { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, cache: res.headers['x-cache'] as string | undefined }));
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 10));
      req.end(body.slice(10));
    });
    expect(chunked).toEqual({ status: 200, cache: 'BYPASS' });
    const plain = await post(proxy.url + CALL_READ, body, { 'content-type': 'text/plain' });
    expect(plain.headers.get('x-cache')).toBe('BYPASS');
    const broadcast = await post(`${proxy.url}/v2/transactions`, '{"tx":"0x00"}');
    const again = await post(`${proxy.url}/v2/transactions`, '{"tx":"0x00"}');
    expect([broadcast.headers.get('x-cache'), again.headers.get('x-cache')]).toEqual(['BYPASS', 'BYPASS']);
    expect(upstream.received.filter((r) => r.method === 'POST').map((r) => r.body.toString())).toEqual([body, body, '{"tx":"0x00"}', '{"tx":"0x00"}']);
  });

  it('makes a call-read pinned to a final block final only once the block read says so', async () => {
    const { upstream, proxy } = await setup();
    upstream.script({ method: 'POST', match: /^\/v2\/contracts\/call-read\//, answer: () => nodeAnswer({ okay: true, result: '0x0703' }) });
    const finalBlock = JSON.parse((await fetchRaw(`${upstream.fake.url}/extended/v2/blocks/5`)).body.toString()) as { index_block_hash: string };
    const finalHash = finalBlock.index_block_hash.slice(2);
    const body = '{"sender":"SP000000000000000000002Q6VF78","arguments":[]}';

    // Evidence missing: the block read fails, so the answer stays tip class.
    upstream.fake.setFailing({ status: 500, body: '{}' }, new RegExp(`/extended/v2/blocks/0x${finalHash}`));
    const withoutEvidence = await post(`${proxy.url}${CALL_READ}?tip=${finalHash}`, body);
    expect(cacheOf(withoutEvidence)).toEqual(['MISS', 'tip']);
    upstream.fake.setFailing(null);
    await newBlock(upstream, proxy);

    const pinned = await post(`${proxy.url}${CALL_READ}?tip=${finalHash}`, body);
    expect(cacheOf(pinned)).toEqual(['MISS', 'final']);
    expect(pinned.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    await newBlock(upstream, proxy);
    expect(cacheOf(await post(`${proxy.url}${CALL_READ}?tip=${finalHash}`, body))).toEqual(['HIT', 'final']);

    // Pinned to the tip block: not final, whatever the block read says.
    const recent = await post(`${proxy.url}${CALL_READ}?tip=${RECORDED.tipIndexHash.slice(2)}`, body);
    expect(recent.headers.get('x-cache-class')).toBe('tip');
  });
});

describe('immutable answers need evidence', () => {
  const transfer = async () => makeSTXTokenTransfer({ recipient: P, amount: 5n, senderKey: randomPrivateKey(), network: 'testnet', nonce: 1n, fee: 180n });

  it('stores a raw transaction as final when its bytes hash to the txid, and never one whose bytes do not', async () => {
    const { upstream, proxy } = await setup();
    const tx = await transfer();
    const impostor = await transfer();
    upstream.script({
      match: new RegExp(`^/extended/v1/tx/0x${tx.txid()}/raw$`),
      answer: (r) => withEtag(r, 'raw1', { raw_tx: `0x${tx.serialize()}` }, { warning: WARNING }),
    });
    upstream.script({ match: new RegExp(`^/extended/v1/tx/0x${impostor.txid()}/raw$`), answer: (r) => withEtag(r, 'raw2', { raw_tx: `0x${tx.serialize()}` }) });

    const good = `${proxy.url}/extended/v1/tx/0x${tx.txid()}/raw`;
    expect(cacheOf(await fetchRaw(good))).toEqual(['MISS', 'final']);
    const hit = await fetchRaw(good);
    expect(cacheOf(hit)).toEqual(['HIT', 'final']);
    expect(hit.headers.get('warning')).toBe(WARNING);

    const bad = `${proxy.url}/extended/v1/tx/0x${impostor.txid()}/raw`;
    const lied = await fetchRaw(bad);
    expect([lied.status, lied.headers.get('x-cache'), lied.headers.get('cache-control')]).toEqual([200, 'BYPASS', 'public, no-cache, must-revalidate']);
    await fetchRaw(bad);
    expect(upstream.count(/\/raw$/)).toBe(3);
  });

  it("stores a contract's interface as final once its deploy transaction is final (the 13-route tx read)", async () => {
    const { upstream, proxy } = await setup();
    const deployTx = '0xb3847b7e852b0d731061ff144e4467065c6e7b159a9eee2f883fdc41f261ee13';
    const contract = 'ST000000000000000000002AMW42H.genesis';
    upstream.script({
      match: new RegExp(`^/extended/v1/contract/${contract}$`),
      answer: (r) => withEtag(r, 'c1', { contract_id: contract, tx_id: deployTx, block_height: 1 }),
    });
    upstream.script({ match: /^\/v2\/contracts\/interface\//, answer: () => nodeAnswer({ functions: [], variables: [], maps: [] }) });

    const url = `${proxy.url}/v2/contracts/interface/ST000000000000000000002AMW42H/genesis`;
    expect(cacheOf(await fetchRaw(url))).toEqual(['MISS', 'final']);
    await newBlock(upstream, proxy);
    expect(cacheOf(await fetchRaw(url))).toEqual(['HIT', 'final']);
    expect(upstream.count(/^\/v2\/contracts\/interface\//)).toBe(1);
    expect(upstream.fake.count(`/extended/v1/tx/${deployTx}`)).toBe(1);

    // Another contract whose record names a transaction that is not its deploy: tip class.
    upstream.script({
      match: /^\/extended\/v1\/contract\/ST000000000000000000002AMW42H\.other$/,
      answer: (r) => withEtag(r, 'c2', { contract_id: 'ST000000000000000000002AMW42H.other', tx_id: deployTx }),
    });
    expect(cacheOf(await fetchRaw(`${proxy.url}/v2/contracts/interface/ST000000000000000000002AMW42H/other`))).toEqual(['MISS', 'tip']);
  });
});

describe('ETag families and what the upstream refuses', () => {
  it('revalidates an expired entry with If-None-Match: a 304 is REVALIDATED', async () => {
    const { upstream, proxy } = await setup();
    upstream.script({ match: /\/transactions_with_transfers/, answer: (r) => withEtag(r, 'p1', { limit: 20, offset: 0, total: 0, results: [] }) });
    const url = `${proxy.url}/extended/v1/address/${P}/transactions_with_transfers?limit=20`;
    expect(cacheOf(await fetchRaw(url))).toEqual(['MISS', 'tip']);
    expect(cacheOf(await fetchRaw(url))).toEqual(['HIT', 'tip']);
    await newBlock(upstream, proxy);
    const revalidated = await fetchRaw(url);
    expect([revalidated.status, ...cacheOf(revalidated)]).toEqual([200, 'REVALIDATED', 'tip']);
    expect(revalidated.headers.get('etag')).toBe('"p1"');
    expect(upstream.received.at(-1)?.headers['if-none-match']).toBe('"p1"');
    expect(upstream.count(/transactions_with_transfers/)).toBe(2);
  });

  it('passes a 410 Gone on as sent, Warning included, and keeps it only briefly (mempool class)', async () => {
    const { upstream, proxy } = await setup({ cache: { ttl: { mempoolMs: 60_000 } } });
    upstream.script({
      match: /\/nonces$/,
      answer: () => ({ status: 410, headers: { 'content-type': 'application/json', warning: WARNING }, body: '{"error":"Gone"}' }),
    });
    const url = `${proxy.url}/extended/v1/address/${P}/nonces`;
    const gone = await fetchRaw(url);
    expect([gone.status, gone.headers.get('warning'), gone.body.toString(), ...cacheOf(gone)]).toEqual([410, WARNING, '{"error":"Gone"}', 'MISS', 'mempool']);
    const again = await fetchRaw(url);
    expect([again.status, again.headers.get('warning'), again.headers.get('x-cache')]).toEqual([410, WARNING, 'HIT']);
    expect(upstream.count(/\/nonces$/)).toBe(1);
  });

  it("passes other refusals on with the upstream's status and body, unstored", async () => {
    const { upstream, proxy } = await setup();
    upstream.script({ match: /^\/v2\/data_var\//, answer: () => ({ status: 400, headers: { 'content-type': 'text/plain' }, body: 'bad var' }) });
    const url = `${proxy.url}/v2/data_var/ST000000000000000000002AMW42H/pox-4/nope?proof=0`;
    for (let i = 0; i < 2; i++) {
      const refused = await fetchRaw(url);
      expect([refused.status, refused.body.toString(), refused.headers.get('x-cache')]).toEqual([400, 'bad var', 'BYPASS']);
    }
    expect(upstream.count(/^\/v2\/data_var\//)).toBe(2);
  });
});

describe('the official client (v9) through the proxy', () => {
  it('gets its v3 calls answered as the upstream answers them, and repeats from the cache', async () => {
    const { createClient } = await import('@stacks/blockchain-api-client');
    const { upstream, proxy } = await setup();
    const tx = RECORDED.pendingTxId;
    upstream.script({
      match: /^\/extended\/v3\/principals\/[^/]+\/nonces/,
      answer: (r) => withEtag(r, 'pm1', { last_executed_tx_nonce: 3, possible_next_nonce: 4, detected_missing_nonces: [], detected_mempool_nonces: [] }),
    });
    upstream.script({
      match: /^\/extended\/v3\/principals\/[^/]+\/balances\/stx/,
      answer: (r) => withEtag(r, 'pm1', { balance: '100', total_sent: '0', total_received: '100' }),
    });
    upstream.script({ match: /^\/extended\/v3\/mempool\/transactions/, answer: (r) => withEtag(r, 'm1', { limit: 20, offset: 0, total: 0, results: [] }) });
    upstream.script({
      match: /^\/extended\/v3\/transactions\/0x/,
      answer: (r) => withEtag(r, 't1', { tx_id: tx, tx_status: 'pending', tx_type: 'token_transfer' }, { warning: WARNING }),
    });
    const client = createClient({ baseUrl: proxy.url });
    const direct = createClient({ baseUrl: upstream.url });

    const calls = [
      (c: typeof client) => c.GET('/extended/v3/principals/{principal}/nonces', { params: { path: { principal: P } } }),
      (c: typeof client) => c.GET('/extended/v3/principals/{principal}/balances/stx', { params: { path: { principal: P } } }),
      (c: typeof client) => c.GET('/extended/v3/mempool/transactions', { params: { query: { limit: 20 } } }),
      (c: typeof client) => c.GET('/extended/v3/transactions/{tx_id}', { params: { path: { tx_id: tx } } }),
    ];
    for (const call of calls) {
      const viaProxy = await call(client);
      expect(viaProxy.response.status).toBe(200);
      expect(viaProxy.data).toEqual((await call(direct)).data);
      const again = await call(client);
      expect(again.response.headers.get('x-cache')).toBe('HIT');
      expect(again.response.headers.get('x-cache-class')).toBe('mempool');
    }
    expect((await calls[3]!(client)).response.headers.get('warning')).toBe(WARNING);
  });
});

describe('the v3 mempool list', () => {
  it('is refetched, never revalidated with its chain-tip ETag: the mempool moves under one tip, and a 304 would confirm the old list', async () => {
    // No mempool watcher (its view would vouch for the list) and no stale-while-revalidate: past the TTL, the proxy asks.
    const { upstream, proxy } = await setup({ cache: { ttl: { mempoolMs: 50, staleWhileRevalidateMs: 0 } }, activity: { watchMempool: false } });
    const tipEtag = `0x${'cd'.repeat(32)}`;
    let pending = 0;
    // As the upstream: handleChainTipCache, so the ETag stays while transactions enter the mempool.
    upstream.script({ match: /^\/extended\/v3\/mempool\/transactions/, answer: (r) => withEtag(r, tipEtag, { total: ++pending, results: [] }) });
    const url = `${proxy.url}/extended/v3/mempool/transactions?limit=20`;
    const first = await fetchRaw(url);
    expect([first.headers.get('x-cache'), first.headers.get('etag'), JSON.parse(first.body.toString()).total]).toEqual(['MISS', `"${tipEtag}"`, 1]);
    await new Promise((resolve) => setTimeout(resolve, 120));
    const later = await fetchRaw(url);
    expect([later.headers.get('x-cache'), JSON.parse(later.body.toString()).total]).toEqual(['MISS', 2]);
    const asked = upstream.received.filter((r) => r.url.startsWith('/extended/v3/mempool/transactions'));
    expect(asked.map((r) => r.headers['if-none-match'])).toEqual([undefined, undefined]);
  });
});

describe('rate limits', () => {
  it('charges a surface read that asks the upstream a miss, and a hit a hit', async () => {
    const { upstream, proxy } = await setup({ rateLimit: { enabled: true, anonymous: { limit: 20 }, hitCost: 1, missCost: 5 } });
    upstream.script({ match: /^\/v2\/fees\/transfer$/, answer: () => nodeAnswer(1) });
    const miss = await fetchRaw(`${proxy.url}/v2/fees/transfer`);
    const hit = await fetchRaw(`${proxy.url}/v2/fees/transfer`);
    expect([miss.headers.get('x-cache'), miss.headers.get('ratelimit-remaining')]).toEqual(['MISS', '15']);
    expect([hit.headers.get('x-cache'), hit.headers.get('ratelimit-remaining')]).toEqual(['HIT', '14']);
  });
});

describe('shared ETag scopes', () => {
  it("confirms a principal's other entries, and every mempool list, by the ETag another URL of the scope just got", async () => {
    const { upstream, proxy } = await setup();
    upstream.script({ match: /\/transactions_with_transfers/, answer: (r) => withEtag(r, 'p1', { results: [], url: r.url }) });
    upstream.script({ match: /^\/extended\/v1\/tx\/mempool\?/, answer: (r) => withEtag(r, 'm1', { results: [], url: r.url }) });
    const history = (limit: number) => `${proxy.url}/extended/v1/address/${P}/transactions_with_transfers?limit=${limit}`;
    const mempool = (address: string) => `${proxy.url}/extended/v1/tx/mempool?address=${address}`;
    const urls = [history(10), history(20), mempool(P), mempool(RECORDED.principalWithoutTxs)];
    for (const url of urls) expect((await fetchRaw(url)).headers.get('x-cache')).toBe('MISS');
    await newBlock(upstream, proxy);
    const before = upstream.received.length;
    expect(cacheOf(await fetchRaw(urls[0]!))).toEqual(['REVALIDATED', 'tip']);
    expect(cacheOf(await fetchRaw(urls[1]!))).toEqual(['HIT', 'tip']);
    expect((await fetchRaw(urls[2]!)).headers.get('x-cache')).toBe('REVALIDATED');
    const sibling = await fetchRaw(urls[3]!);
    expect(sibling.headers.get('x-cache')).toBe('HIT');
    expect(JSON.parse(sibling.body.toString()).url).toBe(`/extended/v1/tx/mempool?address=${RECORDED.principalWithoutTxs}`);
    expect(upstream.received.length - before).toBe(2);
    expect(await metricValue(proxy, 'stacks_proxy_etag_scope_confirmations_total', { route: 'principal_history' })).toBe(1);
  });
});
