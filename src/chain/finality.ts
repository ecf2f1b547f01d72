/**
 * The finality watermark: data anchored at least `burnConfirmations` burn blocks below the
 * believed burn tip can no longer change. It is not derived from the tip alone (a wrong tip
 * would make recent data final for good): it moves only to a burn block verified by the
 * upstream that gave the believed tip, whose by_burn_block_height answer is a canonical block
 * anchored at exactly that burn height and no higher than the believed Stacks tip. Anchored
 * data at or below that burn height, in blocks at or below that block, is final. It follows
 * the tip believed now: when that tip comes down (a wrong tip corrected), a watermark above
 * the new tip's burn height minus confirmations is dropped and verified again lower, so it
 * never stands above what the believed tip allows. The upstream is asked through
 * `blockAtBurn`, so this module holds no I/O.
 *
 * The burn tip (what the status reports) is often above the tip block's anchor: burn blocks
 * come with no Stacks block in them (a stall, a tenure not started yet), and by_burn_block_height
 * answers 404 for each. The search for the watermark starts at the target burn height, or at the
 * tip block's own anchor when that is known and lower: no Stacks block can sit between the two,
 * so a long stall costs one request, not one per empty burn block.
 */
import type { CanonicalBlock, ChainTip } from './view.js';

/** What by_burn_block_height answered (undefined: 404, no Stacks block in that burn block). */
export interface BurnBlockAnswer {
  height?: unknown;
  burn_block_height?: unknown;
  canonical?: unknown;
  index_block_hash?: unknown;
  hash?: unknown;
}

export type BlockAtBurn = (burnHeight: number) => Promise<BurnBlockAnswer | undefined>;

/** Burn blocks without Stacks blocks (a missed tenure) are searched past, this many at most. */
const EMPTY_BURN_BLOCKS_SEARCHED = 16;

export class FinalityWatermark {
  private verified: CanonicalBlock | undefined;
  /** The search last made (target and where it started): asked once each. */
  private searched: string | undefined;

  constructor(private readonly burnConfirmations: number) {}

  /** The watermark block, when the believed `tip` allows it (at least burnConfirmations below it). */
  block(tip: ChainTip | undefined): CanonicalBlock | undefined {
    const verified = this.verified;
    if (!verified || !tip) return undefined;
    return verified.burnHeight <= tip.burnHeight - this.burnConfirmations && verified.height <= tip.height ? verified : undefined;
  }

  /** Burn height at or below which anchored data is final (never above `tip`'s burn height minus confirmations). */
  finalBurnHeight(tip: ChainTip | undefined): number | undefined {
    return this.block(tip)?.burnHeight;
  }

  /** Highest final Stacks height: the watermark block's (never above `tip`). */
  finalStacksHeight(tip: ChainTip | undefined): number | undefined {
    return this.block(tip)?.height;
  }

  /**
   * Asks once per new target (believed burn tip minus confirmations) and tip anchor, walking
   * down past empty burn blocks to the last verified one. Returns the block it verified, if it
   * verified one. Throws when the upstream fails (asked again next poll).
   */
  async advance(tip: ChainTip, blockAtBurn: BlockAtBurn): Promise<CanonicalBlock | undefined> {
    const target = tip.burnHeight - this.burnConfirmations;
    if (this.verified && !this.block(tip)) this.verified = undefined; // the tip came down below it
    // Nothing is anchored above the tip block's own anchor: the burn blocks between are empty.
    const anchor = tip.anchorBurnHeight;
    const start = anchor !== undefined && anchor >= 0 && anchor < target ? anchor : target;
    const search = `${target}:${start}`;
    if (target < 0 || search === this.searched) return undefined;
    const floor = Math.max(this.verified?.burnHeight ?? -1, start - EMPTY_BURN_BLOCKS_SEARCHED);
    let found: CanonicalBlock | undefined;
    for (let burnHeight = start; burnHeight > floor; burnHeight--) {
      const block = await blockAtBurn(burnHeight);
      // None there, or only an orphan (the upstream answers the highest block, canonical first).
      if (!block || block.canonical !== true) continue;
      const consistent =
        block.burn_block_height === burnHeight && typeof block.height === 'number' && block.height <= tip.height && typeof block.index_block_hash === 'string';
      if (consistent) {
        found = {
          height: block.height as number,
          burnHeight,
          indexBlockHash: block.index_block_hash as string,
          blockHash: typeof block.hash === 'string' ? block.hash : undefined,
        };
        this.verified = found;
      }
      break;
    }
    this.searched = search;
    return found;
  }

  /** Finality learned on a branch a reorg abandoned cannot be trusted above the fork: verified again. */
  lowerTo(forkHeight: number): void {
    if (this.verified && this.verified.height > forkHeight) this.verified = undefined;
    this.searched = undefined;
  }
}
