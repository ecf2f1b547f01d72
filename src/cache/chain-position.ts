/**
 * Whether anchored data (a mined transaction, a block) sits where the proxy's verified chain
 * says it can (pure). An answer names its block: a height, a burn height and hashes. It is
 * final only when that block is the verified canonical block at its height (CanonicalRecord)
 * and lies at or below the finality watermark. It disagrees with the proxy's picture of the
 * chain when it names a height or burn height no tip reaches, a burn height its block does not
 * have, or, at a final height, a block that is not the canonical one. A disagreement is a fact
 * about the proxy's model as much as about the answer (the model can be behind, or wrong): the
 * answer is served as the upstream sent it and never stored, and the upstream is not blamed
 * (cache/admit.ts). Above the watermark a different block may be a reorg the tip poll has not
 * seen yet: that is only not final.
 */
import type { BlockRef, ChainView, RecordedBlock } from '../chain/view.js';

/** The block an answer says its data sits in. */
export interface Position {
  height: number;
  burnHeight: number;
  blockHash?: string;
  indexBlockHash?: string;
}

export type PositionVerdict =
  | { kind: 'final' }
  /** Not final. `unverified`: it would be, were the block it names checked as the canonical one at its height. */
  | { kind: 'not-final'; unverified?: BlockRef }
  /** `reason`: a metric label (few values); `why`: the log's words. */
  | { kind: 'contradiction'; reason: DisagreementReason; why: string };

/** Why an answer does not fit the proxy's picture of the chain (the disagreement metric's `reason` label). */
export type DisagreementReason =
  'above_tip_height' | 'above_burn_tip' | 'anchor_differs' | 'not_canonical_at_final_height' | 'anchor_above_final_block' | 'anchor_below_final_block';

const NOT_FINAL: PositionVerdict = { kind: 'not-final' };

const sameHash = (a: string | undefined, b: string | undefined): boolean | undefined =>
  a === undefined || b === undefined ? undefined : a.toLowerCase() === b.toLowerCase();

/** Whether the answer names the recorded block (undefined: no hash both carry). */
function namesBlock(position: Position, known: RecordedBlock): boolean | undefined {
  const byIndex = sameHash(position.indexBlockHash, known.indexBlockHash);
  const byHash = sameHash(position.blockHash, known.blockHash);
  if (byIndex === false || byHash === false) return false;
  return byIndex ?? byHash;
}

export function judgePosition(position: Position, chain: ChainView): PositionVerdict {
  const { height, burnHeight } = position;
  const contradiction = (reason: DisagreementReason, why: string): PositionVerdict => ({ kind: 'contradiction', reason, why });
  if (chain.heightCeiling !== undefined && height > chain.heightCeiling) {
    return contradiction('above_tip_height', `block height ${height} is above every tip the upstreams report`);
  }
  if (chain.burnCeiling !== undefined && burnHeight > chain.burnCeiling) {
    return contradiction('above_burn_tip', `burn block height ${burnHeight} is above every burn tip the upstreams report`);
  }
  const finalHeight = chain.finalStacksHeight;
  const finalBurn = chain.finalBurnHeight;
  const known = chain.canonical?.at(height);
  const named = known ? namesBlock(position, known) : undefined;
  // A believed tip whose own anchor is not read yet says nothing of where it is anchored.
  if (known && named === true && known.burnHeight !== undefined && known.burnHeight !== burnHeight) {
    return contradiction('anchor_differs', `block ${height} is anchored at burn height ${known.burnHeight}, not ${burnHeight}`);
  }
  if (finalHeight === undefined || finalBurn === undefined) return NOT_FINAL;
  if (named === false && height <= finalHeight)
    return contradiction('not_canonical_at_final_height', `the canonical block at final height ${height} is another one`);
  // The watermark block is the highest at its burn height: blocks below it are anchored no
  // higher, blocks above it no lower.
  if (height <= finalHeight && burnHeight > finalBurn) {
    return contradiction(
      'anchor_above_final_block',
      `block ${height} is at or below the final block ${finalHeight} (burn ${finalBurn}) but claims burn height ${burnHeight}`,
    );
  }
  if (height > finalHeight && burnHeight < finalBurn) {
    return contradiction(
      'anchor_below_final_block',
      `block ${height} is above the final block ${finalHeight} (burn ${finalBurn}) but claims burn height ${burnHeight}`,
    );
  }
  if (height > finalHeight) return NOT_FINAL;
  if (named === true) return { kind: 'final' };
  return position.blockHash === undefined ? NOT_FINAL : { kind: 'not-final', unverified: { height, blockHash: position.blockHash } };
}
