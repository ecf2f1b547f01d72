/**
 * GET /v2/accounts/{p} (node RPC: no ETag, the confirmed balance and nonce at the tip) is not keyed
 * by the tip: its entry records the tip it was read at, and the block learner (principal
 * activity) carries it across a block that did not touch the principal. A block that did, or a
 * new burn block (PoX unlocks), makes it a miss, and every answer is the upstream's at that moment.
 */
import { describe, expect, it } from 'vitest';
import { startSurfaceUpstream } from '../../testkit/surface-upstream/index.js';
import { mineTransferTo, pollAndLearn } from '../support/block-learning.js';
import { useCleanups } from '../support/cleanups.js';
import { startTestProxy } from '../support/proxy-harness.js';

const { defer } = useCleanups();

describe('/v2/accounts across blocks (block learning)', () => {
  it('is served from cache across a learned block that did not touch the principal, and asked again after one that did', async () => {
    const upstream = await startSurfaceUpstream({ seed: 'accounts-learning', wallets: 4, bots: 1 });
    defer(() => upstream.close());
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
    defer(() => proxy.close());
    const watched = upstream.cast.wallets[0]!;
    const other = upstream.cast.wallets[1]!;
    const path = `/v2/accounts/${watched.address}?proof=0`;
    const read = async () => {
      const response = await fetch(proxy.url + path);
      const body = await response.text();
      // Whatever the cache did, the answer is the upstream's now.
      expect(body).toBe(upstream.answerAt(Date.now(), 'GET', path).body);
      return response.headers.get('x-cache');
    };
    const count = () => upstream.requests.filter((r) => r.url.startsWith('/v2/accounts/')).length;

    expect(await read()).toBe('MISS');
    expect(await read()).toBe('HIT');

    // Blocks that do not touch the watched wallet: served from cache across every learned one.
    let learnedHits = 0;
    for (let block = 0; block < 6; block++) {
      const burnBlock = await mineTransferTo(upstream, other.address);
      const learned = await pollAndLearn(proxy);
      const asked = count();
      const cache = await read();
      // A burn block may unlock STX without a transaction: balances are never carried across one.
      if (burnBlock) expect(cache).toBe('MISS');
      else if (learned === 'learned') {
        expect(cache).toBe('HIT');
        expect(count()).toBe(asked);
        learnedHits++;
      }
    }
    expect(learnedHits).toBeGreaterThan(0);

    // A block that pays the watched wallet: its balance changed, so the upstream is asked.
    await mineTransferTo(upstream, watched.address);
    await pollAndLearn(proxy);
    const asked = count();
    expect(await read()).toBe('MISS');
    expect(count()).toBe(asked + 1);
  });

  it('with a proof (the node default) is asked again at every block: the MARF proof is against the tip', async () => {
    const upstream = await startSurfaceUpstream({ seed: 'accounts-proof', wallets: 4, bots: 1 });
    defer(() => upstream.close());
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
    defer(() => proxy.close());
    const watched = upstream.cast.wallets[0]!;
    const other = upstream.cast.wallets[1]!;
    const count = () => upstream.requests.filter((r) => r.url.startsWith('/v2/accounts/')).length;
    for (const path of [`/v2/accounts/${watched.address}`, `/v2/accounts/${watched.address}?proof=1`]) {
      const read = async () => {
        const response = await fetch(proxy.url + path);
        const body = await response.text();
        expect(body).toBe(upstream.answerAt(Date.now(), 'GET', path).body);
        expect(JSON.parse(body)).toHaveProperty('balance_proof');
        return response.headers.get('x-cache');
      };
      expect(await read()).toBe('MISS');
      expect(await read()).toBe('HIT');
      for (let block = 0; block < 3; block++) {
        await mineTransferTo(upstream, other.address);
        await pollAndLearn(proxy);
        const asked = count();
        // The balance and nonce did not change, but the proof did: never served from an older tip.
        expect(await read()).toBe('MISS');
        expect(count()).toBe(asked + 1);
      }
    }
  });
});
