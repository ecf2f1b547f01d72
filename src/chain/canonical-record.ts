/**
 * The canonical blocks the proxy has verified, by height: the believed tips, the blocks the
 * finality watermark was verified on, and blocks checked on demand (one request, when an
 * answer would be final and the block it names is not known yet). An answer is final only
 * when the block it names is the one recorded at its height (cache/chain-position.ts). Bounded:
 * the oldest record goes first. After a reorg the records above the fork point belong to the dead branch.
 */
import type { CanonicalBlock, CanonicalLookup, RecordedBlock } from './view.js';

/** Enough for the blocks a busy proxy serves final data of; a record is about 200 bytes. */
const RECORDS_KEPT = 4096;

export class CanonicalRecord implements CanonicalLookup {
  private readonly blocks = new Map<number, RecordedBlock>();

  constructor(private readonly limit = RECORDS_KEPT) {}

  at(height: number): RecordedBlock | undefined {
    return this.blocks.get(height);
  }

  remember(block: RecordedBlock): void {
    const known = this.blocks.get(block.height);
    // What is learned later (a check's block_hash, the tip's anchor) completes a record from a
    // source without it (a tip poll), and a source without it does not erase it.
    const merged =
      known?.indexBlockHash === block.indexBlockHash
        ? { ...block, blockHash: block.blockHash ?? known.blockHash, burnHeight: block.burnHeight ?? known.burnHeight }
        : block;
    this.blocks.delete(block.height);
    this.blocks.set(block.height, merged);
    if (this.blocks.size > this.limit) this.blocks.delete(this.blocks.keys().next().value as number);
  }

  forgetAbove(height: number): void {
    for (const known of [...this.blocks.keys()]) if (known > height) this.blocks.delete(known);
  }
}

/** A block answer (/extended/v2/blocks/{height or hash}) as a canonical block, when it is one. */
export function canonicalBlockOf(answer: unknown): CanonicalBlock | undefined {
  if (answer === null || typeof answer !== 'object') return undefined;
  const block = answer as { height?: unknown; burn_block_height?: unknown; index_block_hash?: unknown; hash?: unknown; canonical?: unknown };
  if (block.canonical !== true || typeof block.height !== 'number') return undefined;
  if (typeof block.burn_block_height !== 'number' || typeof block.index_block_hash !== 'string') return undefined;
  return {
    height: block.height,
    burnHeight: block.burn_block_height,
    indexBlockHash: block.index_block_hash,
    blockHash: typeof block.hash === 'string' ? block.hash : undefined,
  };
}
