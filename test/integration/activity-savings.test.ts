/**
 * What learned freshness saves (issue 15), measured through real HTTP: 40 principals whose
 * histories are each read once per block, over 30 blocks in one burn block, each block touching
 * two of them. With block learning the untouched ones stay fresh across blocks (no upstream
 * request); without it every read after a block is a revalidation. The learner's own requests
 * are charged. The figures are printed; the test asserts only the direction and that every
 * answer was the upstream's.
 */
import { privateKeyToAddress, randomPrivateKey } from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/composition-root.js';
import { waitFor } from '../../testkit/index.js';
import { startActivityUpstream } from '../support/activity-upstream.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

const PRINCIPALS = Array.from({ length: 40 }, () => privateKeyToAddress(randomPrivateKey(), 'testnet'));
const BLOCKS = 30;

async function run(learn: boolean): Promise<{ reads: number; upstream: number; learner: number; hits: number }> {
  const upstream = await startActivityUpstream();
  const proxy: ProxyServer = await startTestProxy({ upstreamUrls: [upstream.url], overrides: { activity: { learnBlocks: learn, watchMempool: false } } });
  let reads = 0;
  let hits = 0;
  try {
    const readAll = async () => {
      for (const p of PRINCIPALS) {
        const path = `/extended/v1/address/${p}/transactions`;
        const served = await fetchRaw(proxy.url + path);
        reads++;
        if (served.headers.get('x-cache') === 'HIT') hits++;
        expect(served.body.toString()).toBe((await fetchRaw(upstream.url + path)).body.toString());
      }
    };
    await readAll();
    const before = upstream.count(/\/address\//);
    for (let block = 0; block < BLOCKS; block++) {
      const a = PRINCIPALS[(2 * block) % PRINCIPALS.length] as string;
      const b = PRINCIPALS[(2 * block + 1) % PRINCIPALS.length] as string;
      upstream.mine([upstream.transfer(a, b)]);
      const seen = await metricValue(proxy, 'stacks_proxy_activity_blocks_total');
      await proxy.tracker.pollOnce();
      await waitFor(async () => (await metricValue(proxy, 'stacks_proxy_activity_blocks_total')) > seen || !learn, { timeoutMs: 5_000, what: 'the learner' });
      await readAll();
    }
    // Our own oracle reads hit the upstream directly: count only what the proxy asked for.
    const proxyAsked = upstream.count(/\/address\//) - before - reads + PRINCIPALS.length;
    const learner = await metricValue(proxy, 'stacks_proxy_activity_upstream_requests_total', { source: 'learner' });
    return { reads: reads - PRINCIPALS.length, upstream: proxyAsked, learner, hits };
  } finally {
    await proxy.close();
    await upstream.close();
  }
}

describe('learned freshness, measured', () => {
  it('asks the upstream far less for address histories across blocks that did not touch them, learner requests included', async () => {
    const learned = await run(true);
    const revalidated = await run(false);
    console.log(
      `address-history reads after ${BLOCKS} blocks: ${learned.reads}; upstream requests with learning ${learned.upstream} + learner ${learned.learner}` +
        ` = ${learned.upstream + learned.learner}; without ${revalidated.upstream}`,
    );
    expect(learned.upstream + learned.learner).toBeLessThan(revalidated.upstream);
  });
});

async function watchRun(watch: boolean): Promise<{ reads: number; upstream: number; watcher: number }> {
  let clock = 1_800_000_000_000;
  const upstream = await startActivityUpstream();
  const proxy: ProxyServer = await startTestProxy({ upstreamUrls: [upstream.url], now: () => clock, overrides: { activity: { watchMempool: watch } } });
  let reads = 0;
  let oracle = 0;
  try {
    await proxy.mempoolWatcher?.pollOnce();
    const before = upstream.count(/\/address\//);
    for (let second = 0; second < SECONDS; second++) {
      clock += 1_000;
      await proxy.mempoolWatcher?.pollOnce();
      // Another wallet's transfer enters the mempool every fifth second: two principals change.
      if (second % 5 === 4) {
        upstream.addPending(PRINCIPALS[second % PRINCIPALS.length] as string, PRINCIPALS[(second + 1) % PRINCIPALS.length] as string);
        await proxy.mempoolWatcher?.pollOnce();
      }
      for (const p of PRINCIPALS) {
        const path = `/extended/v1/address/${p}/stx`;
        const served = await fetchRaw(proxy.url + path);
        reads++;
        // Mempool answers not seen by a watcher may be up to the TTL old: compared only with it on.
        if (watch) {
          oracle++;
          expect(served.body.toString()).toBe((await fetchRaw(upstream.url + path)).body.toString());
        }
      }
    }
    const watcher = await metricValue(proxy, 'stacks_proxy_activity_upstream_requests_total', { source: 'watcher' });
    return { reads, upstream: upstream.count(/\/address\//) - before - oracle, watcher };
  } finally {
    await proxy.close();
    await upstream.close();
  }
}
const SECONDS = 30;

describe('the mempool watcher, measured', () => {
  it('asks the upstream less for principal_mempool entries than their 2 s TTL does, its own polls included', async () => {
    const watched = await watchRun(true);
    const ttl = await watchRun(false);
    console.log(
      `balance reads over ${SECONDS} s (one per principal per second): ${watched.reads}; upstream requests with the watcher ${watched.upstream} + polls ${watched.watcher}` +
        ` = ${watched.upstream + watched.watcher}; with the TTL alone ${ttl.upstream}`,
    );
    expect(watched.upstream + watched.watcher).toBeLessThan(ttl.upstream);
  });
});
