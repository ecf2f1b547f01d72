/**
 * The finality watermark: data anchored at least `burnConfirmations` burn blocks below the
 * believed burn tip can no longer change. It is not derived from the tip alone (a wrong tip
 * would make recent data final for good): it moves only to a burn block verified by the
 * upstream that gave the believed tip, whose by_burn_block_height answer is a canonical block
 * anchored at exactly that burn height and no higher than the believed Stacks tip. Anchored
 * data at or below that burn height, and Stacks heights at or below that block, are final.
 * The upstream is asked through `blockAtBurn`, so this module holds no I/O.
 */
import type { ChainTip } from './view.js';

/** What by_burn_block_height answered (undefined: 404, no Stacks block in that burn block). */
export interface BurnBlockAnswer {
  height?: unknown;
  burn_block_height?: unknown;
  canonical?: unknown;
}

export type BlockAtBurn = (burnHeight: number) => Promise<BurnBlockAnswer | undefined>;

/** Burn blocks without Stacks blocks (a missed tenure) are searched past, this many at most. */
const EMPTY_BURN_BLOCKS_SEARCHED = 16;

interface Watermark {
  burnHeight: number;
  stacksHeight: number;
}

export class FinalityWatermark {
  private verified: Watermark | undefined;
  private targetChecked: number | undefined;

  constructor(private readonly burnConfirmations: number) {}

  /** Burn height at or below which anchored data is final (never above `tip`'s burn height minus confirmations). */
  finalBurnHeight(tip: ChainTip | undefined): number | undefined {
    if (!this.verified || !tip) return undefined;
    return Math.min(this.verified.burnHeight, tip.burnHeight - this.burnConfirmations);
  }

  /** Highest final Stacks height (never above `tip`). */
  finalStacksHeight(tip: ChainTip | undefined): number | undefined {
    if (!this.verified || !tip) return undefined;
    return Math.min(this.verified.stacksHeight, tip.height);
  }

  /**
   * Asks once per new target (believed burn tip minus confirmations), walking down past empty
   * burn blocks to the last verified one. Throws when the upstream fails (asked again next poll).
   */
  async advance(tip: ChainTip, blockAtBurn: BlockAtBurn): Promise<void> {
    const target = tip.burnHeight - this.burnConfirmations;
    if (target < 0 || target === this.targetChecked) return;
    const floor = Math.max(this.verified?.burnHeight ?? -1, target - EMPTY_BURN_BLOCKS_SEARCHED);
    for (let burnHeight = target; burnHeight > floor; burnHeight--) {
      const block = await blockAtBurn(burnHeight);
      // None there, or only an orphan (the upstream answers the highest block, canonical first).
      if (!block || block.canonical !== true) continue;
      const consistent = block.burn_block_height === burnHeight && typeof block.height === 'number' && block.height <= tip.height;
      if (consistent) this.verified = { burnHeight, stacksHeight: block.height as number };
      break;
    }
    this.targetChecked = target;
  }

  /** Finality learned on a branch a reorg abandoned cannot be trusted above the fork: verified again. */
  lowerTo(forkHeight: number): void {
    if (this.verified && this.verified.stacksHeight > forkHeight) this.verified = undefined;
    this.targetChecked = undefined;
  }
}
