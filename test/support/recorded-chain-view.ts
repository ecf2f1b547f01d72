/**
 * The chain view the proxy would hold over the recorded chain (tip 50 at burn 136), with six burn
 * confirmations: the watermark is block 36 (the highest at burn 130) and every recorded block is
 * verified canonical, as the tracker's record would hold it after checking each.
 */
import type { CanonicalBlock, CanonicalLookup, ChainView } from '../../src/chain/view.js';
import { RECORDED, recordingsMatching } from '../../testkit/index.js';

/** A lookup over the given blocks. */
export function knowing(...blocks: CanonicalBlock[]): CanonicalLookup {
  const byHeight = new Map(blocks.map((b) => [b.height, b]));
  return { at: (height) => byHeight.get(height) };
}

export function recordedChainView(): ChainView {
  const blocks = recordingsMatching(/^\/extended\/v2\/blocks\/\d+$/).map(
    (rec) => JSON.parse(rec.body) as { height: number; burn_block_height: number; index_block_hash: string; hash: string },
  );
  return {
    tipHash: RECORDED.tipIndexHash,
    tipHeight: RECORDED.tipHeight,
    burnHeight: RECORDED.tipBurnHeight,
    finalBurnHeight: RECORDED.tipBurnHeight - 6,
    finalStacksHeight: 36,
    canonical: knowing(...blocks.map((b) => ({ height: b.height, burnHeight: b.burn_block_height, indexBlockHash: b.index_block_hash, blockHash: b.hash }))),
    reorgs: [],
  };
}
