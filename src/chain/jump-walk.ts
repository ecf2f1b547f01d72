/**
 * Evidence for a tip that jumped far ahead, from the one upstream that reports it: its parent
 * chain. Starting at the jumped tip, each block is asked for by height and must be canonical,
 * be the block its child named (index_block_hash = the child's parent_index_block_hash), and be
 * anchored no higher than its child (the jumped tip itself no higher than the burn tip it was
 * reported with: the status reports the burn chain's tip, which an anchor never passes) and no
 * lower than the believed tip block's anchor, when that was read; the walk succeeds when
 * it reaches the believed tip's height at the believed tip itself. An upstream with a wrong
 * view of the tip cannot give that (a made-up tip has no such chain below it); one syncing
 * after a restart can. Bounded: `blocksPerPoll` requests a poll, resumed on the next poll (the
 * believed tip stays, and is served from, meanwhile). The upstream is asked through `blockAt`,
 * so this module holds no I/O.
 */
import type { ChainTip } from './view.js';

/** What /extended/v2/blocks/{height} answered (undefined: 404). */
export type BlockAt = (height: number) => Promise<unknown>;

export type WalkResult = 'linked' | 'walking' | 'broken';

interface Walk {
  target: ChainTip;
  /** The next block down: its height, the hash its child named, and the highest burn height it may have. */
  next: { height: number; indexBlockHash: string; maxBurnHeight: number };
}

interface WalkedBlock {
  height?: unknown;
  index_block_hash?: unknown;
  parent_index_block_hash?: unknown;
  burn_block_height?: unknown;
  canonical?: unknown;
}

export class ParentWalks {
  /** At most one walk per upstream: of the last jumped tip it reported. */
  private readonly walks = new Map<string, Walk>();

  constructor(private readonly blocksPerPoll: number) {}

  /**
   * Walks on (at most `blocksPerPoll` blocks) from `target`, the jumped tip `origin` reports,
   * towards `believed`. Throws when the upstream fails (the walk resumes next poll).
   */
  async step(origin: string, target: ChainTip, believed: ChainTip, blockAt: BlockAt): Promise<WalkResult> {
    let walk = this.walks.get(origin);
    if (walk?.target.indexBlockHash !== target.indexBlockHash) {
      walk = { target, next: { height: target.height, indexBlockHash: target.indexBlockHash, maxBurnHeight: target.burnHeight } };
      this.walks.set(origin, walk);
    }
    for (let asked = 0; ; asked++) {
      const { next } = walk;
      if (next.height <= believed.height) {
        this.walks.delete(origin);
        return next.height === believed.height && next.indexBlockHash === believed.indexBlockHash ? 'linked' : 'broken';
      }
      if (asked === this.blocksPerPoll) return 'walking';
      const block = (await blockAt(next.height)) as WalkedBlock | undefined;
      const burnHeight = block?.burn_block_height;
      const fits =
        block?.canonical === true &&
        block.height === next.height &&
        block.index_block_hash === next.indexBlockHash &&
        typeof block.parent_index_block_hash === 'string' &&
        typeof burnHeight === 'number' &&
        burnHeight <= next.maxBurnHeight &&
        burnHeight >= (believed.anchorBurnHeight ?? 0);
      if (!fits) {
        this.walks.delete(origin);
        return 'broken';
      }
      walk.next = { height: next.height - 1, indexBlockHash: block.parent_index_block_hash as string, maxBurnHeight: burnHeight };
    }
  }

  /** The upstream reports no jump any more: its walk is over. */
  end(origin: string): void {
    this.walks.delete(origin);
  }
}
