/**
 * Tip belief and the finality watermark as pure logic: which upstream report becomes the tip
 * (tip-evidence.ts), when a jumped tip's parent chain links it to the believed one
 * (jump-walk.ts), which by_burn_block_height answers may move the watermark (finality.ts), and
 * the record of verified canonical blocks (canonical-record.ts).
 */
import { describe, expect, it } from 'vitest';
import { canonicalBlockOf, CanonicalRecord } from '../../src/chain/canonical-record.js';
import { FinalityWatermark, type BurnBlockAnswer } from '../../src/chain/finality.js';
import { ParentWalks } from '../../src/chain/jump-walk.js';
import { TipEvidence, type BelievedTip } from '../../src/chain/tip-evidence.js';
import type { CanonicalBlock, ChainTip } from '../../src/chain/view.js';

const tip = (height: number, burnHeight = height + 100, hash = `0x${height}`): ChainTip => ({ height, burnHeight, indexBlockHash: hash });
const A = 'http://a';
const B = 'http://b';
const believedFrom = (origin: string, at: ChainTip): BelievedTip => ({ origin, tip: at });

describe('TipEvidence', () => {
  const evidence = () => new TipEvidence({ maxJumpBlocks: 10 });

  it('believes the first tip and any step up to maxJumpBlocks ahead (Stacks and burn)', () => {
    const e = evidence();
    expect(e.judge(A, tip(50), undefined)).toEqual({ kind: 'believe' });
    expect(e.judge(A, tip(60), believedFrom(A, tip(50)))).toEqual({ kind: 'believe' });
    expect(e.judge(A, tip(50), believedFrom(A, tip(50)))).toEqual({ kind: 'keep' });
  });

  it('holds a jump of the Stacks height however often the same upstream shows it', () => {
    const e = evidence();
    const current = believedFrom(A, tip(50));
    for (let poll = 0; poll < 3; poll++) expect(e.judge(A, tip(1050), current)).toEqual({ kind: 'hold' });
    expect(e.judge(A, tip(61, 1151), current)).toEqual({ kind: 'hold' }); // a little higher is the same unconfirmed view
  });

  it('believes a Stacks step with a far burn tip (burn blocks a conditional poll did not show), but not its burn tip', () => {
    const e = evidence();
    const current = believedFrom(A, tip(50));
    expect(e.judge(A, tip(51, 1151), current)).toEqual({ kind: 'believe' });
    expect(e.vouchedBurnHeight(A, 1151, current.tip.burnHeight)).toEqual({ burnHeight: 150, held: true });
    expect(e.vouchedBurnHeight(A, 160, current.tip.burnHeight)).toEqual({ burnHeight: 160, held: false });
    expect(e.vouchedBurnHeight(A, 140, current.tip.burnHeight)).toEqual({ burnHeight: 140, held: false });
    expect(e.vouchedBurnHeight(A, 1151, undefined)).toEqual({ burnHeight: 1151, held: false });
  });

  it('vouches for a far burn tip that another upstream reports near it', () => {
    const e = evidence();
    const current = believedFrom(A, tip(50));
    e.judge(B, tip(51, 1148), current);
    expect(e.vouchedBurnHeight(A, 1151, current.tip.burnHeight)).toEqual({ burnHeight: 1151, held: false });
    expect(e.vouchedBurnHeight(B, 1148, current.tip.burnHeight)).toEqual({ burnHeight: 150, held: true });
  });

  it('reports the highest heights any upstream shows now, held jumps included', () => {
    const e = evidence();
    e.judge(A, tip(1050, 1100), believedFrom(A, tip(50)));
    e.judge(B, tip(60, 1200), believedFrom(A, tip(50)));
    expect(e.highestReported()).toEqual({ height: 1050, burnHeight: 1200 });
    e.judge(A, tip(50), believedFrom(A, tip(50)));
    expect(e.highestReported()).toEqual({ height: 60, burnHeight: 1200 });
  });

  it('believes a jump another upstream reports near it', () => {
    const e = evidence();
    const current = believedFrom(A, tip(50));
    expect(e.judge(A, tip(1050), current)).toEqual({ kind: 'hold' });
    expect(e.judge(B, tip(1048, 1148, '0xother'), current)).toEqual({ kind: 'believe' });
  });

  it('takes a lower tip from the leader as a reorg or correction, and from another upstream as that one lagging', () => {
    const e = evidence();
    const current = believedFrom(A, tip(1050));
    expect(e.judge(B, tip(50), current)).toEqual({ kind: 'keep' });
    expect(e.judge(A, tip(50), current)).toEqual({ kind: 'believe' });
  });

  it('keeps the tip when the leader goes back while another upstream still shows it, and hands that one the lead', () => {
    const e = evidence();
    const current = believedFrom(A, tip(60));
    e.judge(B, tip(60), current);
    expect(e.judge(A, tip(59), current)).toEqual({ kind: 'keep', leader: B });
  });
});

describe('FinalityWatermark', () => {
  const TIP = tip(50, 136);
  const canonicalAt = (height: number, burnHeight: number): BurnBlockAnswer => ({
    height,
    burn_block_height: burnHeight,
    canonical: true,
    index_block_hash: `0x${height}`,
  });

  async function advanced(answers: Record<number, BurnBlockAnswer>, at = TIP) {
    const watermark = new FinalityWatermark(6);
    const asked: number[] = [];
    await watermark.advance(at, (burnHeight) => {
      asked.push(burnHeight);
      return Promise.resolve(answers[burnHeight]);
    });
    return { watermark, asked };
  }

  it('knows nothing final before a watermark was verified', () => {
    const watermark = new FinalityWatermark(6);
    expect([watermark.finalBurnHeight(TIP), watermark.finalStacksHeight(TIP)]).toEqual([undefined, undefined]);
  });

  it('moves to a canonical block anchored exactly at burn tip minus confirmations', async () => {
    const { watermark, asked } = await advanced({ 130: canonicalAt(36, 130) });
    expect(asked).toEqual([130]);
    expect([watermark.finalBurnHeight(TIP), watermark.finalStacksHeight(TIP)]).toEqual([130, 36]);
  });

  it('walks down past burn blocks without a canonical Stacks block', async () => {
    const { watermark, asked } = await advanced({ 129: { ...canonicalAt(35, 129), canonical: false }, 128: canonicalAt(30, 128) });
    expect(asked).toEqual([130, 129, 128]);
    expect([watermark.finalBurnHeight(TIP), watermark.finalStacksHeight(TIP)]).toEqual([128, 30]);
  });

  it('starts at the tip block’s anchor when the burn tip is far above it (a stall): one request, the tip block final', async () => {
    const stalled = { ...tip(50, 160), anchorBurnHeight: 136 };
    const { watermark, asked } = await advanced({ 136: canonicalAt(50, 136) }, stalled);
    expect(asked).toEqual([136]);
    expect([watermark.finalBurnHeight(stalled), watermark.finalStacksHeight(stalled)]).toEqual([136, 50]);
  });

  it('without the anchor, walks down at most 16 empty burn blocks from the target and finds nothing past them', async () => {
    const { watermark, asked } = await advanced({ 136: canonicalAt(50, 136) }, tip(50, 160));
    expect(asked).toEqual(Array.from({ length: 16 }, (_, i) => 154 - i));
    expect(watermark.finalStacksHeight(tip(50, 160))).toBeUndefined();
  });

  it('an anchor at or above the target changes nothing (the burn tip one ahead of a new tenure)', async () => {
    const ahead = { ...tip(50, 137), anchorBurnHeight: 136 };
    const { watermark, asked } = await advanced({ 131: canonicalAt(37, 131) }, ahead);
    expect(asked).toEqual([131]);
    expect(watermark.finalStacksHeight(ahead)).toBe(37);
  });

  it('asks again once the tip block’s anchor is read (same target, another start)', async () => {
    const watermark = new FinalityWatermark(6);
    const asked: number[] = [];
    const answers: Record<number, BurnBlockAnswer> = { 136: canonicalAt(50, 136) };
    const blockAtBurn = (burnHeight: number) => {
      asked.push(burnHeight);
      return Promise.resolve(answers[burnHeight]);
    };
    await watermark.advance(tip(50, 180), blockAtBurn);
    await watermark.advance({ ...tip(50, 180), anchorBurnHeight: 136 }, blockAtBurn);
    expect(asked.at(-1)).toBe(136);
    expect(watermark.finalStacksHeight({ ...tip(50, 180), anchorBurnHeight: 136 })).toBe(50);
  });

  it.each([
    ['another burn block', canonicalAt(36, 131)],
    ['a block above the believed tip', canonicalAt(51, 130)],
    ['a block without a height', { burn_block_height: 130, canonical: true, index_block_hash: '0x36' }],
    ['a block without an index block hash', { height: 36, burn_block_height: 130, canonical: true }],
  ])('does not move for %s', async (_name, answer) => {
    const { watermark } = await advanced({ 130: answer });
    expect(watermark.finalBurnHeight(TIP)).toBeUndefined();
  });

  it('asks once per target, and again after a reorg drops a watermark above the fork', async () => {
    const { watermark } = await advanced({ 130: canonicalAt(36, 130) });
    let asks = 0;
    const answer = () => {
      asks++;
      return Promise.resolve(canonicalAt(36, 130));
    };
    await watermark.advance(TIP, answer);
    expect(asks).toBe(0);
    watermark.lowerTo(40); // below the fork nothing changes, but it is asked again
    expect(watermark.finalStacksHeight(TIP)).toBe(36);
    watermark.lowerTo(30);
    expect(watermark.finalStacksHeight(TIP)).toBeUndefined();
    await watermark.advance(TIP, answer);
    expect([asks, watermark.finalStacksHeight(TIP)]).toEqual([1, 36]);
  });

  // Before: the burn and Stacks heights were each capped on their own ([114, 30]), a pair that named
  // no block, and the verified watermark stayed above the lower tip for the next one to use.
  it('comes down with the believed tip: a watermark above a lower tip is dropped and verified again below it', async () => {
    const { watermark } = await advanced({ 130: canonicalAt(36, 130) });
    const lower = tip(30, 120);
    expect([watermark.finalBurnHeight(lower), watermark.finalStacksHeight(lower)]).toEqual([undefined, undefined]);
    watermark.lowerTo(30);
    await watermark.advance(lower, (burnHeight) => Promise.resolve(burnHeight === 114 ? canonicalAt(12, 114) : undefined));
    expect([watermark.finalBurnHeight(lower), watermark.finalStacksHeight(lower)]).toEqual([114, 12]);
    expect([watermark.finalBurnHeight(TIP), watermark.finalStacksHeight(TIP)]).toEqual([114, 12]); // not back up to 130 by itself
  });

  it('drops a watermark the believed tip no longer allows even without a reorg record', async () => {
    const { watermark } = await advanced({ 130: canonicalAt(36, 130) });
    const verified = await watermark.advance(tip(45, 131), (burnHeight) => Promise.resolve(burnHeight === 125 ? canonicalAt(21, 125) : undefined));
    expect(verified).toEqual({ height: 21, burnHeight: 125, indexBlockHash: '0x21', blockHash: undefined });
    expect(watermark.finalStacksHeight(tip(45, 131))).toBe(21);
  });
});

describe('CanonicalRecord', () => {
  const block = (height: number, extra: Partial<CanonicalBlock> = {}): CanonicalBlock => ({
    height,
    burnHeight: height + 100,
    indexBlockHash: `0x${height}`,
    ...extra,
  });

  it('keeps the latest verified block per height, completing a block_hash learned later', () => {
    const record = new CanonicalRecord();
    record.remember(block(10));
    record.remember(block(10, { blockHash: '0xb10' }));
    expect(record.at(10)).toEqual(block(10, { blockHash: '0xb10' }));
    record.remember(block(10, { indexBlockHash: '0xother' }));
    expect(record.at(10)).toEqual(block(10, { indexBlockHash: '0xother' }));
  });

  it('is bounded, the oldest record first out, and forgets the blocks above a fork', () => {
    const record = new CanonicalRecord(3);
    for (const height of [1, 2, 3, 4]) record.remember(block(height));
    expect([1, 2, 3, 4].map((h) => record.at(h)?.height)).toEqual([undefined, 2, 3, 4]);
    record.forgetAbove(2);
    expect([2, 3, 4].map((h) => record.at(h)?.height)).toEqual([2, undefined, undefined]);
  });

  it('reads a canonical block answer, and nothing else', () => {
    const answer = { height: 5, burn_block_height: 108, index_block_hash: '0xi5', hash: '0xb5', canonical: true };
    expect(canonicalBlockOf(answer)).toEqual({ height: 5, burnHeight: 108, indexBlockHash: '0xi5', blockHash: '0xb5' });
    expect(canonicalBlockOf({ ...answer, canonical: false })).toBeUndefined();
    expect(canonicalBlockOf({ ...answer, burn_block_height: '108' })).toBeUndefined();
    expect(canonicalBlockOf(null)).toBeUndefined();
  });
});

describe('ParentWalks', () => {
  const BELIEVED = tip(50, 136, '0xi50');
  /** A chain from the believed tip up to `top`, one burn block a block, each naming its parent. */
  const chain = (top: number, broken?: number) => (height: number) => {
    if (height > top || height < 50) return Promise.resolve(undefined);
    const parent = height - 1 === 50 ? '0xi50' : `0xi${height - 1}`;
    return Promise.resolve({
      height,
      index_block_hash: `0xi${height}`,
      parent_index_block_hash: height === broken ? '0xelsewhere' : parent,
      burn_block_height: height + 86,
      canonical: true,
    });
  };
  const jumped = (height: number) => tip(height, height + 86, `0xi${height}`);

  it('links a jumped tip to the believed one through its parent chain, a bounded number of blocks a step', async () => {
    const walks = new ParentWalks(4);
    const asked: number[] = [];
    const blockAt = (height: number) => {
      asked.push(height);
      return chain(60)(height);
    };
    expect(await walks.step('a', jumped(60), BELIEVED, blockAt)).toBe('walking');
    expect(asked).toEqual([60, 59, 58, 57]);
    expect(await walks.step('a', jumped(60), BELIEVED, blockAt)).toBe('walking');
    expect(await walks.step('a', jumped(60), BELIEVED, blockAt)).toBe('linked');
    expect(asked).toEqual([60, 59, 58, 57, 56, 55, 54, 53, 52, 51]);
  });

  it.each([
    ['a tip whose block does not exist', jumped(70), chain(60)],
    ['a parent chain that leaves the believed one', jumped(60), chain(60, 55)],
    [
      'a block anchored above its child',
      jumped(60),
      (height: number) => chain(60)(height).then((b) => (b && height === 58 ? { ...b, burn_block_height: 200 } : b)),
    ],
    ['a block that is not canonical', jumped(60), (height: number) => chain(60)(height).then((b) => (b && height === 59 ? { ...b, canonical: false } : b))],
    ['a tip anchored above the burn tip it was reported with', tip(60, 140, '0xi60'), chain(60)],
  ])('breaks on %s', async (_name, target, blockAt) => {
    expect(await new ParentWalks(32).step('a', target, BELIEVED, blockAt)).toBe('broken');
  });

  it('links a jumped tip reported with a burn tip above its anchor (burn blocks without Stacks blocks)', async () => {
    expect(await new ParentWalks(32).step('a', tip(60, 999, '0xi60'), BELIEVED, chain(60))).toBe('linked');
  });

  it('breaks on a block anchored below the believed tip block, and links when the believed anchor is not known', async () => {
    const anchored = { ...BELIEVED, anchorBurnHeight: 138 };
    expect(await new ParentWalks(32).step('a', jumped(60), anchored, chain(60))).toBe('broken');
    expect(await new ParentWalks(32).step('a', jumped(60), { ...BELIEVED, anchorBurnHeight: 137 }, chain(60))).toBe('linked');
  });

  it('starts again for another jumped tip, and throws (walk kept) when the upstream fails', async () => {
    const walks = new ParentWalks(2);
    expect(await walks.step('a', jumped(60), BELIEVED, chain(60))).toBe('walking');
    await expect(walks.step('a', jumped(60), BELIEVED, () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    expect(await walks.step('a', jumped(52), BELIEVED, chain(60))).toBe('linked');
  });
});
