/**
 * The pure cache policy (DESIGN §3): which freshness class a response is stored under, and
 * what a stored entry is worth at a given moment, chain state and clock injected.
 */
import { describe, expect, it } from 'vitest';
import type { CacheEntry, FreshnessClass } from '../../src/cache/entry.js';
import {
  asServedNow,
  cacheControlFor,
  classify,
  decide,
  evaluate,
  isUsableWhenFailing,
  retentionMs,
  type ChainView,
  type ClassifyInput,
  type ReorgRecord,
  type TtlSettings,
} from '../../src/cache/policy.js';
import type { FreshnessRules, RequestFacts } from '../../src/routes/route-spec.js';
import { RECORDED, recordingsMatching } from '../../testkit/index.js';
import { knowing, recordedChainView } from '../support/recorded-chain-view.js';

const FINAL_BURN = 130;
const FINAL_STACKS = 40;
const CHAIN: ChainView = {
  tipHash: '0xtip',
  tipHeight: 50,
  burnHeight: 136,
  finalBurnHeight: FINAL_BURN,
  finalStacksHeight: FINAL_STACKS,
  reorgs: [],
};
/** CHAIN, knowing the block of minedTx (height 12) and of block() (height 21) at these burn heights. */
const verified = (txBurn: number, blockBurn = txBurn): ChainView => ({
  ...CHAIN,
  canonical: knowing(
    { height: 12, burnHeight: txBurn, indexBlockHash: '0xindex12', blockHash: '0xblock12' },
    { height: 21, burnHeight: blockBurn, indexBlockHash: '0xindex', blockHash: '0xblock' },
  ),
});
/** Above the watermark block (40 at burn 130). */
const ABOVE = { block_height: FINAL_STACKS + 1 };
// stale-while-revalidate off here; its own cases below switch it on.
const TTL: TtlSettings = { tipSafetyMs: 60_000, mempoolMs: 2_000, staleWhileRevalidateMs: 0, retainExpiredMs: 300_000 };

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8');

interface Overrides {
  facts?: RequestFacts;
  status?: number;
  body?: Buffer;
  chain?: ChainView;
  finalTxHeight?: number;
}

function classOf(freshness: FreshnessRules, o: Overrides = {}): ReturnType<typeof classify> {
  const input: ClassifyInput = {
    freshness,
    facts: o.facts ?? {},
    status: o.status ?? 200,
    body: o.body ?? Buffer.from('{}'),
    chain: o.chain ?? CHAIN,
  };
  if (o.finalTxHeight !== undefined) input.finalTxHeight = o.finalTxHeight;
  return classify(input);
}

/** A mined, canonical transaction anchored at the given burn height. */
const minedTx = (burnHeight: number, extra: Record<string, unknown> = {}) => ({
  tx_id: '0x01',
  tx_status: 'success',
  canonical: true,
  microblock_canonical: true,
  is_unanchored: false,
  block_height: 12,
  block_hash: '0xblock12',
  burn_block_height: burnHeight,
  ...extra,
});

const ABOVE_BLOCK = { height: FINAL_STACKS + 1 };

/** A canonical Nakamoto block anchored at the given burn height. */
const block = (burnHeight: number, extra: Record<string, unknown> = {}) => ({
  canonical: true,
  height: 21,
  hash: '0xblock',
  index_block_hash: '0xindex',
  burn_block_height: burnHeight,
  ...extra,
});

describe('classify: transactions', () => {
  it('makes a confirmed tx final exactly at the finality boundary, in the verified block at its height', () => {
    expect(classOf('transaction', { body: json(minedTx(FINAL_BURN)), chain: verified(FINAL_BURN) })).toEqual({ cls: 'final', height: 12 });
    expect(classOf('transaction', { body: json(minedTx(FINAL_BURN - 5)), chain: verified(FINAL_BURN - 5) })).toEqual({ cls: 'final', height: 12 });
  });

  // Before: burn depth alone made it final, whatever block it named.
  it('keeps a deep tx at tip, to be checked, while the block at its height is not known', () => {
    expect(classOf('transaction', { body: json(minedTx(FINAL_BURN)) })).toEqual({ cls: 'tip', unverified: { height: 12, blockHash: '0xblock12' } });
  });

  it('keeps a confirmed tx one burn block short of finality at tip', () => {
    expect(classOf('transaction', { body: json(minedTx(FINAL_BURN + 1, ABOVE)) })).toEqual({ cls: 'tip' });
  });

  it.each([
    ['a block height above every reported tip', minedTx(FINAL_BURN, { block_height: 999_999_999 }), verified(FINAL_BURN)],
    ['a burn height its block does not have', minedTx(1), verified(FINAL_BURN)],
    ['another block at a final height', minedTx(FINAL_BURN, { block_hash: '0xother' }), verified(FINAL_BURN)],
    ['a burn height above the final block at a height below it', minedTx(FINAL_BURN + 1), CHAIN],
    ['a burn height below the final block at a height above it', minedTx(1, ABOVE), CHAIN],
  ])('contradicts the chain with %s', (_name, tx, chain) => {
    const withCeiling: ChainView = { ...chain, heightCeiling: 60, burnCeiling: 146 };
    expect(classOf('transaction', { body: json(tx), chain: withCeiling })).toMatchObject({ contradiction: expect.any(String) });
    expect(classOf('transaction_list', { body: json({ '0x01': { found: true, result: tx } }), chain: withCeiling })).toMatchObject({
      contradiction: expect.any(String),
    });
  });

  it('never makes a non-canonical or microblock-orphaned tx final', () => {
    expect(classOf('transaction', { body: json(minedTx(1, { canonical: false })) })).toEqual({ cls: 'tip' });
    expect(classOf('transaction', { body: json(minedTx(1, { microblock_canonical: false })) })).toEqual({ cls: 'tip' });
    expect(classOf('transaction', { body: json(minedTx(1, { is_unanchored: true })) })).toEqual({ cls: 'tip' });
  });

  it('keeps a confirmed tx at tip while finality is unknown', () => {
    const { finalBurnHeight: _omit, ...unknown } = CHAIN;
    expect(classOf('transaction', { body: json(minedTx(1)), chain: unknown })).toEqual({ cls: 'tip' });
  });

  it.each([
    ['pending', { tx_id: '0x01', tx_status: 'pending', receipt_time: 1 }],
    ['dropped', { tx_id: '0x01', tx_status: 'dropped_replace_by_fee', receipt_time: 1 }],
    ['without a block height', { tx_id: '0x01', tx_status: 'success' }],
  ])('puts a %s tx in mempool', (_name, tx) => {
    expect(classOf('transaction', { body: json(tx) })).toEqual({ cls: 'mempool' });
  });

  it('puts a tx 404 in mempool (it may arrive any second)', () => {
    const body = Buffer.from('{"statusCode":404,"error":"Not Found","message":"could not find transaction by ID"}');
    expect(classOf('transaction', { status: 404, body })).toEqual({ cls: 'mempool' });
  });

  it('classifies a whole tx/multiple answer by its least fresh member, not as one transaction', () => {
    const found = (tx: Record<string, unknown>) => ({ found: true, result: tx });
    const chain = verified(FINAL_BURN);
    expect(classOf('transaction_list', { body: json({ '0x01': found(minedTx(FINAL_BURN)) }), chain })).toEqual({ cls: 'final', height: 12 });
    expect(classOf('transaction_list', { body: json({ '0x01': found(minedTx(FINAL_BURN)), '0x02': found(minedTx(FINAL_BURN + 1, ABOVE)) }), chain })).toEqual({
      cls: 'tip',
    });
    expect(
      classOf('transaction_list', { body: json({ '0x01': found(minedTx(FINAL_BURN)), '0x02': { found: false, result: { tx_id: '0x02' } } }), chain }),
    ).toEqual({ cls: 'mempool' });
    expect(classOf('transaction_list', { body: json(minedTx(FINAL_BURN)) })).toBeUndefined();
  });

  it('classifies with_transfers by its tx member', () => {
    expect(classOf('tx_with_transfers', { body: json({ tx: minedTx(FINAL_BURN), stx_sent: '0' }), chain: verified(FINAL_BURN) })).toEqual({
      cls: 'final',
      height: 12,
    });
    expect(classOf('tx_with_transfers', { body: json({ tx: minedTx(FINAL_BURN + 1, ABOVE) }) })).toEqual({ cls: 'tip' });
    expect(classOf('tx_with_transfers', { body: json({ stx_sent: '0' }) })).toBeUndefined();
    expect(classOf('tx_with_transfers', { status: 404 })).toEqual({ cls: 'tip' });
  });

  it.each([
    ['not JSON', Buffer.from('<html>')],
    ['truncated', Buffer.from('{"tx_status":"succ')],
    ['an array', Buffer.from('[1,2]')],
    ['null', Buffer.from('null')],
  ])('does not store a 200 whose body is %s', (_name, body) => {
    expect(classOf('transaction', { body })).toBeUndefined();
    expect(classOf('block', { body })).toBeUndefined();
  });
});

describe('classify: recorded upstream answers', () => {
  const txs = recordingsMatching(/^\/extended\/v1\/tx\/0x[0-9a-f]{64}$/);
  const blocks = recordingsMatching(/^\/extended\/v2\/blocks\/(0x[0-9a-f]{64}|\d+)$/);
  // Six confirmations under the recorded burn tip, as the default configuration has it.
  const chain = recordedChainView();

  it(`classifies all ${txs.length} recorded transactions by status and burn depth`, () => {
    expect(txs.length).toBe(136);
    const seen = new Set<string>();
    for (const rec of txs) {
      const tx = JSON.parse(rec.body) as { tx_status: string; block_height?: number; burn_block_height?: number };
      const expected =
        tx.tx_status === 'pending'
          ? { cls: 'mempool' }
          : (tx.burn_block_height ?? Infinity) <= RECORDED.tipBurnHeight - 6
            ? { cls: 'final', height: tx.block_height }
            : { cls: 'tip' };
      expect(classify({ freshness: 'transaction', facts: {}, status: 200, body: Buffer.from(rec.body), chain }), rec.path).toEqual(expected);
      seen.add(expected.cls);
    }
    expect([...seen].sort()).toEqual(['final', 'mempool', 'tip']);
  });

  it(`classifies all ${blocks.length} recorded blocks by burn depth`, () => {
    expect(blocks.length).toBe(150);
    for (const rec of blocks) {
      const b = JSON.parse(rec.body) as { height: number; burn_block_height: number };
      const expected = b.burn_block_height <= RECORDED.tipBurnHeight - 6 ? { cls: 'final', height: b.height } : { cls: 'tip' };
      expect(classify({ freshness: 'block', facts: {}, status: 200, body: Buffer.from(rec.body), chain }), rec.path).toEqual(expected);
    }
  });
});

describe('classify: blocks', () => {
  it('makes a canonical block final at the boundary and tip one past it', () => {
    const chain = verified(FINAL_BURN);
    const past = block(FINAL_BURN + 1, { height: FINAL_STACKS + 1 });
    expect(classOf('block', { body: json(block(FINAL_BURN)), chain })).toEqual({ cls: 'final', height: 21 });
    expect(classOf('block', { body: json(past), chain })).toEqual({ cls: 'tip' });
    // by_burn_block_height: final only once a later tenure began (the tip block anchored higher).
    const later = { ...chain, tipAnchorBurnHeight: FINAL_BURN + 1 };
    expect(classOf('burn_block', { body: json(block(FINAL_BURN)), chain: later })).toEqual({ cls: 'final', height: 21 });
    expect(classOf('burn_block', { body: json(past), chain: later })).toEqual({ cls: 'tip' });
  });

  it('keeps by_burn_block_height at tip while its tenure may still get blocks (the tip anchored there, or its anchor not read)', () => {
    const chain = verified(FINAL_BURN);
    expect(classOf('burn_block', { body: json(block(FINAL_BURN)), chain: { ...chain, tipAnchorBurnHeight: FINAL_BURN } })).toEqual({ cls: 'tip' });
    expect(classOf('burn_block', { body: json(block(FINAL_BURN)), chain })).toEqual({ cls: 'tip' });
    // The block itself, by height or hash, is final all the same: later blocks of its tenure do not change it.
    expect(classOf('block', { body: json(block(FINAL_BURN)), chain: { ...chain, tipAnchorBurnHeight: FINAL_BURN } })).toEqual({ cls: 'final', height: 21 });
  });

  it('contradicts the chain with a block that is not the verified one at its final height, also as blocks/latest', () => {
    const chain = verified(FINAL_BURN);
    expect(classOf('block', { body: json(block(FINAL_BURN, { index_block_hash: '0xother' })), chain })).toMatchObject({ contradiction: expect.any(String) });
    expect(classOf('block', { facts: { latest: true }, body: json(block(1, ABOVE_BLOCK)), chain })).toMatchObject({ contradiction: expect.any(String) });
  });

  it('keeps a block above the watermark that is not the one recorded at its height at tip (a reorg not seen yet)', () => {
    const chain: ChainView = { ...CHAIN, canonical: knowing({ height: 45, burnHeight: 134, indexBlockHash: '0xold' }) };
    expect(classOf('block', { body: json(block(134, { height: 45, index_block_hash: '0xnew' })), chain })).toEqual({ cls: 'tip' });
  });

  it('never makes a non-canonical block final', () => {
    expect(classOf('block', { body: json(block(1, { canonical: false })) })).toEqual({ cls: 'tip' });
    expect(classOf('burn_block', { body: json(block(1, { canonical: false })) })).toEqual({ cls: 'tip' });
  });

  it('keeps blocks/latest at tip however deep its block is', () => {
    expect(classOf('block', { facts: { latest: true }, body: json(block(1)) })).toEqual({ cls: 'tip' });
  });

  it('keeps block and burn-block 404s at tip (the block may come next)', () => {
    expect(classOf('block', { status: 404 })).toEqual({ cls: 'tip' });
    expect(classOf('burn_block', { status: 404 })).toEqual({ cls: 'tip' });
  });
});

describe('classify: never stored', () => {
  const ALL: FreshnessRules[] = [
    'principal_balance',
    'mempool',
    'transaction',
    'block',
    'transaction_list',
    'tx_events',
    'chain_history',
    'address_history',
    'burn_block',
    'tx_with_transfers',
  ];

  it.each([400, 410, 500, 502, 503, 504, 302, 304])('status %i on every policy', (status) => {
    for (const freshness of ALL) {
      expect(classOf(freshness, { status, body: json(minedTx(1)) }), freshness).toBeUndefined();
    }
  });

  it.each(['mempool', 'transaction_list', 'tx_events', 'chain_history'] as const)('a 404 on %s', (freshness) => {
    expect(classOf(freshness, { status: 404 })).toBeUndefined();
  });
});

describe('classify: balances', () => {
  const balance = (facts: RequestFacts, chain: ChainView = CHAIN) => classOf('principal_balance', { facts, chain });

  it('puts balances without until_block in mempool (they carry pending fields)', () => {
    expect(balance({})).toEqual({ cls: 'mempool' });
    expect(balance({ untilBlock: { kind: 'absent' } })).toEqual({ cls: 'mempool' });
  });

  it('makes a balance at a final height final, one above the final height tip', () => {
    expect(balance({ untilBlock: { kind: 'height', height: FINAL_STACKS } })).toEqual({ cls: 'final', height: FINAL_STACKS });
    expect(balance({ untilBlock: { kind: 'height', height: 3 } })).toEqual({ cls: 'final', height: 3 });
    expect(balance({ untilBlock: { kind: 'height', height: FINAL_STACKS + 1 } })).toEqual({ cls: 'tip' });
  });

  it('keeps until_block by hash, empty until_block and unknown finality at tip', () => {
    expect(balance({ untilBlock: { kind: 'hash', hash: '0xabc' } })).toEqual({ cls: 'tip' });
    expect(balance({ untilBlock: { kind: 'empty' } })).toEqual({ cls: 'tip' });
    const { finalStacksHeight: _omit, ...unknown } = CHAIN;
    expect(balance({ untilBlock: { kind: 'height', height: 1 } }, unknown)).toEqual({ cls: 'tip' });
  });

  it('puts unanchored balances in mempool', () => {
    expect(balance({ unanchored: true })).toEqual({ cls: 'mempool' });
  });

  it('keeps a balance 404 at tip', () => {
    expect(classOf('principal_balance', { status: 404 })).toEqual({ cls: 'tip' });
  });
});

describe('classify: histories and events', () => {
  const history = (facts: RequestFacts) => classOf('address_history', { facts });

  it('keeps address history at tip by default', () => {
    expect(history({})).toEqual({ cls: 'tip' });
    expect(history({ untilBlock: { kind: 'height', height: FINAL_STACKS + 1 } })).toEqual({ cls: 'tip' });
  });

  it('makes history up to or at a final height final', () => {
    expect(history({ untilBlock: { kind: 'height', height: FINAL_STACKS } })).toEqual({ cls: 'final', height: FINAL_STACKS });
    expect(history({ atHeight: FINAL_STACKS })).toEqual({ cls: 'final', height: FINAL_STACKS });
    expect(history({ atHeight: FINAL_STACKS + 1 })).toEqual({ cls: 'tip' });
  });

  it('puts unanchored history in mempool, unless it asks for one block', () => {
    expect(history({ unanchored: true })).toEqual({ cls: 'mempool' });
    expect(history({ unanchored: true, atHeight: 3 })).toEqual({ cls: 'final', height: 3 });
  });

  it('keeps contract events and v2 address transactions at tip', () => {
    expect(classOf('chain_history', { body: json({ limit: 20, offset: 0, results: [] }) })).toEqual({ cls: 'tip' });
  });

  it('makes tx events final when their transaction is final, tip otherwise', () => {
    expect(classOf('tx_events', { finalTxHeight: 12, facts: { eventsOfTx: '0x01' } })).toEqual({ cls: 'final', height: 12 });
    expect(classOf('tx_events', { facts: { eventsOfTx: '0x01' } })).toEqual({ cls: 'tip' });
    expect(classOf('tx_events', {})).toEqual({ cls: 'tip' });
  });

  it('puts mempool routes in mempool', () => {
    expect(classOf('mempool', { body: json({ all: {} }) })).toEqual({ cls: 'mempool' });
  });
});

function entry(cls: FreshnessClass, validatedAt: number, extra: Partial<CacheEntry> = {}): CacheEntry {
  return {
    status: 200,
    body: Buffer.from('{}'),
    headers: {},
    etag: '"e"',
    cls,
    validatedAt,
    ...(cls === 'final' ? {} : { tipHash: CHAIN.tipHash }),
    ...extra,
  };
}

describe('evaluate', () => {
  const T0 = 1_700_000_000_000;
  const newTip: ChainView = { ...CHAIN, tipHash: '0xnext', tipHeight: 51 };

  it('keeps final entries fresh forever, whatever the tip, while the watermark covers them', () => {
    expect(evaluate(entry('final', T0, { height: 12 }), T0 + 365 * 24 * 3600_000, newTip, TTL)).toBe('fresh');
  });

  // Before: a final entry stayed fresh (and immutable) whatever the watermark did.
  it('asks again for a final entry the watermark no longer covers (it came down with the tip), and serves it as tip meanwhile', () => {
    const lowered: ChainView = { ...CHAIN, finalStacksHeight: 11 };
    const e = entry('final', T0, { height: 12 });
    expect(evaluate(e, T0, lowered, TTL)).toBe('refetch');
    expect(evaluate({ ...e, upstreamEtag: '"u"' }, T0, lowered, TTL)).toBe('revalidate');
    const { finalStacksHeight: _omit, ...unknown } = CHAIN;
    expect(evaluate(e, T0, unknown, TTL)).toBe('refetch');
    expect(asServedNow(e, lowered).cls).toBe('tip');
    expect(asServedNow(e, CHAIN)).toBe(e);
  });

  it('keeps tip entries fresh under the same tip within the safety TTL', () => {
    const e = entry('tip', T0);
    expect(evaluate(e, T0, CHAIN, TTL)).toBe('fresh');
    expect(evaluate(e, T0 + TTL.tipSafetyMs - 1, CHAIN, TTL)).toBe('fresh');
    expect(evaluate(e, T0 + TTL.tipSafetyMs, CHAIN, TTL)).toBe('refetch');
  });

  it('revalidates a tip entry with an upstream ETag after the TTL or a tip change', () => {
    const e = entry('tip', T0, { upstreamEtag: '"0xtip"' });
    expect(evaluate(e, T0 + TTL.tipSafetyMs, CHAIN, TTL)).toBe('revalidate');
    expect(evaluate(e, T0 + 1, newTip, TTL)).toBe('revalidate');
  });

  it('refetches a tip entry without an upstream ETag after a tip change', () => {
    expect(evaluate(entry('tip', T0), T0 + 1, newTip, TTL)).toBe('refetch');
  });

  it('treats an unknown current tip as unchanged', () => {
    const { tipHash: _omit, ...noTip } = CHAIN;
    expect(evaluate(entry('tip', T0), T0 + 1, noTip, TTL)).toBe('fresh');
  });

  it('keeps mempool entries fresh for the mempool TTL only', () => {
    const e = entry('mempool', T0, { upstreamEtag: '"1795327171.909223"' });
    expect(evaluate(e, T0 + TTL.mempoolMs - 1, CHAIN, TTL)).toBe('fresh');
    expect(evaluate(e, T0 + TTL.mempoolMs, CHAIN, TTL)).toBe('revalidate');
    expect(evaluate(entry('mempool', T0), T0 + TTL.mempoolMs, CHAIN, TTL)).toBe('refetch');
  });

  it('stops serving a mempool entry as fresh once a new block arrives', () => {
    expect(evaluate(entry('mempool', T0), T0 + 1, newTip, TTL)).toBe('refetch');
  });

  describe('after a reorg', () => {
    const reorg: ReorgRecord = { at: T0 + 1_000, forkHeight: 30 };
    const afterReorg: ChainView = { ...CHAIN, reorgs: [reorg] };
    const now = T0 + 2_000;

    it('purges tip and mempool entries validated before it', () => {
      expect(evaluate(entry('tip', T0), now, afterReorg, TTL)).toBe('purged');
      expect(evaluate(entry('tip', T0, { upstreamEtag: '"x"' }), now, afterReorg, TTL)).toBe('purged');
      expect(evaluate(entry('mempool', T0), now, afterReorg, TTL)).toBe('purged');
    });

    it('purges final entries above the fork height', () => {
      expect(evaluate(entry('final', T0, { height: 31 }), now, afterReorg, TTL)).toBe('purged');
    });

    it('purges final entries whose height is unknown', () => {
      expect(evaluate(entry('final', T0), now, afterReorg, TTL)).toBe('purged');
    });

    it('keeps final entries at or below the fork height', () => {
      expect(evaluate(entry('final', T0, { height: 30 }), now, afterReorg, TTL)).toBe('fresh');
      expect(evaluate(entry('final', T0, { height: 1 }), now, afterReorg, TTL)).toBe('fresh');
    });

    it('keeps entries validated after it', () => {
      const later = reorg.at + 1;
      expect(evaluate(entry('final', later, { height: 38 }), now, afterReorg, TTL)).toBe('fresh');
      expect(evaluate(entry('tip', later), now, afterReorg, TTL)).toBe('fresh');
    });

    it('looks at every recorded reorg', () => {
      const chain: ChainView = { ...CHAIN, reorgs: [{ at: T0 - 10, forkHeight: 5 }, reorg] };
      expect(evaluate(entry('final', T0 - 5, { height: 31 }), now, chain, TTL)).toBe('purged');
      expect(evaluate(entry('final', T0 - 5, { height: 20 }), now, chain, TTL)).toBe('fresh');
      expect(evaluate(entry('final', T0 - 20, { height: 20 }), now, chain, TTL)).toBe('purged');
    });
  });
});

describe('the tip safety revalidation behind the answer (issue 18)', () => {
  const T0 = 1_700_000_000_000;
  const behind: TtlSettings = { ...TTL, revalidateBehindMs: 15_000 };
  const tipEntry = (extra: Partial<CacheEntry> = {}): CacheEntry => entry('tip', T0, { upstreamEtag: '"0xtip"', ...extra });
  const pastSafety = T0 + TTL.tipSafetyMs;

  it('serves a tip entry validated at the believed tip past tipSafetyMs while it is revalidated, within the window', () => {
    expect(evaluate(tipEntry(), pastSafety - 1, CHAIN, behind)).toBe('fresh');
    expect(evaluate(tipEntry(), pastSafety, CHAIN, behind)).toBe('revalidate-behind');
    expect(evaluate(tipEntry(), pastSafety + 14_999, CHAIN, behind)).toBe('revalidate-behind');
    expect(evaluate(tipEntry(), pastSafety + 15_000, CHAIN, behind)).toBe('revalidate');
    // Without an ETag, the request behind the answer is a plain one.
    expect(evaluate(entry('tip', T0), pastSafety, CHAIN, behind)).toBe('revalidate-behind');
    expect(decide(tipEntry(), pastSafety, CHAIN, behind)).toMatchObject({
      action: 'serve-and-revalidate-behind',
      refresh: { action: 'revalidate', etag: '"0xtip"' },
    });
    expect(decide(entry('tip', T0), pastSafety, CHAIN, behind)).toMatchObject({ action: 'serve-and-revalidate-behind', refresh: { action: 'refetch' } });
  });

  it('blocks as before for an entry from another tip, before any believed tip, after a reorg, or when off', () => {
    expect(evaluate(tipEntry(), pastSafety, { ...CHAIN, tipHash: '0xnext', tipHeight: 51 }, behind)).toBe('revalidate');
    expect(evaluate(tipEntry({ tipHash: undefined }), pastSafety, CHAIN, behind)).toBe('revalidate');
    const { tipHash: _omit, ...noTip } = CHAIN;
    expect(evaluate(tipEntry(), pastSafety, noTip, behind)).toBe('revalidate');
    expect(evaluate(tipEntry(), pastSafety, { ...CHAIN, reorgs: [{ at: T0 + 1, forkHeight: 30 }] }, behind)).toBe('purged');
    expect(evaluate(tipEntry(), pastSafety, CHAIN, TTL)).toBe('revalidate');
    expect(evaluate(tipEntry(), pastSafety, CHAIN, { ...behind, revalidateBehindMs: 0 })).toBe('revalidate');
  });

  it('never applies to mempool or final entries', () => {
    const mempool = entry('mempool', T0, { upstreamEtag: '"m"' });
    expect(evaluate(mempool, T0 + TTL.mempoolMs, CHAIN, behind)).toBe('revalidate');
    const lowered: ChainView = { ...CHAIN, finalStacksHeight: 11 };
    expect(evaluate(entry('final', T0, { height: 12, upstreamEtag: '"f"' }), T0 + 1, lowered, behind)).toBe('revalidate');
  });
});

describe('retention and Cache-Control', () => {
  it('keeps final entries until evicted and others for their TTL plus the retention window', () => {
    expect(retentionMs('final', TTL)).toBeNull();
    expect(retentionMs('tip', TTL)).toBe(360_000);
    expect(retentionMs('mempool', TTL)).toBe(302_000);
  });

  it('marks final answers immutable and the rest must-revalidate', () => {
    expect(cacheControlFor('final')).toBe('public, max-age=31536000, immutable');
    expect(cacheControlFor('tip')).toBe('public, no-cache, must-revalidate');
    expect(cacheControlFor('mempool')).toBe('public, no-cache, must-revalidate');
  });
});

describe('stale-while-revalidate and stale-if-error', () => {
  const NOW = 1_000_000;
  const swr: TtlSettings = { ...TTL, staleWhileRevalidateMs: 3_000 };
  const mempoolEntry = (age: number, tipHash = '0xtip'): CacheEntry => ({
    status: 200,
    body: Buffer.from('{}'),
    headers: {},
    etag: '"e"',
    upstreamEtag: '"e"',
    cls: 'mempool',
    validatedAt: NOW - age,
    tipHash,
  });

  it('serves a just-expired mempool entry while it refreshes, under the same tip only', () => {
    expect(evaluate(mempoolEntry(1_000), NOW, CHAIN, swr)).toBe('fresh');
    expect(evaluate(mempoolEntry(2_500), NOW, CHAIN, swr)).toBe('stale-while-revalidate');
    expect(evaluate(mempoolEntry(5_500), NOW, CHAIN, swr)).toBe('revalidate');
    expect(evaluate(mempoolEntry(2_500, '0xold'), NOW, CHAIN, swr)).toBe('revalidate');
    expect(evaluate(mempoolEntry(2_500), NOW, CHAIN, TTL)).toBe('revalidate');
  });

  it('never softens tip entries', () => {
    const tipEntry: CacheEntry = { ...mempoolEntry(61_000), cls: 'tip' };
    expect(evaluate(tipEntry, NOW, CHAIN, swr)).toBe('revalidate');
  });

  const stale = { staleIfErrorMs: 300_000, staleIfErrorMaxBlocks: 3 };
  const chainAt = (tipHeight: number): ChainView => ({ ...CHAIN, tipHeight });

  it('lets an expired entry stand in for a failed upstream within the window', () => {
    expect(isUsableWhenFailing(mempoolEntry(200_000), NOW, CHAIN, TTL, stale)).toBe(true);
    expect(isUsableWhenFailing(mempoolEntry(303_000), NOW, CHAIN, TTL, stale)).toBe(false);
  });

  it('refuses tip entries too many blocks behind, and anything a reorg made suspect', () => {
    const tipEntry: CacheEntry = { ...mempoolEntry(70_000), cls: 'tip', tipHeight: 100 };
    expect(isUsableWhenFailing(tipEntry, NOW, chainAt(103), TTL, stale)).toBe(true);
    expect(isUsableWhenFailing(tipEntry, NOW, chainAt(104), TTL, stale)).toBe(false);
    const reorged: ChainView = { ...chainAt(101), reorgs: [{ at: NOW - 1, forkHeight: 99 }] };
    expect(isUsableWhenFailing(tipEntry, NOW, reorged, TTL, stale)).toBe(false);
  });

  it('always lets final entries stand in', () => {
    const finalEntry: CacheEntry = { ...mempoolEntry(10_000_000), cls: 'final', height: 5 };
    expect(isUsableWhenFailing(finalEntry, NOW, CHAIN, TTL, stale)).toBe(true);
  });
});
