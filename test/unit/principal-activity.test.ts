/**
 * Principal activity (issue 15): the registry behind ActivityView (src/chain/activity.ts) and the
 * three policy rules that read it (src/cache/policy.ts `evaluate`, `isUsableWhenFailing`).
 */
import { describe, expect, it } from 'vitest';
import { PrincipalActivity, type TipRef } from '../../src/chain/activity.js';
import { CanonicalRecord } from '../../src/chain/canonical-record.js';
import { evaluate, isUsableWhenFailing, type ChainView, type TtlSettings } from '../../src/cache/policy.js';
import { coinbaseRecipients, collectPrincipals } from '../../src/chain/touched-principals.js';
import { entry } from '../support/entries.js';

const ALICE = 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7';
const BOB = 'SP3FBR2AGK5H9QBDH3EEN6DF8EK8JY7RX8QJ5SVTE';
/** `watchMs`: long enough that the tests not about it never see the chain unwatched (those about it set their own). */
const SETTINGS = { maxPrincipals: 100, settleMs: 1_000, coinbaseWindowBlocks: 5, watchMs: 1_000_000 };
const TTL: TtlSettings = { tipSafetyMs: 60_000, mempoolMs: 2_000, staleWhileRevalidateMs: 2_000, retainExpiredMs: 300_000, learnedMaxMs: 120_000 };

const block = (height: number, burnHeight = 500): TipRef => ({ height, indexBlockHash: `0xindex${height}`, burnHeight });
const nothing = { kind: 'known' as const, principals: [], coinbaseRecipients: [] };

/** A registry that believes tip 10 and learned blocks 11..`to` (touching `touched` at each height). */
function learnedThrough(to: number, touched: Record<number, string[]> = {}): PrincipalActivity {
  const activity = new PrincipalActivity(SETTINGS);
  activity.tipChanged(block(10), false, 1_000);
  for (let h = 11; h <= to; h++) {
    const outcome = activity.tipChanged(block(h), false, 1_000 + h);
    if (outcome.kind !== 'learn') throw new Error(`block ${h} not to learn: ${outcome.why}`);
    activity.blockLearned(block(h), outcome.epoch, { ...nothing, principals: touched[h] ?? [] }, 1_000 + h);
  }
  return activity;
}

describe('PrincipalActivity: broadcasts', () => {
  it('marks the principals a broadcast named, and the global mempool, changed from then on', () => {
    const activity = new PrincipalActivity(SETTINGS);
    expect(activity.principalChangedAfter(ALICE, 5_000)).toBe(false);
    expect(activity.mempoolChangedAfter(5_000)).toBe(false);
    activity.recordBroadcast([ALICE], 10_000);
    expect(activity.principalChangedAfter(ALICE, 9_999)).toBe(true);
    expect(activity.principalChangedAfter(BOB, 9_999)).toBe(false);
    expect(activity.mempoolChangedAfter(9_999)).toBe(true);
  });

  it('keeps answers validated within settleMs after a broadcast from being fresh (the API learns it a moment later)', () => {
    const activity = new PrincipalActivity(SETTINGS);
    activity.recordBroadcast([ALICE], 10_000);
    expect(activity.principalChangedAfter(ALICE, 11_000)).toBe(true); // the very millisecond counts as before
    expect(activity.principalChangedAfter(ALICE, 11_001)).toBe(false);
    expect(activity.mempoolChangedAfter(10_500)).toBe(true);
    expect(activity.mempoolChangedAfter(11_001)).toBe(false);
  });

  it('an undecodable broadcast changes the mempool only', () => {
    const activity = new PrincipalActivity(SETTINGS);
    activity.recordMempoolChange(10_000);
    expect(activity.mempoolChangedAfter(9_000)).toBe(true);
    expect(activity.principalChangedAfter(ALICE, 9_000)).toBe(false);
  });

  it('an evicted principal counts as changed as late as any evicted one: eviction is conservative', () => {
    const activity = new PrincipalActivity({ ...SETTINGS, maxPrincipals: 2 });
    activity.recordBroadcast([ALICE], 10_000);
    activity.recordBroadcast(['SP1'], 20_000);
    activity.recordBroadcast(['SP2'], 30_000); // evicts ALICE
    expect(activity.size).toBe(2);
    expect(activity.principalChangedAfter(ALICE, 9_000)).toBe(true);
    expect(activity.principalChangedAfter(BOB, 9_000)).toBe(true); // never seen: inherits the evicted marks
    expect(activity.principalChangedAfter(BOB, 12_000)).toBe(false);
  });
});

describe('PrincipalActivity: blocks', () => {
  it('knows a principal no learned block touched is unchanged since an older tip', () => {
    const activity = learnedThrough(13, { 12: [BOB] });
    expect(activity.unchangedSince(ALICE, 10, 1_500)).toBe(true);
    expect(activity.unchangedSince(BOB, 10, 1_500)).toBe(false);
    expect(activity.unchangedSince(BOB, 12, 1_500)).toBe(true);
  });

  it('knows nothing before learning started, nor while a block is being learned', () => {
    const activity = learnedThrough(12);
    expect(activity.unchangedSince(ALICE, 9, 1_500)).toBe(false);
    const outcome = activity.tipChanged(block(13), false, 2_000);
    expect(outcome.kind).toBe('learn');
    expect(activity.unchangedSince(ALICE, 11, 2_500)).toBe(false);
    if (outcome.kind === 'learn') activity.blockLearned(block(13), outcome.epoch, nothing, 2_001);
    expect(activity.unchangedSince(ALICE, 11, 2_500)).toBe(true);
  });

  it("voids what was learned of principals' state on a burn block, not what was learned of their transactions", () => {
    const activity = learnedThrough(12);
    const outcome = activity.tipChanged(block(13, 501), false, 5_000);
    expect(outcome).toEqual({ kind: 'learn', block: block(13, 501), epoch: expect.any(Number), burnBlock: true });
    if (outcome.kind !== 'learn') return;
    activity.blockLearned(block(13, 501), outcome.epoch, { ...nothing, principals: [BOB] }, 5_001);
    // Balances: PoX unlocks move them without a transaction, so nothing from before the burn block holds.
    expect(activity.unchangedSince(ALICE, 11, 1_500)).toBe(false);
    expect(activity.unchangedSince(ALICE, 13, 4_999)).toBe(false);
    expect(activity.unchangedSince(ALICE, 13, 5_500)).toBe(true);
    // Nonces and pending lists move with transactions alone: the burn block's own were learned.
    expect(activity.unchangedSince(ALICE, 11, 1_500, 'transactions')).toBe(true);
    expect(activity.unchangedSince(BOB, 11, 1_500, 'transactions')).toBe(false);
    expect(activity.unchangedSince(BOB, 13, 5_500, 'transactions')).toBe(true);
    // A burn block that is also a gap voids both.
    expect(activity.tipChanged(block(15, 502), false, 6_000)).toEqual({ kind: 'void', why: 'gap' });
    expect(activity.unchangedSince(ALICE, 13, 5_500, 'transactions')).toBe(false);
  });

  it('token balances (movesWith token_events) change only with the token events naming the principal, across burn blocks too', () => {
    const activity = learnedThrough(12);
    // Block 13 (a burn block): BOB pays an STX fee and transfer (named by the transaction), ALICE receives a token.
    const outcome = activity.tipChanged(block(13, 501), false, 5_000);
    if (outcome.kind !== 'learn') throw new Error('block 13 not to learn');
    activity.blockLearned(block(13, 501), outcome.epoch, { ...nothing, principals: [ALICE, BOB], tokenPrincipals: [ALICE] }, 5_001);
    expect(activity.unchangedSince(BOB, 11, 1_500, 'token_events')).toBe(true);
    expect(activity.unchangedSince(ALICE, 11, 1_500, 'token_events')).toBe(false);
    expect(activity.unchangedSince(BOB, 11, 1_500, 'transactions')).toBe(false);
    expect(activity.unchangedSince(BOB, 11, 1_500)).toBe(false);
    // Touches not told apart (a worker follower's, say): every principal the block named counts for tokens too.
    const next = activity.tipChanged(block(14, 501), false, 6_000);
    if (next.kind !== 'learn') throw new Error('block 14 not to learn');
    activity.blockLearned(block(14, 501), next.epoch, { ...nothing, principals: [BOB] }, 6_001);
    expect(activity.unchangedSince(BOB, 13, 5_500, 'token_events')).toBe(false);
  });

  it('an evicted principal leaves its token touches to every principal not remembered', () => {
    const activity = new PrincipalActivity({ ...SETTINGS, maxPrincipals: 1 });
    activity.tipChanged(block(10), false, 1_000);
    const outcome = activity.tipChanged(block(11), false, 1_011);
    if (outcome.kind !== 'learn') throw new Error('block 11 not to learn');
    activity.blockLearned(block(11), outcome.epoch, { ...nothing, principals: [ALICE, BOB], tokenPrincipals: [ALICE, BOB] }, 1_012);
    // ALICE's token touch was evicted by BOB's: a principal never seen inherits it (at 11).
    expect(activity.unchangedSince('SP000000000000000000002Q6VF78', 10, 1_005, 'token_events')).toBe(false);
  });

  it.each([
    ['a reorg', block(13), true, 'reorg'],
    ['a gap', block(14), false, 'gap'],
    ['a tip without a burn height', block(13, 0), false, 'no_burn_height'],
  ])('voids everything learned on %s', (_what, next, reorg, why) => {
    const activity = learnedThrough(12);
    expect(activity.tipChanged(next, reorg, 5_000)).toEqual({ kind: 'void', why });
    expect(activity.unchangedSince(ALICE, 11, 1_500)).toBe(false);
    if (next.burnHeight === 0) return; // nothing can be learned on top of a tip without a burn height
    // Entries validated at the new tip after the void can lean on what is learned from there.
    const after = activity.tipChanged(block(next.height + 1, next.burnHeight), false, 6_000);
    expect(after.kind).toBe('learn');
    if (after.kind === 'learn') activity.blockLearned(after.block, after.epoch, nothing, 6_001);
    expect(activity.unchangedSince(ALICE, next.height, 5_500)).toBe(true);
    expect(activity.unchangedSince(ALICE, next.height, 4_999)).toBe(false);
  });

  it("voids everything learned when a block's touches are unknown, and ignores answers from before a void", () => {
    const activity = learnedThrough(12);
    const outcome = activity.tipChanged(block(13), false, 2_000);
    if (outcome.kind !== 'learn') throw new Error('expected learn');
    expect(activity.blockLearned(block(13), outcome.epoch, { kind: 'unknown', why: 'too many pages' }, 2_100)).toBe('unknown');
    expect(activity.unchangedSince(ALICE, 12, 1_500)).toBe(false);
    expect(activity.blockLearned(block(13), outcome.epoch, nothing, 2_200)).toBe('outdated');
    expect(activity.unchangedSince(ALICE, 12, 1_500)).toBe(false);
  });

  it('keeps a coinbase recipient changed for coinbaseWindowBlocks blocks', () => {
    const activity = learnedThrough(11);
    const at12 = activity.tipChanged(block(12), false, 2_000);
    if (at12.kind !== 'learn') throw new Error('expected learn');
    activity.blockLearned(block(12), at12.epoch, { kind: 'known', principals: [], coinbaseRecipients: [ALICE] }, 2_000);
    for (let h = 13; h <= 18; h++) {
      expect(activity.unchangedSince(ALICE, h - 1, 3_000)).toBe(false);
      const next = activity.tipChanged(block(h), false, 3_000);
      if (next.kind === 'learn') activity.blockLearned(block(h), next.epoch, nothing, 3_000);
    }
    expect(activity.unchangedSince(ALICE, 17, 3_000)).toBe(true);
  });

  it('an evicted principal counts as touched as high as any evicted one', () => {
    const activity = new PrincipalActivity({ ...SETTINGS, maxPrincipals: 1 });
    activity.tipChanged(block(10), false, 1_000);
    const at11 = activity.tipChanged(block(11), false, 1_000);
    if (at11.kind !== 'learn') throw new Error('expected learn');
    activity.blockLearned(block(11), at11.epoch, { ...nothing, principals: [ALICE, BOB] }, 1_000);
    expect(activity.unchangedSince(ALICE, 10, 1_500)).toBe(false);
    expect(activity.unchangedSince('SPNEVERSEEN', 10, 1_500)).toBe(false);
    expect(activity.unchangedSince('SPNEVERSEEN', 11, 1_500)).toBe(true);
  });
});

describe('PrincipalActivity: blocks it never saw (the chain watched or not)', () => {
  const WATCHED = { ...SETTINGS, watchMs: 7_000 };

  it('is watching only while a tip poll showed the believed tip within watchMs', () => {
    const activity = new PrincipalActivity(WATCHED);
    expect(activity.isWatching(1_000)).toBe(false); // no tip yet
    activity.tipChanged(block(10), false, 1_000);
    expect(activity.isWatching(8_000)).toBe(true);
    expect(activity.isWatching(8_001)).toBe(false);
    activity.tipPolled('0xindex10', 5_000); // a poll (a 304 too) showing the believed tip
    expect(activity.isWatching(12_000)).toBe(true);
    expect(activity.isWatching(12_001)).toBe(false);
  });

  it('a poll showing another tip (an upstream behind, or one ahead not believed yet) does not say the chain was watched', () => {
    const activity = new PrincipalActivity(WATCHED);
    activity.tipChanged(block(10), false, 1_000);
    activity.tipPolled('0xindex9', 5_000);
    activity.tipPolled('0xindex15', 5_000);
    expect(activity.isWatching(8_001)).toBe(false);
    // A poll answered late does not move the watch back.
    activity.tipPolled('0xindex10', 6_000);
    activity.tipPolled('0xindex10', 2_000);
    expect(activity.isWatching(13_000)).toBe(true);
  });

  it('rule (c): an entry no learned block touched is not fresh once the chain is not watched, and comes back when a poll shows the tip', () => {
    const activity = new PrincipalActivity(WATCHED);
    activity.tipChanged(block(10), false, 1_000);
    const at11 = activity.tipChanged(block(11), false, 1_011);
    if (at11.kind !== 'learn') throw new Error('expected learn');
    activity.blockLearned(block(11), at11.epoch, nothing, 1_012);
    const canonical = new CanonicalRecord();
    for (let h = 10; h <= 11; h++) canonical.remember({ height: h, burnHeight: 500, indexBlockHash: `0xindex${h}` });
    const chain: ChainView = { tipHash: '0xindex11', tipHeight: 11, burnHeight: 500, canonical, reorgs: [], activity };
    const history = entry('{}', { tipHash: '0xindex10', tipHeight: 10, principal: ALICE, validatedAt: 1_005, upstreamEtag: '"h"' });
    expect(evaluate(history, 8_000, chain, TTL)).toBe('fresh');
    // Nothing showed the tip for watchMs (every upstream down): blocks may have come unseen.
    expect(evaluate(history, 8_012, chain, TTL)).toBe('revalidate');
    expect(evaluate({ ...history, upstreamEtag: undefined }, 8_012, chain, TTL)).toBe('refetch');
    // It may still stand in for a failing upstream (stale-if-error), as any expired entry.
    expect(isUsableWhenFailing(history, 8_012, chain, TTL, { staleIfErrorMs: 300_000, staleIfErrorMaxBlocks: 3 })).toBe(true);
    activity.tipPolled('0xindex11', 9_000);
    expect(evaluate(history, 9_500, chain, TTL)).toBe('fresh');
  });

  it('rule (d) across a tip leans on the same question', () => {
    const activity = new PrincipalActivity(WATCHED);
    activity.tipChanged(block(10), false, 1_000);
    const at11 = activity.tipChanged(block(11), false, 1_011);
    if (at11.kind !== 'learn') throw new Error('expected learn');
    activity.blockLearned(block(11), at11.epoch, nothing, 1_012);
    activity.mempoolPolled({ kind: 'unknown', startedAt: 1_000, endedAt: 1_001 });
    activity.mempoolPolled({ kind: 'unchanged', startedAt: 8_500, endedAt: 8_510 });
    const canonical = new CanonicalRecord();
    for (let h = 10; h <= 11; h++) canonical.remember({ height: h, burnHeight: 500, indexBlockHash: `0xindex${h}` });
    const chain: ChainView = { tipHash: '0xindex11', tipHeight: 11, burnHeight: 500, canonical, reorgs: [], activity };
    const nonces = entry('{}', {
      cls: 'mempool',
      tipHash: '0xindex10',
      tipHeight: 10,
      principal: ALICE,
      movesWith: 'transactions',
      validatedAt: 2_000,
      upstreamEtag: '"n"',
    });
    // The watcher polled lately and saw no change, but nothing showed the tip for watchMs.
    expect(evaluate(nonces, 9_000, chain, TTL)).toBe('revalidate');
    activity.tipPolled('0xindex11', 8_600);
    expect(evaluate(nonces, 9_000, chain, TTL)).toBe('fresh');
  });
});

describe("PrincipalActivity: the burn height a tip poll reports (the burn chain's tip, not the block's anchor)", () => {
  it('a reported burn height that rises between two blocks of one tenure voids state learning (conservative), not transactions learning', () => {
    // The status' burn height moved on with a burn block before the tenure's next Stacks block.
    const activity = learnedThrough(12);
    const next = activity.tipChanged(block(13, 501), false, 5_000);
    expect(next).toMatchObject({ kind: 'learn', burnBlock: true });
    if (next.kind === 'learn') activity.blockLearned(block(13, 501), next.epoch, nothing, 5_001);
    expect(activity.unchangedSince(ALICE, 11, 1_500)).toBe(false);
    expect(activity.unchangedSince(ALICE, 11, 1_500, 'transactions')).toBe(true);
  });

  it("a reported burn height lower than the previous tip's (another upstream's burn view) voids state learning too", () => {
    const activity = learnedThrough(12);
    expect(activity.tipChanged(block(13, 499), false, 5_000)).toMatchObject({ kind: 'learn', burnBlock: true });
  });

  it('the same block reported again with another burn height is no new block: learning restarts there, nothing is vouched for from before', () => {
    const activity = learnedThrough(12);
    expect(activity.tipChanged(block(12, 501), false, 5_000)).toEqual({ kind: 'void', why: 'same_height' });
    expect(activity.unchangedSince(ALICE, 11, 1_500)).toBe(false);
    expect(activity.unchangedSince(ALICE, 11, 1_500, 'transactions')).toBe(false);
  });
});

describe('PrincipalActivity: the mempool watcher', () => {
  it('vouches for nothing before its first poll, nor for entries validated before a change of unknown extent', () => {
    const activity = new PrincipalActivity(SETTINGS);
    expect(activity.mempoolUnchangedSince(ALICE, 5_000)).toBeUndefined();
    activity.mempoolPolled({ kind: 'unknown', startedAt: 5_000, endedAt: 5_050 });
    expect(activity.mempoolUnchangedSince(ALICE, 5_000)).toBeUndefined();
    expect(activity.mempoolUnchangedSince(ALICE, 5_050)).toBeUndefined(); // the very millisecond counts as before
    expect(activity.mempoolUnchangedSince(ALICE, 5_051)).toBe(5_000);
    activity.mempoolPolled({ kind: 'unchanged', startedAt: 6_000, endedAt: 6_040 });
    expect(activity.mempoolUnchangedSince(ALICE, 5_100)).toBe(6_000);
    expect(activity.mempoolUnchangedSince(undefined, 5_100)).toBe(6_000);
  });

  it('dates a change by the answer that saw it: entries validated before then are not vouched for', () => {
    const activity = new PrincipalActivity(SETTINGS);
    activity.mempoolPolled({ kind: 'unknown', startedAt: 1_000, endedAt: 1_010 });
    activity.mempoolPolled({ kind: 'changed', principals: [BOB], startedAt: 2_000, endedAt: 2_030 });
    expect(activity.mempoolUnchangedSince(BOB, 2_020)).toBeUndefined();
    expect(activity.mempoolUnchangedSince(BOB, 2_030)).toBeUndefined();
    expect(activity.mempoolUnchangedSince(BOB, 2_031)).toBe(2_000);
    expect(activity.mempoolUnchangedSince(ALICE, 1_500)).toBe(2_000);
    // Entries about no principal: any change counts.
    expect(activity.mempoolUnchangedSince(undefined, 1_500)).toBeUndefined();
  });

  it('a change the watcher saw makes its principals changed (no settling), and any change the global mempool', () => {
    const activity = new PrincipalActivity(SETTINGS);
    activity.mempoolPolled({ kind: 'unknown', startedAt: 1_000, endedAt: 1_010 });
    expect(activity.mempoolChangedAfter(1_010)).toBe(true);
    expect(activity.principalChangedAfter(BOB, 1_005)).toBe(false); // a change of unknown extent names nobody: the TTL rules
    activity.mempoolPolled({ kind: 'changed', principals: [BOB], startedAt: 2_000, endedAt: 2_030 });
    expect(activity.principalChangedAfter(BOB, 2_030)).toBe(true);
    expect(activity.principalChangedAfter(BOB, 2_031)).toBe(false);
    expect(activity.principalChangedAfter(ALICE, 2_000)).toBe(false);
    expect(activity.mempoolChangedAfter(2_030)).toBe(true);
    expect(activity.mempoolChangedAfter(2_031 + SETTINGS.settleMs)).toBe(false);
  });

  it('a principal evicted and seen again keeps the marks it had (eviction stays conservative)', () => {
    const activity = new PrincipalActivity({ ...SETTINGS, maxPrincipals: 1 });
    activity.mempoolPolled({ kind: 'unknown', startedAt: 1_000, endedAt: 1_010 });
    activity.mempoolPolled({ kind: 'changed', principals: [BOB], startedAt: 2_000, endedAt: 2_030 });
    activity.recordBroadcast([ALICE], 3_000); // evicts BOB
    expect(activity.mempoolUnchangedSince(BOB, 2_020)).toBeUndefined();
    activity.recordBroadcast([BOB], 500); // BOB again, from the inherited marks
    expect(activity.mempoolUnchangedSince(BOB, 2_020)).toBeUndefined();
  });
});

describe('touched principals (block learning, the mempool watcher)', () => {
  it('finds every principal-shaped token: fields, asset ids, Clarity reprs, post-condition pairs; contract and address', () => {
    const found = new Set<string>();
    collectPrincipals(
      {
        sender_address: ALICE,
        contract_call: { contract_id: `${BOB}.swap`, function_args: [{ repr: `(tuple (to '${ALICE}) (via '${BOB}.router-v2))` }] },
        post_conditions: [{ principal: { type_id: 'principal_contract', address: BOB, contract_name: 'vault' } }],
        events: [{ asset: { asset_id: `${BOB}.token::tok`, recipient: 'SPNOTANADDRESSBUTSHAPEDLIKEONEX' } }],
        tx_id: '0xS'.padEnd(66, 'a'),
      },
      found,
    );
    expect([...found].sort()).toEqual(
      [ALICE, BOB, `${BOB}.swap`, `${BOB}.router-v2`, `${BOB}.vault`, `${BOB}.token`, 'SPNOTANADDRESSBUTSHAPEDLIKEONEX'].sort(),
    );
  });

  it("names a coinbase's sender and alternative recipient as the principals it credits later", () => {
    expect(coinbaseRecipients({ tx_type: 'coinbase', sender_address: ALICE, coinbase_payload: { alt_recipient: BOB } })).toEqual([ALICE, BOB]);
    expect(coinbaseRecipients({ tx_type: 'token_transfer', sender_address: ALICE })).toEqual([]);
  });
});

describe('policy rules on principal activity', () => {
  /** A chain at tip 13 whose canonical record holds blocks 10..13. */
  const chainWith = (activity?: PrincipalActivity): ChainView => {
    const canonical = new CanonicalRecord();
    for (let h = 10; h <= 13; h++) canonical.remember({ height: h, burnHeight: 500, indexBlockHash: `0xindex${h}` });
    return { tipHash: '0xindex13', tipHeight: 13, burnHeight: 500, canonical, reorgs: [], activity };
  };
  const atTip = (height: number, extra = {}) => entry('{}', { tipHash: `0xindex${height}`, tipHeight: height, ...extra });

  it('rule (a): an entry about a principal a broadcast named after it was validated is revalidated, not served', () => {
    const activity = new PrincipalActivity(SETTINGS);
    const nonce = atTip(13, { cls: 'mempool', principal: ALICE, validatedAt: 10_000, upstreamEtag: '"n"' });
    expect(evaluate(nonce, 10_500, chainWith(activity), TTL)).toBe('fresh');
    activity.recordBroadcast([ALICE], 10_400);
    expect(evaluate(nonce, 10_500, chainWith(activity), TTL)).toBe('revalidate');
    // Not even stale-while-revalidate, and not stale-if-error.
    expect(evaluate(nonce, 12_500, chainWith(activity), TTL)).toBe('revalidate');
    expect(isUsableWhenFailing(nonce, 10_500, chainWith(activity), TTL, { staleIfErrorMs: 300_000, staleIfErrorMaxBlocks: 3 })).toBe(false);
    expect(evaluate({ ...nonce, upstreamEtag: undefined }, 10_500, chainWith(activity), TTL)).toBe('refetch');
    // Another principal's entry is untouched.
    expect(evaluate({ ...nonce, principal: BOB }, 10_500, chainWith(activity), TTL)).toBe('fresh');
    // So is her confirmed state (a tip entry: her history, her confirmed balance): a pending
    // transaction does not move it, only a block does (rule (c) and the tip see to that).
    const history = atTip(13, { principal: ALICE, validatedAt: 10_000, upstreamEtag: '"h"' });
    expect(evaluate(history, 10_500, chainWith(activity), TTL)).toBe('fresh');
    activity.mempoolPolled({ kind: 'changed', principals: [ALICE], startedAt: 10_450, endedAt: 10_460 });
    expect(evaluate(history, 10_500, chainWith(activity), TTL)).toBe('fresh');
    // Validated after the broadcast settled: fresh again.
    expect(evaluate({ ...nonce, validatedAt: 11_401 }, 11_500, chainWith(activity), TTL)).toBe('fresh');
  });

  it('rule (b): a mempool entry about no principal validated before a broadcast is not fresh; tip entries are not affected', () => {
    const activity = new PrincipalActivity(SETTINGS);
    const mempool = atTip(13, { cls: 'mempool', validatedAt: 10_000 });
    activity.recordMempoolChange(10_100);
    expect(evaluate(mempool, 10_500, chainWith(activity), TTL)).toBe('refetch');
    expect(evaluate(atTip(13, { validatedAt: 10_000 }), 10_500, chainWith(activity), TTL)).toBe('fresh');
  });

  it('rule (c): a tip entry about a principal no block since touched stays fresh across new tips, up to learnedMaxMs', () => {
    const activity = learnedThrough(13, { 12: [BOB] });
    const chain = chainWith(activity);
    const alice = atTip(11, { principal: ALICE, validatedAt: 1_500, upstreamEtag: '"a"' });
    expect(evaluate(alice, 5_000, chain, TTL)).toBe('fresh');
    expect(evaluate(alice, 1_500 + 120_000, chain, TTL)).toBe('revalidate');
    expect(evaluate({ ...alice, principal: BOB }, 5_000, chain, TTL)).toBe('revalidate');
    // Untagged, mempool-class, or from a block that is not the canonical one at its height: as before.
    expect(evaluate({ ...alice, principal: undefined }, 5_000, chain, TTL)).toBe('revalidate');
    expect(evaluate({ ...alice, cls: 'mempool' }, 5_000, chain, TTL)).toBe('revalidate');
    expect(evaluate({ ...alice, tipHash: '0xother11' }, 5_000, chain, TTL)).toBe('revalidate');
    // Learned freshness off (no learnedMaxMs): as before.
    expect(evaluate(alice, 5_000, chain, { ...TTL, learnedMaxMs: undefined })).toBe('revalidate');
  });

  it('rule (d): a mempool entry past its TTL is fresh while the watcher vouches for it, its latest poll is within the TTL and the tip did not move (or no block touched its principal)', () => {
    const activity = learnedThrough(13, { 12: [BOB] });
    activity.mempoolPolled({ kind: 'unknown', startedAt: 1_000, endedAt: 1_010 });
    const chain = chainWith(activity);
    const balance = atTip(13, { cls: 'mempool', principal: ALICE, validatedAt: 2_000, upstreamEtag: '"b"' });
    activity.mempoolPolled({ kind: 'unchanged', startedAt: 5_000, endedAt: 5_010 });
    expect(evaluate(balance, 6_500, chain, TTL)).toBe('fresh');
    expect(evaluate(balance, 7_000, chain, TTL)).toBe('revalidate'); // the latest poll is 2 s old
    // From an older tip no block since touched ALICE: still fresh; BOB was touched: not.
    expect(evaluate({ ...balance, tipHash: '0xindex11', tipHeight: 11 }, 6_500, chain, TTL)).toBe('fresh');
    expect(evaluate({ ...balance, principal: BOB, tipHash: '0xindex11', tipHeight: 11 }, 6_500, chain, TTL)).toBe('revalidate');
    // A 410 kept briefly is not the mempool's to vouch for.
    expect(evaluate({ ...balance, status: 410 }, 6_500, chain, TTL)).toBe('revalidate');
    activity.mempoolPolled({ kind: 'changed', principals: [ALICE], startedAt: 6_000, endedAt: 6_010 });
    expect(evaluate(balance, 6_500, chain, TTL)).toBe('revalidate');
  });

  it('rule (d) across a burn block: a pending list or nonce (movesWith transactions) stays fresh, a balance does not', () => {
    const activity = learnedThrough(12);
    activity.mempoolPolled({ kind: 'unknown', startedAt: 1_000, endedAt: 1_010 });
    const nonces = atTip(12, { cls: 'mempool', principal: ALICE, movesWith: 'transactions', validatedAt: 2_000, upstreamEtag: '"n"' });
    const balance = { ...nonces, movesWith: undefined };
    const burn = activity.tipChanged(block(13, 501), false, 3_000);
    if (burn.kind !== 'learn') throw new Error('expected learn');
    // While the burn block's transactions are being learned, nothing leans on blocks.
    activity.mempoolPolled({ kind: 'unchanged', startedAt: 5_000, endedAt: 5_010 });
    const chain = { ...chainWith(activity), burnHeight: 501 };
    expect(evaluate(nonces, 6_500, chain, TTL)).toBe('revalidate');
    activity.blockLearned(block(13, 501), burn.epoch, { ...nothing, principals: [BOB] }, 3_100);
    expect(evaluate(nonces, 6_500, chain, TTL)).toBe('fresh');
    expect(evaluate(balance, 6_500, chain, TTL)).toBe('revalidate');
    // The burn block touched BOB: his pending list is asked for again.
    expect(evaluate({ ...nonces, principal: BOB }, 6_500, chain, TTL)).toBe('revalidate');
  });

  it('without activity nothing changes', () => {
    const chain = chainWith(undefined);
    const cases = [
      atTip(11, { principal: ALICE, validatedAt: 1_500, upstreamEtag: '"a"' }),
      atTip(13, { cls: 'mempool', principal: ALICE, validatedAt: 10_000 }),
      atTip(13, { cls: 'mempool', validatedAt: 10_000 }),
    ];
    const verdicts = cases.map((e) => evaluate(e, 10_500, chain, TTL));
    const untagged = cases.map((e) => evaluate({ ...e, principal: undefined }, 10_500, { ...chain, activity: undefined }, TTL));
    expect(verdicts).toEqual(['revalidate', 'fresh', 'fresh']);
    expect(verdicts).toEqual(untagged);
  });
});

describe('broadcasts whose sender is unknown, and the activity generation', () => {
  it('an unknown broadcast makes every principal changed (remembered or not) and the mempool, from then on only', () => {
    const activity = new PrincipalActivity(SETTINGS);
    activity.recordBroadcast([BOB], 1_000);
    activity.recordUnknownBroadcast(5_000);
    for (const principal of [ALICE, BOB]) {
      expect(activity.principalChangedAfter(principal, 5_000)).toBe(true);
      expect(activity.principalChangedAfter(principal, 5_000 + SETTINGS.settleMs + 1)).toBe(false);
    }
    expect(activity.mempoolChangedAfter(5_000)).toBe(true);
  });

  it('the generation moves with every broadcast and mempool change, not with blocks', () => {
    const activity = new PrincipalActivity(SETTINGS);
    const seen = [activity.generation];
    activity.recordBroadcast([ALICE], 1_000);
    seen.push(activity.generation);
    activity.recordUnknownBroadcast(1_001);
    seen.push(activity.generation);
    activity.mempoolPolled({ kind: 'changed', principals: [BOB], startedAt: 1_002, endedAt: 1_003 });
    seen.push(activity.generation);
    activity.mempoolPolled({ kind: 'unchanged', startedAt: 1_004, endedAt: 1_005 });
    activity.tipChanged(block(10), false, 1_006);
    expect(activity.generation).toBe(seen.at(-1));
    expect(new Set(seen).size).toBe(seen.length);
  });
});
