/**
 * GET /extended/v1/tokens/nft/holdings?principal= (chain_tip ETag, tagged with the principal): a
 * holdings answer changes only when a block's NFT events name the principal (a mint names the
 * recipient, a transfer both parties, a burn the sender), so block learning carries it across
 * blocks that did not, burn blocks included (no PoX state in it), and every answer is the
 * upstream's at that moment.
 */
import { Cl } from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import { signContractCall, startSurfaceUpstream } from '../../testkit/surface-upstream/index.js';
import { mineTransferTo, mineWith, pollAndLearn } from '../support/block-learning.js';
import { useCleanups } from '../support/cleanups.js';
import { startTestProxy } from '../support/proxy-harness.js';

const { defer } = useCleanups();

describe('NFT holdings across blocks (block learning)', () => {
  it('is served from cache across learned blocks that did not touch the principal, and asked again after a mint to it', async () => {
    const upstream = await startSurfaceUpstream({ seed: 'nft-holdings-learning', wallets: 6, bots: 1 });
    defer(() => upstream.close());
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
    defer(() => proxy.close());
    // Wallet 0 got a collectible at genesis (one wallet in five does).
    const watched = upstream.cast.wallets[0]!;
    const other = upstream.cast.wallets[1]!;
    const path = `/extended/v1/tokens/nft/holdings?principal=${watched.address}&limit=50`;
    const read = async () => {
      const response = await fetch(proxy.url + path);
      const body = await response.text();
      expect(body).toBe(upstream.answerAt(Date.now(), 'GET', path).body);
      return { cache: response.headers.get('x-cache'), total: (JSON.parse(body) as { total: number }).total };
    };
    const count = () => upstream.requests.filter((r) => r.url.startsWith('/extended/v1/tokens/nft/holdings')).length;

    expect((await read()).cache).toBe('MISS');
    expect((await read()).total).toBe(1);

    let learnedHits = 0;
    for (let block = 0; block < 6; block++) {
      await mineTransferTo(upstream, other.address);
      const learned = await pollAndLearn(proxy);
      const asked = count();
      const { cache } = await read();
      // NFT custody never moves with a burn block alone: learning holds across one.
      if (learned === 'learned') {
        expect(cache).toBe('HIT');
        expect(count()).toBe(asked);
        learnedHits++;
      }
    }
    expect(learnedHits).toBeGreaterThan(0);

    // A block minting a collectible to the watched wallet: its holdings changed, so the upstream is asked.
    const deployer = upstream.cast.deployer;
    const nonce = upstream.current().accounts.get(deployer.address)?.nonce ?? 0;
    mineWith(upstream, await signContractCall(deployer, `${deployer.address}.collectibles`, 'mint', [Cl.principal(watched.address)], nonce, 1_000n));
    await pollAndLearn(proxy);
    const asked = count();
    const after = await read();
    expect(after.cache).not.toBe('HIT');
    expect(after.total).toBe(2);
    expect(count()).toBe(asked + 1);
  });
});
