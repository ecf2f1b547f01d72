/**
 * The warm-up of a new block (issue 16): when the tracker believes a new tip (a reorg's too),
 * the proxy reads what clients ask next before the first of them asks, so that their first
 * reads after a block are hits:
 *   1. the block, `/extended/v2/blocks/{height}` (route 5);
 *   2. the hottest tip-class URLs clients asked under the previous tips (hot-urls.ts), a URL
 *      that named the previous block (by height, hash or burn height) now naming the new one;
 *   3. the block's transactions, in one `/extended/v1/tx/multiple` (its members are stored at
 *      the transactions' own keys, so `/extended/v1/tx/{id}` hits too), as soon as the block
 *      learner read their ids (block-learner.ts): the learner's request is not asked again.
 *
 * Every read is the proxy's own read through the read path a client's read takes (own-reads.ts:
 * the same keys, admission, single-flight and evidence; nothing is written to the store any
 * other way), without a response and without a rate-limit charge. A read already fresh in memory
 * costs nothing; every other one is one request of the block's budget
 * (`live.warm.maxRequestsPerBlock`; one is kept for the transactions while the learner reads
 * them). Warm-ups come after clients: a read is skipped while no usable upstream is idle (its
 * queue empty, half its slots free), and what is left of a block's warm-up is dropped when the
 * next tip arrives. Nothing here throws; every read is counted (telemetry.warmRequest).
 */
import { asOwn } from '../upstream/own-purpose.js';
import type { ChainTip } from '../chain/view.js';
import type { ReadResult } from '../cache/read-path.js';
import type { Prefetch } from '../http/read-handler.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { instantiate, type HotUrl, type HotUrls } from './hot-urls.js';

export type WarmKind = 'block' | 'transactions' | 'hot';

/**
 * What became of one warm read: `hit` (fresh already, no request), `fetched` (asked and stored,
 * or revalidated), `stale` (an entry served while it refreshes), `passed` (answered but not
 * stored), `uncached` (not a cached read), `failed` (the upstream failed), `busy` (the upstream
 * had no room), `over_budget`, `superseded` (a newer tip arrived first).
 */
export type WarmOutcome = 'hit' | 'fetched' | 'stale' | 'passed' | 'uncached' | 'failed' | 'busy' | 'over_budget' | 'superseded';

/** The proxy's own read of `url`, planned as a client's GET (own-reads.ts); undefined: not a cached read. */
export type OwnRead = (url: string) => Prefetch | undefined;

export interface WarmSettings {
  enabled: boolean;
  maxRequestsPerBlock: number;
}

export interface BlockWarmerDeps {
  settings: WarmSettings;
  hot: HotUrls;
  read: OwnRead;
  /** Whether a usable upstream has room for a read no client waits for. */
  upstreamIdle: () => boolean;
  /** The block learner tells the block's transactions (transactionsOf): a request of the budget waits for them. */
  learnsTransactions: boolean;
  telemetry: Telemetry;
}

/** Warm reads in flight at once for one block. */
const READS_AT_ONCE = 4;
/** Ids in the one tx/multiple (about 6.8 KB of URL; the route takes 250, node:http's header limit is 16 KiB). */
const MAX_TX_IDS = 100;
const TX_ID = /^0x[0-9a-f]{64}$/;

interface Run {
  tip: ChainTip;
  generation: number;
  budget: number;
  /** Requests kept for the transactions until the learner told them (or never does). */
  kept: number;
}

function outcomeOf(result: ReadResult): WarmOutcome {
  switch (result.cacheStatus) {
    case 'HIT':
      return 'hit';
    case 'STALE':
      return 'stale';
    case 'BYPASS':
      return 'passed';
    default:
      return 'fetched';
  }
}

export class BlockWarmer {
  private generation = 0;
  private current: Run | undefined;
  private stopped = false;

  constructor(private readonly deps: BlockWarmerDeps) {}

  /** The tracker's hook (onNewTip, before the tip is published): warms once it is. Never throws. */
  onTip(tip: ChainTip): void {
    const hottest = this.deps.hot.rotate();
    const { enabled, maxRequestsPerBlock } = this.deps.settings;
    if (!enabled || this.stopped) return;
    const run: Run = { tip, generation: ++this.generation, budget: maxRequestsPerBlock, kept: this.deps.learnsTransactions ? 1 : 0 };
    this.current = run;
    // The tracker publishes the tip right after its listeners: the reads must see it.
    setImmediate(() => {
      this.warm(run, hottest).catch(() => undefined);
    });
  }

  /** The block learner read the ids of a block's transactions: one tx/multiple for them. Never throws. */
  transactionsOf(block: { indexBlockHash: string }, txIds: readonly unknown[]): void {
    const run = this.current;
    if (!run || this.stopped || run.tip.indexBlockHash !== block.indexBlockHash) return;
    run.kept = 0;
    const ids = txIds.filter((id): id is string => typeof id === 'string' && TX_ID.test(id)).slice(0, MAX_TX_IDS);
    if (ids.length === 0) return;
    this.warmOne(run, 'transactions', `/extended/v1/tx/multiple?tx_id=${ids.join(',')}`).catch(() => undefined);
  }

  /** Stops warming (shutdown): reads in flight end on their own. */
  stop(): void {
    this.stopped = true;
  }

  private async warm(run: Run, hottest: readonly HotUrl[]): Promise<void> {
    const block = `/extended/v2/blocks/${run.tip.height}`;
    const planned: { kind: WarmKind; url: string }[] = [{ kind: 'block', url: block }];
    const seen = new Set([block]);
    for (const hot of hottest) {
      const url = hot.templated ? instantiate(hot.url, run.tip) : hot.url;
      if (url === undefined || seen.has(url)) continue;
      seen.add(url);
      planned.push({ kind: 'hot', url });
    }
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < planned.length) {
        const item = planned[next++] as { kind: WarmKind; url: string };
        await this.warmOne(run, item.kind, item.url);
      }
    };
    await Promise.all(Array.from({ length: Math.min(READS_AT_ONCE, planned.length) }, worker));
  }

  private async warmOne(run: Run, kind: WarmKind, url: string): Promise<void> {
    const count = (outcome: WarmOutcome) => this.deps.telemetry.warmRequest(kind, outcome);
    if (this.stopped || run.generation !== this.generation) return count('superseded');
    let prefetch: Prefetch | undefined;
    try {
      prefetch = this.deps.read(url);
    } catch {
      return count('failed');
    }
    if (!prefetch) return count('uncached');
    if (prefetch.fresh) return count('hit');
    const keep = kind === 'transactions' ? 0 : run.kept;
    if (run.budget - keep <= 0) return count('over_budget');
    if (!this.deps.upstreamIdle()) return count('busy');
    run.budget -= 1;
    try {
      const ready = prefetch;
      count(outcomeOf(await asOwn('warmup', () => ready.read())));
    } catch {
      count('failed');
    }
  }
}
