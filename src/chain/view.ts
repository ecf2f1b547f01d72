import type { ActivityView } from './activity-view.js';

/**
 * The chain model as the cache policy sees it: the tip, the reorgs seen so far, the finality
 * watermark and the canonical blocks the proxy has verified. Pure types; src/chain/tracker.ts
 * keeps them up to date.
 */
export interface ChainTip {
  height: number;
  indexBlockHash: string;
  burnHeight: number;
  /** The tip's block_hash, when the upstream sent it (transactions name their block by it). */
  blockHash?: string;
  /** The tip block's own anchoring burn height (its burn_block_height), once read; burnHeight is the burn chain's tip. */
  anchorBurnHeight?: number;
}

export interface ReorgRecord {
  /** When the proxy saw the reorg (ms). Entries validated before it are suspect. */
  at: number;
  /** Highest block height both branches share; final entries above it are purged. */
  forkHeight: number;
}

/** A canonical block as the proxy verified it: where it sits and what it is called. */
export interface CanonicalBlock {
  height: number;
  burnHeight: number;
  indexBlockHash: string;
  /** block_hash: transactions name their block by it. Absent when the source did not carry it. */
  blockHash?: string;
}

/** A block an answer names: its height and block_hash (what a check asks the upstream about). */
export interface BlockRef {
  height: number;
  blockHash: string;
}

/** The verified canonical block at a height, if the proxy knows it (chain/canonical-record.ts). */
export interface CanonicalLookup {
  at(height: number): CanonicalBlock | undefined;
}

/** What the proxy knows of the chain when it decides. */
export interface ChainView {
  tipHash?: string;
  tipHeight?: number;
  burnHeight?: number;
  /** The believed tip block's anchoring burn height, once read (burnHeight is the burn chain's tip). */
  tipAnchorBurnHeight?: number;
  /**
   * The finality watermark: a canonical block, verified, at least burnConfirmations burn blocks
   * below the believed burn tip. Data anchored at or below `finalBurnHeight` in a block at or
   * below `finalStacksHeight` is final; the pair always names one block, and both come down
   * with the believed tip.
   */
  finalBurnHeight?: number;
  finalStacksHeight?: number;
  /**
   * Above these no honest answer can sit: the highest tip any upstream reports now (held jumps
   * included), plus maxJumpBlocks for the blocks that land between two polls.
   */
  heightCeiling?: number;
  burnCeiling?: number;
  /**
   * Verified canonical blocks by height. Live: it only gains verified blocks, and loses those
   * above a fork after a reorg (whose record purges what was validated on the old branch).
   */
  canonical?: CanonicalLookup;
  reorgs: readonly ReorgRecord[];
  /**
   * Principals' activity beyond the tip (broadcasts through the proxy, what blocks touched):
   * the registry of chain/activity.ts, set by the composition root. Absent: the policy decides
   * by tip and TTL alone.
   */
  activity?: ActivityView;
}
