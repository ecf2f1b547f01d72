/**
 * The tip-class URLs clients asked most under the recent tips: what the warm-up of the next
 * block refreshes before the first client asks again (block-warmer.ts). Only reads that carry
 * no credential (no Authorization, no x-api-key: their answers are the client's own business)
 * and were answered 200 from a tip-class or tip-keyed entry are told here (request-log.ts).
 *
 * A URL naming the tip it was asked under (its height, index block hash, block hash or burn
 * height as a whole path segment: `/extended/v2/blocks/1234`, `/extended/v1/block/
 * by_burn_block_height/870001`, `/extended/v2/blocks/0x…/transactions?limit=20`) is kept as a
 * template: what clients ask of a new block is the same URL about the next one.
 *
 * Bounded: at most `capacity` URLs (a URL longer than MAX_URL_CHARS is not kept), a new one is
 * not kept while full; on each new tip every count is halved and the URLs at 0 go (rotate: one
 * sort of the URLs kept, once per block), so a flood of one-off URLs leaves room again one block
 * later while URLs clients keep asking stay on top. Recording is one Map update.
 */
import type { IncomingMessage } from 'node:http';
import type { ChainTip } from '../chain/view.js';

const MAX_URL_CHARS = 1024;
/** URLs kept per URL warmed: room to tell the hot from the merely seen. */
const KEPT_PER_WARMED = 4;

type Slot = 'height' | 'index_block_hash' | 'block_hash' | 'burn_height';

/** A hot URL: as it is, or a template whose `{slot}` segments name the tip's block. */
export interface HotUrl {
  url: string;
  count: number;
  templated: boolean;
}

const SLOT_PATTERN = /\{(height|index_block_hash|block_hash|burn_height)\}/g;

/** The tip's value of each slot, as a segment; the hashes keep the `0x` the tip has. */
function slotValues(tip: ChainTip): Record<Slot, string | undefined> {
  return {
    height: String(tip.height),
    index_block_hash: tip.indexBlockHash.toLowerCase(),
    block_hash: tip.blockHash?.toLowerCase(),
    burn_height: tip.burnHeight > 0 ? String(tip.burnHeight) : undefined,
  };
}

/** `template` with the slots of `tip` filled in; undefined when the tip lacks one of them. */
export function instantiate(template: string, tip: ChainTip): string | undefined {
  const values = slotValues(tip);
  let missing = false;
  const url = template.replace(SLOT_PATTERN, (_, slot: Slot) => {
    const value = values[slot];
    if (value === undefined) missing = true;
    return value ?? '';
  });
  return missing ? undefined : url;
}

/**
 * `url` with the path segments naming `tip` replaced by their slots; `url` itself when none
 * does. The query is left as it is (a `?height=` there pins a reader to that block on purpose).
 */
export function templateOf(url: string, tip: ChainTip): { url: string; templated: boolean } {
  const mark = url.indexOf('?');
  const path = mark < 0 ? url : url.slice(0, mark);
  const values = slotValues(tip);
  // A cheap test first: most URLs name no block at all.
  const named = (Object.values(values) as (string | undefined)[]).some((value) => value !== undefined && path.toLowerCase().includes(value));
  if (!named) return { url, templated: false };
  let templated = false;
  const segments = path.split('/').map((segment) => {
    const lower = segment.toLowerCase();
    // Stacks height before burn height: where they are equal, the Stacks block is the likelier reading.
    for (const slot of ['height', 'index_block_hash', 'block_hash', 'burn_height'] as const) {
      if (values[slot] !== undefined && lower === values[slot]) {
        templated = true;
        return `{${slot}}`;
      }
    }
    return segment;
  });
  return templated ? { url: segments.join('/') + (mark < 0 ? '' : url.slice(mark)), templated } : { url, templated: false };
}

export class HotUrls {
  private readonly counts = new Map<string, HotUrl>();
  /**
   * Each URL as asked, to the entry it counts on, under `seenTip`: record() runs on the hit path,
   * so a URL asked again under the same tip costs one lookup, not a templating.
   */
  private readonly asked = new Map<string, HotUrl>();
  private seenTip: ChainTip | undefined;
  private readonly capacity: number;

  /** `warmed`: live.warm.hotUrls (0: nothing is kept); `tip`: the tip believed now. */
  constructor(
    private readonly warmed: number,
    private readonly tip: () => ChainTip | undefined,
  ) {
    this.capacity = warmed * KEPT_PER_WARMED;
  }

  get size(): number {
    return this.counts.size;
  }

  /** A read answered 200 from a tip-class entry (request-log.ts): kept when it may be warmed. */
  record(req: IncomingMessage): void {
    if (this.capacity === 0) return;
    const method = req.method;
    if (method !== 'GET' && method !== 'HEAD') return;
    const headers = req.headers;
    if (headers.authorization !== undefined || headers['x-api-key'] !== undefined) return;
    const url = req.url;
    const tip = this.tip();
    if (url === undefined || url.length > MAX_URL_CHARS || !url.startsWith('/') || !tip) return;
    // A URL's template depends on the tip it is read against.
    if (tip !== this.seenTip) {
      this.asked.clear();
      this.seenTip = tip;
    }
    const asked = this.asked.get(url);
    if (asked) {
      asked.count += 1;
      return;
    }
    const { url: key, templated } = templateOf(url, tip);
    let hot = this.counts.get(key);
    if (hot) hot.count += 1;
    else if (this.counts.size < this.capacity) this.counts.set(key, (hot = { url: key, count: 1, templated }));
    // Only URLs that count on a kept entry: the map stays within the kept entries' askers.
    if (hot && this.asked.size < this.capacity) this.asked.set(url, hot);
  }

  /**
   * The new tip's turn: the `warmed` hottest URLs asked so far (most asked first), then every
   * count halved, those at 0 forgotten.
   */
  rotate(): HotUrl[] {
    const hottest = [...this.counts.values()]
      .sort((a, b) => b.count - a.count)
      .slice(0, this.warmed)
      .map((hot) => ({ ...hot }));
    for (const [key, hot] of this.counts) {
      hot.count = Math.floor(hot.count / 2);
      if (hot.count === 0) this.counts.delete(key);
    }
    // Entries may have gone: URLs are looked up again from the next read on.
    this.asked.clear();
    return hottest;
  }
}
