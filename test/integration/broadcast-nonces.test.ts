/**
 * No stale nonce after the sender's own broadcast, on the routes wallets read it from (issue 15):
 * `/extended/v1/address/{p}/nonces`, `/extended/v3/principals/{p}/nonces`, `/v2/accounts/{p}?proof=0`
 * (stacks.js's fallback) and `/extended/v1/tx/mempool?address={p}`, all cached (a second read is a
 * HIT), then a real signed transfer broadcast through the proxy (JSON `{"tx": hex}` as stacks.js
 * sends it, and raw octet-stream bytes). The upstream here behaves like the real one at that
 * moment: its nonce and mempool answers (and their ETags) change when it accepts the
 * transaction, its `/v2/accounts` (confirmed state) does not. Every read after the broadcast must
 * be what the upstream answers then, on this instance and on another sharing Redis; for a
 * sponsored transaction the sponsor's nonce too.
 */
import { deserializeTransaction, makeSTXTokenTransfer, privateKeyToAddress, randomPrivateKey, sponsorTransaction } from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/composition-root.js';
import { startRedis } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { fetchRaw } from '../support/http.js';
import { startTestProxy } from '../support/proxy-harness.js';
import { nodeAnswer, startSurfaceTestUpstream, withEtag, type ReceivedRequest, type SurfaceTestUpstream } from '../support/surface-test-upstream.js';

const { defer } = useCleanups();

/** What the upstream knows of one principal: its confirmed nonce and the nonces it holds pending. */
interface Account {
  confirmed: number;
  pending: number[];
}

/**
 * The upstream's side of the send flow: nonce and mempool routes computed from its state at each
 * request, a broadcast accepted by adding the transaction's origin (and sponsor) nonces to the
 * mempool. Which principals a transaction is about is what the test registered when it built it
 * (the upstream does not need the proxy's decoder to know its own mempool).
 */
class SendFlowUpstream {
  readonly accounts = new Map<string, Account>();
  readonly mempool: { txId: string; sender: string; sponsor?: string; recipient: string; nonce: number }[] = [];
  readonly built = new Map<string, { sender: string; sponsor?: string; recipient: string; nonce: number; sponsorNonce?: number }>();

  constructor(readonly server: SurfaceTestUpstream) {
    const p = '([A-Z0-9]+)';
    server.script({ match: new RegExp(`^/extended/v1/address/${p}/nonces$`), answer: (r) => this.nonces(r, 1) });
    server.script({ match: new RegExp(`^/extended/v3/principals/${p}/nonces$`), answer: (r) => this.nonces(r, 2) });
    server.script({ match: new RegExp(`^/v2/accounts/${p}\\?proof=0$`), answer: (r) => this.v2Account(r) });
    server.script({ match: /^\/extended\/v1\/tx\/mempool\?address=/, answer: (r) => this.mempoolOf(r) });
    server.script({ method: 'POST', match: /^\/v2\/transactions$/, answer: (r) => this.accept(r) });
  }

  account(principal: string): Account {
    let found = this.accounts.get(principal);
    if (!found) this.accounts.set(principal, (found = { confirmed: 7, pending: [] }));
    return found;
  }

  /** The body the upstream gives a principal's nonces now (both versions answer the same fields). */
  nonceBody(principal: string) {
    const { confirmed, pending } = this.account(principal);
    const highest = pending.length === 0 ? undefined : Math.max(...pending);
    return {
      last_executed_tx_nonce: confirmed === 0 ? null : confirmed - 1,
      last_mempool_tx_nonce: highest ?? null,
      possible_next_nonce: highest === undefined ? confirmed : highest + 1,
      detected_missing_nonces: [],
      detected_mempool_nonces: [...pending].sort((a, b) => a - b),
    };
  }

  accountBody(principal: string) {
    return {
      balance: '0x0000000000000000000000003b9aca00',
      locked: '0x00000000000000000000000000000000',
      unlock_height: 0,
      nonce: this.account(principal).confirmed,
    };
  }

  mempoolBody(principal: string) {
    const results = this.mempool
      .filter((tx) => tx.sender === principal || tx.sponsor === principal || tx.recipient === principal)
      .map((tx) => ({ tx_id: tx.txId, tx_status: 'pending', sender_address: tx.sender, sponsored: tx.sponsor !== undefined, nonce: tx.nonce }));
    return { limit: 20, offset: 0, total: results.length, results };
  }

  private principalIn(r: ReceivedRequest, pattern: RegExp): string {
    return pattern.exec(r.url)?.[1] ?? '';
  }

  private nonces(r: ReceivedRequest, version: number) {
    const principal = this.principalIn(r, version === 1 ? /address\/([A-Z0-9]+)\// : /principals\/([A-Z0-9]+)\//);
    // The principal_mempool ETag: it moves with the principal's pending transactions.
    return withEtag(r, `pm-${principal}-${this.account(principal).pending.join('.')}`, this.nonceBody(principal));
  }

  private v2Account(r: ReceivedRequest) {
    return nodeAnswer(this.accountBody(this.principalIn(r, /accounts\/([A-Z0-9]+)\?/)));
  }

  private mempoolOf(r: ReceivedRequest) {
    const principal = this.principalIn(r, /address=([A-Z0-9]+)/);
    // The global mempool ETag, whatever the ?address=: any transaction anywhere moves it.
    return withEtag(r, `mempool-${this.mempool.map((tx) => tx.txId.slice(2, 10)).join('.')}`, this.mempoolBody(principal));
  }

  private accept(r: ReceivedRequest) {
    const hex = (r.headers['content-type'] ?? '').includes('json') ? (JSON.parse(r.body.toString()) as { tx: string }).tx : r.body.toString('hex');
    const tx = deserializeTransaction(hex);
    const txId = `0x${tx.txid()}`;
    const known = this.built.get(txId);
    if (!known) return nodeAnswer({ error: 'transaction rejected', reason: 'Unknown' }, 400);
    this.account(known.sender).pending.push(known.nonce);
    if (known.sponsor !== undefined && known.sponsorNonce !== undefined) this.account(known.sponsor).pending.push(known.sponsorNonce);
    this.mempool.push({ txId, sender: known.sender, sponsor: known.sponsor, recipient: known.recipient, nonce: known.nonce });
    return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(tx.txid()) };
  }
}

const senderKey = randomPrivateKey();
const SENDER = privateKeyToAddress(senderKey, 'testnet');
const sponsorKey = randomPrivateKey();
const SPONSOR = privateKeyToAddress(sponsorKey, 'testnet');
const RECIPIENT = privateKeyToAddress(randomPrivateKey(), 'testnet');

/** The routes a wallet reads a principal's next nonce (and pending list) from, with the upstream's current answer for each. */
const walletReads = (upstream: SendFlowUpstream, p: string) => [
  { path: `/extended/v1/address/${p}/nonces`, now: () => upstream.nonceBody(p), asked: new RegExp(`^/extended/v1/address/${p}/nonces`) },
  { path: `/extended/v3/principals/${p}/nonces`, now: () => upstream.nonceBody(p), asked: new RegExp(`^/extended/v3/principals/${p}/nonces`) },
  { path: `/v2/accounts/${p}?proof=0`, now: () => upstream.accountBody(p), asked: new RegExp(`^/v2/accounts/${p}`) },
  { path: `/extended/v1/tx/mempool?address=${p}`, now: () => upstream.mempoolBody(p), asked: new RegExp(`^/extended/v1/tx/mempool\\?address=${p}$`) },
];

async function transfer(upstream: SendFlowUpstream, options: { sponsored?: boolean } = {}) {
  const nonce = upstream.account(SENDER).confirmed + upstream.account(SENDER).pending.length;
  let tx = await makeSTXTokenTransfer({
    recipient: RECIPIENT,
    amount: 1n,
    senderKey,
    network: 'testnet',
    fee: options.sponsored ? 0n : 200n,
    nonce,
    sponsored: options.sponsored,
  });
  let sponsorNonce: number | undefined;
  if (options.sponsored) {
    sponsorNonce = upstream.account(SPONSOR).confirmed + upstream.account(SPONSOR).pending.length;
    tx = await sponsorTransaction({ transaction: tx, sponsorPrivateKey: sponsorKey, fee: 300n, sponsorNonce, network: 'testnet' });
  }
  upstream.built.set(`0x${tx.txid()}`, { sender: SENDER, sponsor: options.sponsored ? SPONSOR : undefined, recipient: RECIPIENT, nonce, sponsorNonce });
  return tx;
}

const broadcastJson = (proxy: ProxyServer, hex: string) =>
  fetchRaw(`${proxy.url}/v2/transactions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tx: hex }) });
const broadcastOctets = (proxy: ProxyServer, bytes: Uint8Array) =>
  fetchRaw(`${proxy.url}/v2/transactions`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: new Uint8Array(bytes) });

async function setup(count = 1, overrides: Record<string, unknown> = {}) {
  const server = await startSurfaceTestUpstream();
  defer(() => server.close());
  const upstream = new SendFlowUpstream(server);
  let redisUrl: string | undefined;
  if (count > 1) {
    const redis = await startRedis();
    defer(() => redis.stop());
    redisUrl = redis.url;
  }
  const proxies: ProxyServer[] = [];
  for (let i = 0; i < count; i++) {
    const proxy = await startTestProxy({ upstreamUrls: [server.url], redisUrl, overrides });
    defer(() => proxy.close());
    proxies.push(proxy);
  }
  await Promise.all(proxies.map((p) => p.activityChannelSubscribed));
  return { upstream, proxies };
}

/** Every wallet read cached on `proxy`: a MISS that is the upstream's answer, then a HIT. */
async function cacheAll(proxy: ProxyServer, upstream: SendFlowUpstream, principal: string): Promise<void> {
  for (const read of walletReads(upstream, principal)) {
    const first = await fetchRaw(proxy.url + read.path);
    expect(first.status, read.path).toBe(200);
    expect(JSON.parse(first.body.toString()), read.path).toEqual(read.now());
    const second = await fetchRaw(proxy.url + read.path);
    expect(second.headers.get('x-cache'), read.path).toBe('HIT');
  }
}

/**
 * Every wallet read on `proxy` is what the upstream answers now; where its answer changed since
 * it was cached, the upstream was asked again for it.
 */
async function expectUpstreamsAnswers(proxy: ProxyServer, upstream: SendFlowUpstream, principal: string, before: Map<string, string>): Promise<void> {
  for (const read of walletReads(upstream, principal)) {
    const asked = upstream.server.count(read.asked);
    const answer = await fetchRaw(proxy.url + read.path);
    expect(answer.status, read.path).toBe(200);
    expect(JSON.parse(answer.body.toString()), read.path).toEqual(read.now());
    if (before.get(read.path) !== JSON.stringify(read.now())) {
      expect(upstream.server.count(read.asked), `${read.path} asked again`).toBe(asked + 1);
      expect(answer.headers.get('x-cache'), read.path).not.toBe('HIT');
    }
  }
}

const snapshot = (upstream: SendFlowUpstream, principal: string) => new Map(walletReads(upstream, principal).map((r) => [r.path, JSON.stringify(r.now())]));

describe("no stale nonce after the sender's own broadcast", () => {
  it('JSON {"tx": hex} as stacks.js sends it: every wallet read after it is the upstream\'s new answer', async () => {
    const { upstream, proxies } = await setup();
    const [proxy] = proxies as [ProxyServer];
    await cacheAll(proxy, upstream, SENDER);
    const before = snapshot(upstream, SENDER);

    const tx = await transfer(upstream);
    expect((await broadcastJson(proxy, tx.serialize())).status).toBe(200);
    expect(upstream.nonceBody(SENDER).possible_next_nonce).toBe(8); // the upstream's answer did change
    await expectUpstreamsAnswers(proxy, upstream, SENDER, before);

    // And the next send: the nonce read after it counts both pending transactions.
    const again = snapshot(upstream, SENDER);
    expect((await broadcastJson(proxy, (await transfer(upstream)).serialize())).status).toBe(200);
    await expectUpstreamsAnswers(proxy, upstream, SENDER, again);
    expect(JSON.parse((await fetchRaw(`${proxy.url}/extended/v1/address/${SENDER}/nonces`)).body.toString()).possible_next_nonce).toBe(9);
  });

  it('raw octet-stream bytes: the same', async () => {
    const { upstream, proxies } = await setup();
    const [proxy] = proxies as [ProxyServer];
    await cacheAll(proxy, upstream, SENDER);
    const before = snapshot(upstream, SENDER);
    const tx = await transfer(upstream);
    expect((await broadcastOctets(proxy, tx.serializeBytes())).status).toBe(200);
    await expectUpstreamsAnswers(proxy, upstream, SENDER, before);
  });

  it("a sponsored transaction: the sender's and the sponsor's nonces alike", async () => {
    const { upstream, proxies } = await setup();
    const [proxy] = proxies as [ProxyServer];
    await cacheAll(proxy, upstream, SENDER);
    await cacheAll(proxy, upstream, SPONSOR);
    const sender = snapshot(upstream, SENDER);
    const sponsor = snapshot(upstream, SPONSOR);
    const tx = await transfer(upstream, { sponsored: true });
    expect((await broadcastJson(proxy, tx.serialize())).status).toBe(200);
    expect(upstream.nonceBody(SPONSOR).possible_next_nonce).toBe(8);
    await expectUpstreamsAnswers(proxy, upstream, SENDER, sender);
    await expectUpstreamsAnswers(proxy, upstream, SPONSOR, sponsor);
  });

  it("the recipient's nonces did not change and stay HIT (a nonce moves with what its principal sends), its pending list is asked again", async () => {
    const { upstream, proxies } = await setup();
    const [proxy] = proxies as [ProxyServer];
    await cacheAll(proxy, upstream, RECIPIENT);
    const before = snapshot(upstream, RECIPIENT);
    const asked = upstream.server.count(/nonces/);
    expect((await broadcastJson(proxy, (await transfer(upstream)).serialize())).status).toBe(200);
    for (const path of [`/extended/v1/address/${RECIPIENT}/nonces`, `/extended/v3/principals/${RECIPIENT}/nonces`]) {
      const answer = await fetchRaw(proxy.url + path);
      expect(answer.headers.get('x-cache'), path).toBe('HIT');
      expect(JSON.parse(answer.body.toString()), path).toEqual(upstream.nonceBody(RECIPIENT));
    }
    expect(upstream.server.count(/nonces/)).toBe(asked);
    // Its pending list did change (the upstream files a transfer under its recipient): asked again.
    expect(JSON.stringify(upstream.mempoolBody(RECIPIENT))).not.toBe(before.get(`/extended/v1/tx/mempool?address=${RECIPIENT}`));
    await expectUpstreamsAnswers(proxy, upstream, RECIPIENT, before);
  });

  it('read through a second instance sharing Redis right after the answer: the same (the answer waited for the announcement)', async () => {
    const { upstream, proxies } = await setup(2);
    const [a, b] = proxies as [ProxyServer, ProxyServer];
    await cacheAll(b, upstream, SENDER);
    await cacheAll(b, upstream, SPONSOR);
    const sender = snapshot(upstream, SENDER);
    const sponsor = snapshot(upstream, SPONSOR);
    const tx = await transfer(upstream, { sponsored: true });
    expect((await broadcastJson(a, tx.serialize())).status).toBe(200);
    // No waiting: A answered only once Redis had taken the announcement, which it writes to B before A's client can ask B.
    await expectUpstreamsAnswers(b, upstream, SENDER, sender);
    expect(b.activityAnnouncements?.received).toBe(1);
    await expectUpstreamsAnswers(b, upstream, SPONSOR, sponsor);
    // A, which never read them, serves the upstream's answers as well (from the shared tier or upstream).
    await expectUpstreamsAnswers(a, upstream, SENDER, snapshot(upstream, SENDER));
  });
});

describe('search answers that name the mempool', () => {
  it('a cached search answer is asked for again once a broadcast changed the mempool, not kept for the tip', async () => {
    // No settling window: the answer cached right after the first broadcast may be served from cache (unit tests cover the window).
    const { upstream, proxies } = await setup(1, { activity: { settleMs: 0 } });
    const [proxy] = proxies as [ProxyServer];
    const first = await transfer(upstream);
    expect((await broadcastJson(proxy, first.serialize())).status).toBe(200);
    const txId = `0x${first.txid()}`;
    // The upstream finds the transaction in its mempool until a replacement (same nonce, higher fee) evicts it.
    let evicted = false;
    const searchBody = () =>
      evicted
        ? { found: false, result: { entity_type: 'tx_id' }, error: `No block or transaction found with hash "${txId}"` }
        : { found: true, result: { entity_id: txId, entity_type: 'mempool_tx_id' } };
    upstream.server.script({
      match: /^\/extended\/v1\/search\//,
      answer: () => ({ status: evicted ? 404 : 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(searchBody()) }),
    });
    const url = `${proxy.url}/extended/v1/search/${txId}`;
    const cached = await fetchRaw(url);
    expect([cached.status, cached.headers.get('x-cache-class')]).toEqual([200, 'mempool']);
    expect((await fetchRaw(url)).headers.get('x-cache')).toBe('HIT');

    evicted = true;
    const replacement = await transfer(upstream); // the test upstream takes any transaction it was told of
    expect((await broadcastJson(proxy, replacement.serialize())).status).toBe(200);
    const asked = upstream.server.count(/^\/extended\/v1\/search\//);
    const after = await fetchRaw(url);
    expect(upstream.server.count(/^\/extended\/v1\/search\//)).toBe(asked + 1);
    expect([after.status, JSON.parse(after.body.toString())]).toEqual([404, searchBody()]);
  });
});
