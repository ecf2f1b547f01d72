/**
 * The mempool-wide fee estimate may lag the mempool (policy.ts `evaluate`, `lagsMempool`):
 * fresh for `mempoolFeesMaxAgeMs` whatever broadcasts, mempool changes or blocks came since,
 * then an ordinary `mempool` entry; a reorg still purges it, and no other entry lags.
 */
import { describe, expect, it } from 'vitest';
import { PrincipalActivity } from '../../src/chain/activity.js';
import { evaluate, type ChainView, type TtlSettings } from '../../src/cache/policy.js';
import { entry } from '../support/entries.js';

const TTL: TtlSettings = { tipSafetyMs: 60_000, mempoolMs: 2_000, staleWhileRevalidateMs: 2_000, retainExpiredMs: 300_000, mempoolFeesMaxAgeMs: 5_000 };
const SETTINGS = { maxPrincipals: 100, settleMs: 0, coinbaseWindowBlocks: 5, watchMs: 1_000_000 };

/** A chain whose mempool changed (a broadcast) at 2,000 and whose tip moved past the entry's. */
function movedOn(): ChainView {
  const activity = new PrincipalActivity(SETTINGS);
  activity.recordMempoolChange(2_000);
  return { tipHash: '0xnew', tipHeight: 11, burnHeight: 500, reorgs: [], activity };
}

const fees = entry('{"all":{"no_priority":1}}', {
  cls: 'mempool',
  validatedAt: 1_000,
  tipHash: '0xold',
  tipHeight: 10,
  upstreamEtag: '"m1"',
  lagsMempool: true,
});

describe('mempool fee estimate lag', () => {
  it('is fresh within the window despite a mempool change and a new tip', () => {
    expect(evaluate(fees, 5_999, movedOn(), TTL)).toBe('fresh');
  });

  it('is an ordinary mempool entry after the window, or with the window off', () => {
    expect(evaluate(fees, 6_000, movedOn(), TTL)).toBe('revalidate');
    expect(evaluate(fees, 3_000, movedOn(), { ...TTL, mempoolFeesMaxAgeMs: 0 })).toBe('revalidate');
    expect(evaluate(fees, 3_000, movedOn(), { ...TTL, mempoolFeesMaxAgeMs: undefined })).toBe('revalidate');
  });

  it('lags only for entries marked so: another mempool entry is asked again after the change', () => {
    const { lagsMempool: _, ...stats } = fees;
    expect(evaluate(stats, 3_000, movedOn(), TTL)).toBe('revalidate');
  });

  it('is still purged by a reorg', () => {
    const chain: ChainView = { ...movedOn(), reorgs: [{ at: 1_500, forkHeight: 9 }] };
    expect(evaluate(fees, 3_000, chain, TTL)).toBe('purged');
  });
});
