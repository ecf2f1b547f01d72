/**
 * The chain model as the cache policy sees it: the tip, the reorgs seen so far and the
 * finality watermark. Pure types; src/chain/tracker.ts keeps them up to date.
 */
export interface ChainTip {
  height: number;
  indexBlockHash: string;
  burnHeight: number;
}

export interface ReorgRecord {
  /** When the proxy saw the reorg (ms). Entries validated before it are suspect. */
  at: number;
  /** Highest block height both branches share; final entries above it are purged. */
  forkHeight: number;
}

/** What the proxy knows of the chain when it decides. */
export interface ChainView {
  tipHash?: string;
  tipHeight?: number;
  burnHeight?: number;
  /** Burn height at or below which anchored data is final (burn tip minus confirmations). */
  finalBurnHeight?: number;
  /** Highest Stacks height known to be anchored in a final burn block. */
  finalStacksHeight?: number;
  reorgs: readonly ReorgRecord[];
}
