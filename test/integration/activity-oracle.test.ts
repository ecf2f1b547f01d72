/**
 * The guarantee of principal activity (issue 15), as a property: whatever sequence of blocks
 * (touching random principals, through transactions or events only), burn blocks, reorgs, gaps,
 * broadcasts through the proxy, mempool changes the watcher polled, and time, every answer the
 * proxy gives for an address route is byte for byte the one the upstream gives at that moment.
 * Every change in these sequences is one the proxy can see (a broadcast it forwarded, a tip it
 * followed, a mempool poll): the TTLs' own allowance for changes not seen yet is not used here,
 * so learned freshness (rule c), broadcast invalidation (a, b) and the watcher (d) must carry it.
 */
import fc from 'fast-check';
import { makeSTXTokenTransfer, privateKeyToAddress, randomPrivateKey } from '@stacks/transactions';
import { describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/composition-root.js';
import { waitFor } from '../../testkit/index.js';
import { startActivityUpstream, type ActivityUpstream } from '../support/activity-upstream.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

const KEYS = Array.from({ length: 2 }, () => randomPrivateKey());
const SIGNERS = KEYS.map((key) => privateKeyToAddress(key, 'testnet'));
const OTHERS = Array.from({ length: 2 }, () => privateKeyToAddress(randomPrivateKey(), 'testnet'));
const PRINCIPALS = [...SIGNERS, ...OTHERS];
const TOKEN = `${OTHERS[0]}.token`;
// The pending list (family `mempool`, movesWith listed_transactions) and the nonces (sent_transactions) survive burn blocks; the balance does not.
const ROUTES = (p: string) => [
  `/extended/v1/address/${p}/stx`,
  `/extended/v1/address/${p}/transactions`,
  `/extended/v1/tx/mempool?address=${p}&limit=50`,
  `/extended/v1/address/${p}/nonces`,
];

type Step =
  | { kind: 'transfer'; from: number; to: number }
  | { kind: 'event'; to: number }
  | { kind: 'quiet' }
  | { kind: 'burn' }
  | { kind: 'reorg' }
  | { kind: 'gap' }
  | { kind: 'broadcast'; from: number; to: number }
  | { kind: 'pending'; from: number; to: number }
  | { kind: 'time'; ms: number };

const who = fc.integer({ min: 0, max: PRINCIPALS.length - 1 });
const STEP: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('transfer' as const), from: who, to: who }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('event' as const), to: who }) },
  { weight: 3, arbitrary: fc.constant({ kind: 'quiet' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'burn' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reorg' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'gap' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('broadcast' as const), from: fc.integer({ min: 0, max: SIGNERS.length - 1 }), to: who }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('pending' as const), from: who, to: who }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('time' as const), ms: fc.integer({ min: 0, max: 5_000 }) }) },
);

async function followTip(proxy: ProxyServer): Promise<void> {
  const before = await metricValue(proxy, 'stacks_proxy_activity_blocks_total');
  await proxy.tracker.pollOnce();
  await waitFor(async () => (await metricValue(proxy, 'stacks_proxy_activity_blocks_total')) > before, { timeoutMs: 5_000, what: 'the block learner' });
  // The watcher polls at the tip's cadence: a poll after each block, as the running proxy makes.
  await proxy.mempoolWatcher?.pollOnce();
}

let nonce = 0n;
async function apply(step: Step, upstream: ActivityUpstream, proxy: ProxyServer): Promise<void> {
  switch (step.kind) {
    case 'transfer':
      upstream.mine([upstream.transfer(PRINCIPALS[step.from] as string, PRINCIPALS[step.to] as string)]);
      return followTip(proxy);
    case 'event':
      upstream.mine([upstream.contractCallCrediting(OTHERS[1] as string, TOKEN, PRINCIPALS[step.to] as string)]);
      return followTip(proxy);
    case 'quiet':
      upstream.mine([]);
      return followTip(proxy);
    case 'burn':
      upstream.newTenure();
      return followTip(proxy);
    case 'reorg':
      upstream.reorg();
      return followTip(proxy);
    case 'gap':
      upstream.mine([]);
      upstream.mine([]);
      return followTip(proxy);
    case 'broadcast': {
      const tx = await makeSTXTokenTransfer({
        recipient: PRINCIPALS[step.to] as string,
        amount: 1n,
        senderKey: KEYS[step.from] as string,
        network: 'testnet',
        fee: 200n,
        nonce: nonce++,
      });
      const sent = await fetchRaw(`${proxy.url}/v2/transactions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tx: tx.serialize() }),
      });
      expect(sent.status).toBe(200);
      return;
    }
    case 'pending':
      upstream.addPending(PRINCIPALS[step.from] as string, PRINCIPALS[step.to] as string);
      await proxy.mempoolWatcher?.pollOnce();
      return;
    case 'time':
      return;
  }
}

describe('principal activity never serves what the upstream would answer differently', () => {
  it('holds over random sequences of blocks, burn blocks, reorgs, gaps, broadcasts, mempool changes and time', async () => {
    /** HITs of a tip-class route right after a new block: served by learned freshness (rule c). */
    let learnedHits = 0;
    /** HITs of a pending list right after a burn block: learning about transactions survived it. */
    let burnHits = 0;
    /** HITs of a recipient's nonces right after a transfer to it (mined, pending or broadcast): a nonce moves with what its principal sends. */
    let recipientNonceHits = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(STEP, { minLength: 4, maxLength: 16 }), async (steps) => {
        let clock = 1_800_000_000_000;
        const upstream = await startActivityUpstream();
        const proxy = await startTestProxy({ upstreamUrls: [upstream.url], now: () => clock, overrides: { activity: { settleMs: 0 } } });
        try {
          await proxy.mempoolWatcher?.pollOnce();
          for (const step of steps) {
            // Time moves between steps (1 ms at least), as it does for real.
            clock += 1 + (step.kind === 'time' ? step.ms : 0);
            await apply(step, upstream, proxy);
            for (const path of PRINCIPALS.flatMap(ROUTES)) {
              const served = await fetchRaw(proxy.url + path);
              const truth = await fetchRaw(upstream.url + path);
              expect(served.body.toString(), `${path} after ${JSON.stringify(step)} (X-Cache ${served.headers.get('x-cache')})`).toBe(truth.body.toString());
              const newBlock = step.kind === 'quiet' || step.kind === 'transfer' || step.kind === 'event';
              if (newBlock && path.endsWith('/transactions') && served.headers.get('x-cache') === 'HIT') learnedHits++;
              if (step.kind === 'burn' && path.includes('/tx/mempool') && served.headers.get('x-cache') === 'HIT') burnHits++;
              if ('to' in step && 'from' in step && step.to !== step.from && path === `/extended/v1/address/${PRINCIPALS[step.to]}/nonces`) {
                if (served.headers.get('x-cache') === 'HIT') recipientNonceHits++;
              }
            }
          }
        } finally {
          await proxy.close();
          await upstream.close();
        }
      }),
      { numRuns: 12 },
    );
    // Not vacuous: answers were served from cache across new blocks, and were still the upstream's.
    expect(learnedHits).toBeGreaterThan(0);
    expect(burnHits).toBeGreaterThan(0);
    expect(recipientNonceHits).toBeGreaterThan(0);
  });
});
