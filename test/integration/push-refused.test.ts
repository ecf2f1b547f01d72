import { describe, expect, it } from 'vitest';
import { startFakeUpstream } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { startTestProxy } from '../support/proxy-harness.js';

describe('scratch', () => {
  const { defer } = useCleanups();
  it('counts upgrades', async () => {
    const upstream = await startFakeUpstream({ rpcChannel: true });
    defer(() => upstream.close());
    upstream.setFailing({ status: 404 }, /^\/extended\/v1\/ws/);
    const proxy = await startTestProxy({
      upstreamUrls: [upstream.url],
      overrides: { chainTip: { pollIntervalMs: 200 }, live: { push: { enabled: true } } },
    });
    defer(() => proxy.close());
    const t0 = Date.now();
    const seen: number[] = [];
    let last = 0;
    while (Date.now() - t0 < 8000) {
      const n = upstream.count((r) => r.method === 'UPGRADE');
      if (n > last) { seen.push(Date.now() - t0); last = n; }
      await new Promise((r) => setTimeout(r, 10));
    }
    console.log('upgrades at', seen, 'polls', upstream.count('/extended'));
    expect(true).toBe(true);
  }, 20000);
});
