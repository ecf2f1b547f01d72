/**
 * One upstream request per distinct node RPC read per block (issue 28), whatever the number of
 * clients: call-read (keyed by the canonical body and the tip), map_entry, data_var, the fee
 * estimate (canonical body and tip) and the transfer fee rate. N clients at once and then one
 * after another within a block cost the upstream one request per distinct read; the next block
 * one more; a call pinned with `?tip=` to a final block one request ever. Through real HTTP
 * against the counting surface upstream, in one instance and in two instances sharing Redis
 * (whose single-flight spans instances).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../testkit/index.js';
import { startSurfaceUpstream, type SurfaceUpstream } from '../../testkit/surface-upstream/index.js';
import { useCleanups } from '../support/cleanups.js';
import { fetchRaw } from '../support/http.js';
import { askedPerPath, distinctPerPath, nodeRpcReads, type NodeRpcRead } from '../support/node-rpc-reads.js';
import { startTestProxy } from '../support/proxy-harness.js';
import type { ProxyServer } from '../../src/composition-root.js';

const { defer } = useCleanups();

type Read = NodeRpcRead;

async function ask(proxy: ProxyServer, read: Read): Promise<{ status: number; body: string }> {
  const response = await fetchRaw(
    proxy.url + read.path,
    read.body === undefined ? {} : { method: 'POST', body: read.body, headers: { 'content-type': 'application/json' } },
  );
  return { status: response.status, body: response.body.toString() };
}

/** `clients` concurrent readers of every read, spread over `proxies`, then `clients` one after another. */
async function stampede(proxies: ProxyServer[], reads: Read[], clients: number, upstream: SurfaceUpstream): Promise<void> {
  const now = Date.now();
  const check = (read: Read, got: { status: number; body: string }) => {
    expect(got.status).toBe(200);
    // Every answer is the upstream's at this block.
    expect(got.body).toBe(upstream.answerAt(now, read.method, read.path, read.body).body);
  };
  await Promise.all(
    reads.flatMap((read) =>
      Array.from({ length: clients }, async (_, i) => {
        check(read, await ask(proxies[i % proxies.length] as ProxyServer, read));
      }),
    ),
  );
  for (let i = 0; i < clients; i++) for (const read of reads) check(read, await ask(proxies[i % proxies.length] as ProxyServer, read));
}

async function newBlock(upstream: SurfaceUpstream, proxies: ProxyServer[]): Promise<void> {
  upstream.mine();
  for (const proxy of proxies) await proxy.tracker.pollOnce();
}

async function onePerBlock(proxies: ProxyServer[], upstream: SurfaceUpstream): Promise<void> {
  const reads = nodeRpcReads(upstream);
  const distinct = distinctPerPath(reads);
  for (const proxy of proxies) await proxy.tracker.pollOnce();
  await stampede(proxies, reads, 8, upstream);
  expect(askedPerPath(upstream, distinct.keys())).toEqual(distinct);

  await newBlock(upstream, proxies);
  await stampede(proxies, reads, 8, upstream);
  expect(askedPerPath(upstream, distinct.keys())).toEqual(new Map([...distinct].map(([path, n]) => [path, 2 * n])));
}

/** A call pinned with `?tip=` to a final block: one upstream request ever, across blocks and proxies. */
async function pinnedOnce(proxies: ProxyServer[], upstream: SurfaceUpstream): Promise<void> {
  const s = upstream.current();
  const final = s.blocks[2];
  expect(final).toBeDefined();
  const deployer = upstream.cast.deployer.address;
  const read: Read = {
    method: 'POST',
    path: `/v2/contracts/call-read/${deployer}/wallet-token/get-total-supply?tip=${final!.indexHash.replace(/^0x/, '')}`,
    body: JSON.stringify({ sender: upstream.cast.wallets[0]!.address, arguments: [] }),
  };
  for (const proxy of proxies) await proxy.tracker.pollOnce();
  const first = await ask(proxies[0] as ProxyServer, read);
  expect(first.status).toBe(200);
  for (let block = 0; block < 3; block++) {
    await newBlock(upstream, proxies);
    await stampede(proxies, [read], 4, upstream);
  }
  expect(askedPerPath(upstream, [read.path]).get(read.path)).toBe(1);
}

describe('one upstream request per distinct read per block: one process', () => {
  it('call-read, map_entry, data_var and both fee reads: one request each per block, whatever the clients', async () => {
    const upstream = await startSurfaceUpstream({ seed: 'one-per-block', wallets: 4, bots: 1 });
    defer(() => upstream.close());
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
    defer(() => proxy.close());
    await onePerBlock([proxy], upstream);
  });

  it('a call-read pinned to a final block is asked once, ever', async () => {
    const upstream = await startSurfaceUpstream({ seed: 'one-per-block-pinned', wallets: 4, bots: 1 });
    defer(() => upstream.close());
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
    defer(() => proxy.close());
    await pinnedOnce([proxy], upstream);
  });
});

describe('one upstream request per distinct read per block: two instances sharing Redis', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  const pair = async (seed: string) => {
    const upstream = await startSurfaceUpstream({ seed, wallets: 4, bots: 1 });
    defer(() => upstream.close());
    const proxies = await Promise.all(
      [0, 1].map(() => startTestProxy({ upstreamUrls: [upstream.url], redisUrl: redis.url, overrides: { cache: { keyPrefix: seed } } })),
    );
    for (const proxy of proxies) defer(() => proxy.close());
    return { upstream, proxies };
  };

  it('clients spread over both instances cost one request per distinct read per block', async () => {
    const { upstream, proxies } = await pair('one-per-block-redis');
    await onePerBlock(proxies, upstream);
  });

  it('a call-read pinned to a final block is asked once, ever, by either instance', async () => {
    const { upstream, proxies } = await pair('one-per-block-redis-pinned');
    await pinnedOnce(proxies, upstream);
  });
});
