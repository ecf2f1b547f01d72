/**
 * The proxy's own upstream requests, counted by purpose (issue 28): what the metric says for each
 * purpose this run exercises is what the counting fake upstream received for it, and a contract's
 * record is read once for every client asking its interface across blocks (no repeated contract
 * lookups: deploy evidence remembers the deploy tx id).
 */
import { describe, expect, it } from 'vitest';
import { startSurfaceUpstream, type CountedRequest } from '../../testkit/surface-upstream/index.js';
import { mineTransferTo, pollAndLearn } from '../support/block-learning.js';
import { useCleanups } from '../support/cleanups.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

const { defer } = useCleanups();

const own = (purpose: string) => ({ purpose });

describe("the proxy's own upstream requests", () => {
  it('are counted by purpose as the upstream received them, and a contract record is read once across blocks', async () => {
    const upstream = await startSurfaceUpstream({ seed: 'own-requests', wallets: 4, bots: 1 });
    defer(() => upstream.close());
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
    defer(() => proxy.close());
    const deployer = upstream.cast.deployer.address;
    const interfacePath = `/v2/contracts/interface/${deployer}/counter`;
    const contractRecord = (r: CountedRequest) => r.url.startsWith(`/extended/v1/contract/${deployer}.counter`);

    const bodies = new Set<string>();
    for (let block = 0; block < 4; block++) {
      for (let client = 0; client < 3; client++) {
        const response = await fetch(proxy.url + interfacePath);
        expect(response.status).toBe(200);
        bodies.add(await response.text());
      }
      await mineTransferTo(upstream, upstream.cast.wallets[1]!.address);
      await pollAndLearn(proxy);
    }
    // The interface is the upstream's, whatever was served.
    expect([...bodies]).toEqual([upstream.answerAt(Date.now(), 'GET', interfacePath).body]);
    expect(upstream.count(contractRecord)).toBe(1);
    // Its deploy is deep in the fake's history: final evidence, so the interface itself is immutable and read once too.
    expect(upstream.count((r) => r.url === interfacePath)).toBe(1);

    const tipPolls = upstream.count((r) => r.url === '/extended');
    expect(tipPolls).toBeGreaterThan(0);
    expect(await metricValue(proxy, 'stacks_proxy_own_upstream_requests_total', own('tip_poll'))).toBe(tipPolls);
    // The learner's requests are the activity metric's too: both count the same sends.
    const learner = await metricValue(proxy, 'stacks_proxy_own_upstream_requests_total', own('block_learner'));
    expect(learner).toBeGreaterThan(0);
    expect(learner).toBe(await metricValue(proxy, 'stacks_proxy_activity_upstream_requests_total', { source: 'learner' }));
    const watcher = await metricValue(proxy, 'stacks_proxy_own_upstream_requests_total', own('mempool_watcher'));
    expect(watcher).toBe(upstream.count((r) => r.url.startsWith('/extended/v1/tx/mempool?limit=50')));
    // Contract lookups: the record once, and the deploy transaction's reads that went upstream.
    const lookups = await metricValue(proxy, 'stacks_proxy_own_upstream_requests_total', own('contract_lookup'));
    expect(lookups).toBeGreaterThanOrEqual(1);
    expect(lookups).toBeLessThanOrEqual(1 + upstream.count((r) => r.url.startsWith('/extended/v1/tx/0x')));
  });
});
