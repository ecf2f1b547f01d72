/**
 * Where a new tip left the old branch. The tracker remembers the index block hash of every
 * tip it saw by height; the fork point is the highest remembered height whose block is still
 * canonical. The upstream is asked through `canonicalHashAt`, so this module holds no I/O.
 */
export type CanonicalHashAt = (height: number) => Promise<string | undefined>;

// Enough history to find any fork point within reorgMaxWalk, and bounded forever.
const HISTORY_LIMIT = 512;

/** Index block hash of each tip seen, by height. */
export class TipHistory {
  private readonly seen = new Map<number, string>();

  remember(height: number, indexBlockHash: string): void {
    this.seen.set(height, indexBlockHash);
    if (this.seen.size > HISTORY_LIMIT) this.seen.delete(Math.min(...this.seen.keys()));
  }

  at(height: number): string | undefined {
    return this.seen.get(height);
  }

  /** After a reorg the blocks above the fork belong to the dead branch. */
  forgetAbove(height: number): void {
    for (const known of [...this.seen.keys()]) if (known > height) this.seen.delete(known);
  }
}

/** The new tip extends the old one when the old tip is still the canonical block at its height. */
export async function extendsTip(previous: { height: number; indexBlockHash: string }, nextHeight: number, canonicalHashAt: CanonicalHashAt): Promise<boolean> {
  if (nextHeight <= previous.height) return false;
  return (await canonicalHashAt(previous.height)) === previous.indexBlockHash;
}

/** Walks down at most `maxWalk` blocks; assumes the worst (the lowest height) when nothing matches. */
export async function findForkHeight(start: number, maxWalk: number, history: TipHistory, canonicalHashAt: CanonicalHashAt): Promise<number> {
  const lowest = Math.max(0, start - maxWalk);
  for (let height = start; height > lowest; height--) {
    const remembered = history.at(height);
    if (remembered === undefined) continue;
    if ((await canonicalHashAt(height)) === remembered) return height;
  }
  return lowest;
}
