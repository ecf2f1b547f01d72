/**
 * Principal activity through real HTTP (issue 15): broadcasts the upstream accepts through the
 * proxy make their principals' entries (and the global mempool entries) stale at once, on this
 * instance and on another sharing Redis; block learning keeps an address route's entry fresh
 * across blocks that did not touch it, and refetches it after one that did, after a burn block,
 * a reorg, a gap, and a block whose events could not be read.
 */
import { makeSTXTokenTransfer, privateKeyToAddress, randomPrivateKey } from '@stacks/transactions';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BROADCAST_BODY_BYTES } from '../../src/chain/broadcast-principals.js';
import type { ProxyServer } from '../../src/composition-root.js';
import { startRedis, waitFor, type TestRedis } from '../../testkit/index.js';
import { startActivityUpstream, type ActivityUpstream } from '../support/activity-upstream.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

const senderKey = randomPrivateKey();
const SENDER = privateKeyToAddress(senderKey, 'testnet');
const [ALICE, BOB, CAROL, DAVE] = Array.from({ length: 4 }, () => privateKeyToAddress(randomPrivateKey(), 'testnet')) as [string, string, string, string];
const TOKEN = `${privateKeyToAddress(randomPrivateKey(), 'testnet')}.token`;
/** Contract names go up to 128 characters (stacks-core's ContractName): longer than 40 must work too. */
const longContract = (length: number): string => `${privateKeyToAddress(randomPrivateKey(), 'testnet')}.${'long-name-'.repeat(13).slice(0, length)}`;

const NO_SETTLING = { activity: { settleMs: 0 } };

let nonce = 0n;
async function signedTransfer(recipient = BOB): Promise<string> {
  const tx = await makeSTXTokenTransfer({ recipient, amount: 1n, senderKey, network: 'testnet', fee: 200n, nonce: nonce++ });
  return tx.serialize();
}

const broadcast = (proxy: ProxyServer, body: string | Buffer, contentType = 'application/json') =>
  fetchRaw(`${proxy.url}/v2/transactions`, {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });

/** A sender of its own: nothing cached about it yet. */
async function freshSender(): Promise<{ address: string; transfer: () => Promise<string> }> {
  const key = randomPrivateKey();
  return {
    address: privateKeyToAddress(key, 'testnet'),
    transfer: async () => (await makeSTXTokenTransfer({ recipient: BOB, amount: 1n, senderKey: key, network: 'testnet', fee: 200n, nonce: 0n })).serialize(),
  };
}
const pendingOf = (answer: { body: Buffer }): number => JSON.parse(answer.body.toString()).pending_txs as number;

const balancePath = (principal: string) => `/extended/v1/address/${principal}/stx`;
const historyPath = (principal: string) => `/extended/v1/address/${principal}/transactions`;

async function learnedOutcomes(proxy: ProxyServer): Promise<number> {
  return metricValue(proxy, 'stacks_proxy_activity_blocks_total');
}

/** Polls the tip once and waits until the learner settled what it saw (learned, unknown or voided). */
async function followTip(proxy: ProxyServer): Promise<void> {
  const before = await learnedOutcomes(proxy);
  await proxy.tracker.pollOnce();
  await waitFor(async () => (await learnedOutcomes(proxy)) > before, { timeoutMs: 5_000, what: 'the block learner to settle' });
}

describe('broadcast-aware invalidation (one instance)', () => {
  let upstream: ActivityUpstream;
  let proxy: ProxyServer;
  beforeAll(async () => {
    upstream = await startActivityUpstream();
    // No settling window: a read right after a broadcast is fresh again here (unit tests cover the window).
    proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides: NO_SETTLING });
  });
  afterAll(async () => {
    await proxy.close();
    await upstream.close();
  });

  it("after the sender's own broadcast, its next balance read goes to the upstream and the new value is served, never the old one", async () => {
    const first = await fetchRaw(proxy.url + balancePath(SENDER));
    expect(first.headers.get('x-cache')).toBe('MISS');
    expect(JSON.parse(first.body.toString()).pending_txs).toBe(0);
    expect((await fetchRaw(proxy.url + balancePath(SENDER))).headers.get('x-cache')).toBe('HIT');

    const body = JSON.stringify({ tx: await signedTransfer() });
    const sent = await broadcast(proxy, body);
    expect(sent.status).toBe(200);
    expect(upstream.lastBroadcast?.toString()).toBe(body); // observed, not changed
    const asked = upstream.count(/\/stx$/);
    const after = await fetchRaw(proxy.url + balancePath(SENDER));
    expect(upstream.count(/\/stx$/)).toBe(asked + 1);
    expect(after.headers.get('x-cache')).not.toBe('HIT');
    expect(JSON.parse(after.body.toString()).pending_txs).toBe(1);
    expect(await metricValue(proxy, 'stacks_proxy_broadcasts_observed_total', { outcome: 'decoded' })).toBe(1);
  });

  describe('a read after the broadcast never shares a fetch sent before it', () => {
    it('a read that starts after the broadcast, while a fetch from before it is in flight, gets the answer from after it', async () => {
      const sender = await freshSender();
      const held = upstream.holdNext(new RegExp(`/address/${sender.address}/stx$`));
      const readA = fetchRaw(proxy.url + balancePath(sender.address));
      await held.arrived;
      expect((await broadcast(proxy, JSON.stringify({ tx: await sender.transfer() }))).status).toBe(200);
      const readB = fetchRaw(proxy.url + balancePath(sender.address));
      const joined = () => metricValue(proxy, 'stacks_proxy_singleflight_joined_total');
      const joinedBefore = await joined();
      const askedBefore = upstream.count(new RegExp(`/address/${sender.address}/stx$`));
      // B is under way once it either joined A's flight or asked the upstream itself.
      await waitFor(async () => (await joined()) > joinedBefore || upstream.count(new RegExp(`/address/${sender.address}/stx$`)) > askedBefore, {
        timeoutMs: 5_000,
        what: 'read B to start',
      });
      held.release();
      expect(pendingOf(await readA)).toBe(0); // asked before the broadcast: the answer of then
      expect(pendingOf(await readB)).toBe(1); // the upstream's answer at B's moment
    });

    it('a read that joined before the broadcast and is answered after it asks once more instead of taking the old answer', async () => {
      const sender = await freshSender();
      const path = new RegExp(`/address/${sender.address}/stx$`);
      const held = upstream.holdNext(path);
      const joined = () => metricValue(proxy, 'stacks_proxy_singleflight_joined_total');
      const joinedBefore = await joined();
      const readA = fetchRaw(proxy.url + balancePath(sender.address));
      await held.arrived;
      const readB = fetchRaw(proxy.url + balancePath(sender.address));
      await waitFor(async () => (await joined()) > joinedBefore, { timeoutMs: 5_000, what: 'read B to join the flight' });
      expect((await broadcast(proxy, JSON.stringify({ tx: await sender.transfer() }))).status).toBe(200);
      held.release();
      expect(pendingOf(await readA)).toBe(0);
      expect(pendingOf(await readB)).toBe(1);
      expect(upstream.count(path)).toBe(2); // bounded: one extra fetch
    });
  });

  it('a broadcast sent as raw octet-stream bytes is decoded as well', async () => {
    await fetchRaw(proxy.url + balancePath(SENDER));
    expect((await fetchRaw(proxy.url + balancePath(SENDER))).headers.get('x-cache')).toBe('HIT');
    const tx = await makeSTXTokenTransfer({ recipient: BOB, amount: 1n, senderKey, network: 'testnet', fee: 200n, nonce: nonce++ });
    const sent = await fetchRaw(`${proxy.url}/v2/transactions`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: Buffer.from(tx.serializeBytes()),
    });
    expect(sent.status).toBe(200);
    const after = await fetchRaw(proxy.url + balancePath(SENDER));
    expect(after.headers.get('x-cache')).not.toBe('HIT');
    expect(JSON.parse(after.body.toString()).pending_txs).toBe(2);
  });

  it("the recipient's entries and global mempool entries (a transaction not found yet) stop being fresh too", async () => {
    const missingTx = `/extended/v1/tx/0x${'ab'.repeat(32)}`;
    await fetchRaw(proxy.url + balancePath(BOB));
    await fetchRaw(proxy.url + missingTx);
    expect((await fetchRaw(proxy.url + balancePath(BOB))).headers.get('x-cache')).toBe('HIT');
    expect((await fetchRaw(proxy.url + missingTx)).headers.get('x-cache')).toBe('HIT');
    expect((await broadcast(proxy, JSON.stringify({ tx: await signedTransfer() }))).status).toBe(200);
    expect((await fetchRaw(proxy.url + balancePath(BOB))).headers.get('x-cache')).not.toBe('HIT');
    expect((await fetchRaw(proxy.url + missingTx)).headers.get('x-cache')).not.toBe('HIT');
  });

  it("a broadcast the upstream rejects changes nothing; one it accepts but the proxy cannot decode changes every principal's entries and the whole mempool", async () => {
    const missingTx = `/extended/v1/tx/0x${'cd'.repeat(32)}`;
    await fetchRaw(proxy.url + balancePath(SENDER));
    await fetchRaw(proxy.url + missingTx);
    expect((await broadcast(proxy, JSON.stringify({ tx: 'beef' }))).status).toBe(400);
    expect(await metricValue(proxy, 'stacks_proxy_broadcasts_observed_total', { outcome: 'rejected' })).toBe(1);
    expect((await fetchRaw(proxy.url + balancePath(SENDER))).headers.get('x-cache')).toBe('HIT');
    expect((await fetchRaw(proxy.url + missingTx)).headers.get('x-cache')).toBe('HIT');

    upstream.acceptUndecodable = true;
    try {
      expect((await broadcast(proxy, JSON.stringify({ tx: 'beef' }))).status).toBe(200);
    } finally {
      upstream.acceptUndecodable = false;
    }
    expect(await metricValue(proxy, 'stacks_proxy_broadcasts_observed_total', { outcome: 'undecodable' })).toBe(1);
    expect((await fetchRaw(proxy.url + missingTx)).headers.get('x-cache')).not.toBe('HIT');
    // Its sender is unknown: it could be anyone, so no principal's entry is served as it was.
    const asked = upstream.count(/\/stx$/);
    expect((await fetchRaw(proxy.url + balancePath(SENDER))).headers.get('x-cache')).not.toBe('HIT');
    expect(upstream.count(/\/stx$/)).toBe(asked + 1);
    expect((await fetchRaw(proxy.url + balancePath(SENDER))).headers.get('x-cache')).toBe('HIT');
  });

  it('a body larger than the node takes is forwarded whole but not decoded: every principal and the whole mempool count as changed', async () => {
    const missingTx = `/extended/v1/tx/0x${'12'.repeat(32)}`;
    await fetchRaw(proxy.url + missingTx);
    expect((await fetchRaw(proxy.url + missingTx)).headers.get('x-cache')).toBe('HIT');
    const huge = Buffer.alloc(MAX_BROADCAST_BODY_BYTES + 1, 0x61);
    upstream.acceptUndecodable = true;
    try {
      expect((await broadcast(proxy, huge, 'application/octet-stream')).status).toBe(200);
    } finally {
      upstream.acceptUndecodable = false;
    }
    expect(upstream.lastBroadcast?.equals(huge)).toBe(true);
    expect(await metricValue(proxy, 'stacks_proxy_broadcasts_observed_total', { outcome: 'undecodable' })).toBe(2);
    expect((await fetchRaw(proxy.url + missingTx)).headers.get('x-cache')).not.toBe('HIT');
  });
});

describe('broadcast-aware invalidation across instances sharing Redis', () => {
  let upstream: ActivityUpstream;
  let redis: TestRedis;
  let a: ProxyServer;
  let b: ProxyServer;
  beforeAll(async () => {
    upstream = await startActivityUpstream();
    redis = await startRedis();
    a = await startTestProxy({ upstreamUrls: [upstream.url], redisUrl: redis.url, overrides: NO_SETTLING });
    b = await startTestProxy({ upstreamUrls: [upstream.url], redisUrl: redis.url, overrides: NO_SETTLING });
    await Promise.all([a.activityChannelSubscribed, b.activityChannelSubscribed]);
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await upstream.close();
    await redis.stop();
  });

  it("a broadcast through A makes B ask the upstream for the sender's balance, and serve the new one", async () => {
    expect((await fetchRaw(b.url + balancePath(SENDER))).headers.get('x-cache')).toBe('MISS');
    expect((await fetchRaw(b.url + balancePath(SENDER))).headers.get('x-cache')).toBe('HIT');
    const pendingBefore = JSON.parse((await fetchRaw(b.url + balancePath(SENDER))).body.toString()).pending_txs as number;

    expect((await broadcast(a, JSON.stringify({ tx: await signedTransfer() }))).status).toBe(200);
    await waitFor(async () => (b.activityAnnouncements?.received ?? 0) === 1, { timeoutMs: 5_000, what: 'B to hear of the broadcast' });

    const asked = upstream.count(/\/stx$/);
    const after = await fetchRaw(b.url + balancePath(SENDER));
    expect(upstream.count(/\/stx$/)).toBe(asked + 1);
    expect(JSON.parse(after.body.toString()).pending_txs).toBe(pendingBefore + 1);
    expect(await metricValue(a, 'stacks_proxy_activity_announcements_total', { direction: 'sent' })).toBe(1);
    expect(await metricValue(b, 'stacks_proxy_activity_announcements_total', { direction: 'received' })).toBe(1);
    // A does not apply its own announcement a second time.
    expect(a.activityAnnouncements?.received).toBe(0);
  });

  it("a read on B after a broadcast through B does not take A's answer from a fetch A sent before it (shared single-flight)", async () => {
    const sender = await freshSender();
    const path = new RegExp(`/address/${sender.address}/stx$`);
    const held = upstream.holdNext(path);
    const readA = fetchRaw(a.url + balancePath(sender.address)); // A holds the shared lock while it fetches
    await held.arrived;
    expect((await broadcast(b, JSON.stringify({ tx: await sender.transfer() }))).status).toBe(200);
    // Whether B waits on A's lock or comes after A's entry landed, it meets A's answer in Redis.
    const readB = fetchRaw(b.url + balancePath(sender.address));
    held.release();
    expect(pendingOf(await readA)).toBe(0);
    expect(pendingOf(await readB)).toBe(1);
  });

  it("a broadcast to a contract principal with a 45-character name through A makes B stop serving the sender's old balance", async () => {
    await fetchRaw(b.url + balancePath(SENDER));
    expect((await fetchRaw(b.url + balancePath(SENDER))).headers.get('x-cache')).toBe('HIT');
    const pendingBefore = JSON.parse((await fetchRaw(b.url + balancePath(SENDER))).body.toString()).pending_txs as number;
    const heard = b.activityAnnouncements?.received ?? 0;

    expect((await broadcast(a, JSON.stringify({ tx: await signedTransfer(longContract(45)) }))).status).toBe(200);
    await waitFor(async () => (b.activityAnnouncements?.received ?? 0) > heard, { timeoutMs: 5_000, what: 'B to hear of the broadcast' });

    const after = await fetchRaw(b.url + balancePath(SENDER));
    expect(after.headers.get('x-cache')).not.toBe('HIT');
    expect(JSON.parse(after.body.toString()).pending_txs).toBe(pendingBefore + 1);
  });

  it("an accepted broadcast A cannot decode makes B stop serving every principal's entries (the sender is unknown)", async () => {
    await fetchRaw(b.url + balancePath(CAROL));
    expect((await fetchRaw(b.url + balancePath(CAROL))).headers.get('x-cache')).toBe('HIT');
    const heard = b.activityAnnouncements?.received ?? 0;
    upstream.acceptUndecodable = true;
    try {
      expect((await broadcast(a, JSON.stringify({ tx: 'beef' }))).status).toBe(200);
    } finally {
      upstream.acceptUndecodable = false;
    }
    await waitFor(async () => (b.activityAnnouncements?.received ?? 0) > heard, { timeoutMs: 5_000, what: 'B to hear of the broadcast' });
    const asked = upstream.count(/\/stx$/);
    expect((await fetchRaw(b.url + balancePath(CAROL))).headers.get('x-cache')).not.toBe('HIT');
    expect(upstream.count(/\/stx$/)).toBe(asked + 1);
  });
});

describe('block learning', () => {
  let upstream: ActivityUpstream;
  let proxy: ProxyServer;
  beforeAll(async () => {
    upstream = await startActivityUpstream();
    proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
  });
  afterAll(async () => {
    await proxy.close();
    await upstream.close();
  });
  afterEach(() => {
    upstream.failing = undefined;
  });

  /** Reads the history of `principal` and tells whether the upstream was asked for it. */
  async function read(principal: string): Promise<{ asked: boolean; cache: string | null; confirmed: number }> {
    const before = upstream.count(new RegExp(`/address/${principal}/transactions`));
    const answer = await fetchRaw(proxy.url + historyPath(principal));
    const asked = upstream.count(new RegExp(`/address/${principal}/transactions`)) > before;
    return { asked, cache: answer.headers.get('x-cache'), confirmed: JSON.parse(answer.body.toString()).confirmed_txs as number };
  }

  /** ALICE's entry validated at the current tip, and a learned block that does not touch her. */
  async function aliceCachedAndOneQuietBlock(): Promise<void> {
    await read(ALICE);
    upstream.mine([]);
    await followTip(proxy);
    expect((await read(ALICE)).asked).toBe(false);
  }

  it('keeps an entry HIT across a block that did not touch its principal, and refetches one about a principal it touched', async () => {
    // Learning started at the tip the proxy found at start-up.
    expect((await read(ALICE)).cache).toBe('MISS');
    expect((await read(BOB)).cache).toBe('MISS');
    upstream.mine([upstream.transfer(BOB, CAROL)]);
    await followTip(proxy);
    const alice = await read(ALICE);
    expect(alice).toMatchObject({ asked: false, cache: 'HIT' });
    const bob = await read(BOB);
    expect(bob.asked).toBe(true);
    expect(bob.confirmed).toBeGreaterThan(0); // the new answer, not the one from before the block
    expect(await metricValue(proxy, 'stacks_proxy_activity_blocks_total', { outcome: 'learned' })).toBeGreaterThanOrEqual(1);
    expect(await metricValue(proxy, 'stacks_proxy_activity_upstream_requests_total', { source: 'learner' })).toBeGreaterThanOrEqual(2);
  });

  it('refetches an entry about a principal a block touched only through an event', async () => {
    await read(DAVE);
    upstream.mine([upstream.contractCallCrediting(CAROL, TOKEN, DAVE)]);
    await followTip(proxy);
    const dave = await read(DAVE);
    expect(dave.asked).toBe(true);
    expect(dave.confirmed).toBe(1);
  });

  it('refetches an entry about a contract principal with a 50-character name a block touched', async () => {
    const contract = longContract(50);
    expect((await read(contract)).cache).toBe('MISS');
    expect((await read(contract)).cache).toBe('HIT');
    upstream.mine([upstream.contractCallCrediting(CAROL, contract, DAVE)]);
    await followTip(proxy);
    const after = await read(contract);
    expect(after.asked).toBe(true);
    expect(after.confirmed).toBe(1);
  });

  it('refetches after a burn block (PoX unlocks change balances without a transaction)', async () => {
    await aliceCachedAndOneQuietBlock();
    upstream.newTenure();
    await followTip(proxy);
    expect((await read(ALICE)).asked).toBe(true);
  });

  it('refetches after a reorg', async () => {
    await aliceCachedAndOneQuietBlock();
    upstream.reorg();
    await followTip(proxy);
    expect((await read(ALICE)).asked).toBe(true);
  });

  it('refetches after a gap (a block the proxy never saw)', async () => {
    await aliceCachedAndOneQuietBlock();
    upstream.mine([]);
    upstream.mine([]);
    await followTip(proxy);
    expect((await read(ALICE)).asked).toBe(true);
  });

  it('reads a block of several pages of transactions in full', async () => {
    await aliceCachedAndOneQuietBlock();
    await read(CAROL);
    const pages = upstream.count(/\/transactions\?limit=50/);
    upstream.mine([...Array.from({ length: 60 }, () => upstream.transfer(BOB, DAVE)), upstream.transfer(BOB, CAROL)]);
    await followTip(proxy);
    expect(upstream.count(/\/transactions\?limit=50/)).toBe(pages + 2);
    expect((await read(ALICE)).asked).toBe(false);
    expect((await read(CAROL)).asked).toBe(true); // named on the second page only
  });

  it('refetches after a block whose events could not be read', async () => {
    await aliceCachedAndOneQuietBlock();
    upstream.failing = /\/tx\/multiple/;
    upstream.mine([upstream.transfer(BOB, CAROL)]);
    await followTip(proxy);
    expect(await metricValue(proxy, 'stacks_proxy_activity_blocks_total', { outcome: 'unknown' })).toBeGreaterThanOrEqual(1);
    expect((await read(ALICE)).asked).toBe(true);
  });
});

describe('the mempool watcher', () => {
  let upstream: ActivityUpstream;
  let proxy: ProxyServer;
  let clock = 1_800_000_000_000;
  const ERIN = privateKeyToAddress(randomPrivateKey(), 'testnet');
  const FRANK = privateKeyToAddress(randomPrivateKey(), 'testnet');
  beforeAll(async () => {
    upstream = await startActivityUpstream();
    proxy = await startTestProxy({ upstreamUrls: [upstream.url], now: () => clock });
  });
  afterAll(async () => {
    await proxy.close();
    await upstream.close();
  });

  const cacheOf = async (path: string) => (await fetchRaw(proxy.url + path)).headers.get('x-cache');
  const watch = async () => proxy.mempoolWatcher?.pollOnce();

  it('keeps a principal_mempool entry fresh past its TTL while each poll finds the mempool unchanged (304), and never on an old poll', async () => {
    expect(proxy.mempoolWatcher).toBeDefined();
    await watch(); // the first poll: changed in ways not known
    expect(await cacheOf(balancePath(ERIN))).toBe('MISS');
    clock += 4_500; // past the 2 s mempool TTL and its 2 s of stale-while-revalidate
    expect(await cacheOf(balancePath(ERIN))).toBe('REVALIDATED'); // no poll since: the TTL rules
    const asked = upstream.count(/\/tx\/mempool\?/);
    await watch();
    expect(upstream.count(/\/tx\/mempool\?/)).toBe(asked + 1);
    clock += 1_500;
    await watch(); // a 304
    clock += 1_500;
    expect(await cacheOf(balancePath(ERIN))).toBe('HIT'); // 3 s old: past its TTL, but watched
    clock += 2_000; // the latest poll is now older than the mempool TTL
    expect(await cacheOf(balancePath(ERIN))).toBe('REVALIDATED');
    expect(await metricValue(proxy, 'stacks_proxy_activity_upstream_requests_total', { source: 'watcher' })).toBe(upstream.count(/\/tx\/mempool\?/));
  });

  it("a change naming other principals leaves the entry fresh; one naming its principal, or the global mempool's entries, does not", async () => {
    const missingTx = `/extended/v1/tx/0x${'ef'.repeat(32)}`;
    await watch();
    await fetchRaw(proxy.url + balancePath(ERIN));
    await fetchRaw(proxy.url + balancePath(FRANK));
    await fetchRaw(proxy.url + missingTx);
    clock += 4_500;
    upstream.addPending(FRANK, BOB);
    await watch();
    clock += 100;
    expect(await cacheOf(balancePath(ERIN))).toBe('HIT');
    const frank = await fetchRaw(proxy.url + balancePath(FRANK));
    expect(frank.headers.get('x-cache')).toBe('MISS'); // asked again, and answered in full: the new pending count
    expect(JSON.parse(frank.body.toString()).pending_txs).toBe(1);
    expect(await cacheOf(missingTx)).toBe('MISS');
  });

  it('a mempool larger than one answer is read in pages of one mempool ETag: a change naming others still leaves the entry fresh', async () => {
    await watch();
    await fetchRaw(proxy.url + balancePath(ERIN));
    clock += 4_500;
    for (let i = 0; i < 51; i++) upstream.addPending(FRANK, BOB);
    const asked = upstream.count(/\/tx\/mempool\?/);
    await watch();
    expect(upstream.count(/\/tx\/mempool\?/)).toBe(asked + 2); // two pages of 50
    expect(upstream.requests.at(-1)?.url).toMatch(/offset=50$/);
    clock += 100;
    expect(await cacheOf(balancePath(ERIN))).toBe('HIT');
    expect(await metricValue(proxy, 'stacks_proxy_activity_upstream_requests_total', { source: 'watcher' })).toBe(upstream.count(/\/tx\/mempool\?/));
  });

  it('pages of two different mempools (the ETag moved between them) are a change of unknown extent', async () => {
    await watch();
    await fetchRaw(proxy.url + balancePath(ERIN));
    clock += 4_500;
    upstream.addPending(FRANK, BOB); // a change naming others only, seen...
    upstream.beforeAnswer = (url) => {
      // ...but a transaction enters between the first page and the second.
      if (url.includes('offset=50')) upstream.addPending(FRANK, BOB);
    };
    try {
      await watch();
    } finally {
      upstream.beforeAnswer = undefined;
    }
    expect(upstream.requests.at(-1)?.url).toMatch(/offset=50$/);
    clock += 100;
    expect(await cacheOf(balancePath(ERIN))).toBe('REVALIDATED');
  });

  it('a mempool larger than activity.watcherMaxPages pages changes every mempool entry, at the cost of one request', async () => {
    await watch();
    await fetchRaw(proxy.url + balancePath(ERIN));
    clock += 4_500;
    for (let i = 0; i < 200; i++) upstream.addPending(FRANK, BOB); // more than 4 pages of 50
    const asked = upstream.count(/\/tx\/mempool\?/);
    await watch();
    expect(upstream.count(/\/tx\/mempool\?/)).toBe(asked + 1);
    clock += 100;
    expect(await cacheOf(balancePath(ERIN))).toBe('REVALIDATED');
  });
});

describe('block learning within its bounds', () => {
  let upstream: ActivityUpstream;
  let proxy: ProxyServer;
  beforeAll(async () => {
    upstream = await startActivityUpstream();
    proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides: { activity: { learnerMaxTxPages: 1 } } });
  });
  afterAll(async () => {
    await proxy.close();
    await upstream.close();
  });

  it('a block with more transactions than the pages it may read is unknown: every entry learned on is asked for again', async () => {
    await fetchRaw(proxy.url + historyPath(ALICE));
    upstream.mine([]);
    await followTip(proxy);
    expect((await fetchRaw(proxy.url + historyPath(ALICE))).headers.get('x-cache')).toBe('HIT');
    upstream.mine(Array.from({ length: 60 }, () => upstream.transfer(BOB, DAVE)));
    await followTip(proxy);
    expect(await metricValue(proxy, 'stacks_proxy_activity_blocks_total', { outcome: 'unknown' })).toBe(1);
    expect((await fetchRaw(proxy.url + historyPath(ALICE))).headers.get('x-cache')).not.toBe('HIT');
  });
});
