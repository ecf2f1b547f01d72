/**
 * Tracks the upstream's chain tip by polling `GET /extended` with If-None-Match (a 304 until
 * a block arrives), detects reorgs (a new tip that does not extend the old one) and learns
 * which Stacks height is final (anchored at least `burnConfirmations` burn blocks deep).
 */
import type { ChainView, ReorgRecord } from '../cache/policy.js';
import type { UpstreamClient } from './client.js';

export interface ChainTip {
  height: number;
  indexBlockHash: string;
  burnHeight: number;
}

export interface ChainTipSettings {
  pollIntervalMs: number;
  burnConfirmations: number;
  /** How many blocks back a reorg's fork point is searched for before assuming the worst. */
  reorgMaxWalk: number;
}

export interface ChainTipObserver {
  onTip?(tip: ChainTip): void;
  onReorg?(record: ReorgRecord, from: ChainTip, to: ChainTip): void;
  onError?(error: unknown): void;
}

// Enough history to find any fork point within reorgMaxWalk and bounded forever.
const HISTORY_LIMIT = 512;
const REORG_RECORDS_KEPT = 256;

interface StatusBody {
  chain_tip?: { block_height?: number; index_block_hash?: string; burn_block_height?: number };
}

function parseJson<T>(body: Buffer): T | undefined {
  try {
    return JSON.parse(body.toString('utf8')) as T;
  } catch {
    return undefined;
  }
}

export class ChainTipTracker {
  private current: ChainTip | undefined;
  private currentOrigin: string | undefined;
  /** Last tip and ETag each upstream sent, for If-None-Match. */
  private readonly perUpstream = new Map<string, { etag: string; tip: ChainTip }>();
  private finalStacksHeight: number | undefined;
  private finalityBurnHeight: number | undefined;
  private readonly reorgs: ReorgRecord[] = [];
  /** Index block hash of every tip seen, by height: the reference for fork search. */
  private readonly seen = new Map<number, string>();
  private snapshot: ChainView = { reorgs: [] };
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private lastSuccessAt: number | undefined;
  private stopped = false;

  constructor(
    private readonly upstream: UpstreamClient,
    private readonly settings: ChainTipSettings,
    private readonly observer: ChainTipObserver = {},
    private readonly now: () => number = Date.now,
  ) {}

  get tip(): ChainTip | undefined {
    return this.current;
  }

  view(): ChainView {
    return this.snapshot;
  }

  /** Polls every `pollIntervalMs` from now on (the caller usually awaited a first pollOnce). */
  start(): void {
    const schedule = (): void => {
      if (this.stopped) return;
      this.timer = setTimeout(() => void this.pollOnce().then(schedule), this.settings.pollIntervalMs);
      this.timer.unref();
    };
    schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.polling;
  }

  /** One poll; concurrent calls share it. Never throws (errors go to the observer). */
  pollOnce(): Promise<void> {
    this.polling ??= this.poll()
      .catch((error: unknown) => this.observer.onError?.(error))
      .finally(() => (this.polling = undefined));
    return this.polling;
  }

  /**
   * Polls every upstream (the poll is also their health check and lag measure); the highest
   * tip any of them reports is the chain tip, and that upstream answers the follow-up checks.
   */
  private async poll(): Promise<void> {
    const answers = await Promise.all(this.upstream.origins.map((origin) => this.pollUpstream(origin)));
    let best: { origin: string; tip: ChainTip } | undefined;
    for (const answer of answers) {
      if (answer && (!best || answer.tip.height > best.tip.height)) best = answer;
    }
    if (!best) throw new Error('no upstream answered the chain tip poll');
    this.lastSuccessAt = this.now();
    if (this.isLaggingView(best)) return;
    if (best.tip.indexBlockHash !== this.current?.indexBlockHash) await this.advanceTo(best.tip, best.origin);
    this.currentOrigin = best.origin;
    await this.refreshFinality(best.tip.burnHeight, best.origin);
    this.publish();
  }

  /**
   * A lower tip from another upstream than the one that gave the current tip means that one
   * did not answer this time (or fell behind), not that the chain went back: a reorg to a lower
   * height is only believed from the upstream that was leading.
   */
  private isLaggingView(best: { origin: string; tip: ChainTip }): boolean {
    const current = this.current;
    if (!current || best.tip.height >= current.height) return false;
    return best.origin !== this.currentOrigin || this.seen.get(best.tip.height) === best.tip.indexBlockHash;
  }

  /** One upstream's tip: a 304 repeats the last one it sent. Failures leave it out. */
  private async pollUpstream(origin: string): Promise<{ origin: string; tip: ChainTip } | undefined> {
    const known = this.perUpstream.get(origin);
    const headers: Record<string, string> = known ? { 'if-none-match': known.etag } : {};
    let response;
    try {
      response = await this.upstream.getFrom(origin, { path: '/extended', route: 'chain_tip', headers });
    } catch (error) {
      this.observer.onError?.(error);
      return undefined;
    }
    if (response.status === 304 && known) return { origin, tip: known.tip };
    const tip = response.status === 200 ? parseJson<StatusBody>(response.body)?.chain_tip : undefined;
    if (!tip || typeof tip.block_height !== 'number' || typeof tip.index_block_hash !== 'string') {
      this.observer.onError?.(new Error(`chain tip poll of ${origin} answered ${response.status} without a chain_tip`));
      return undefined;
    }
    const parsed: ChainTip = { height: tip.block_height, indexBlockHash: tip.index_block_hash, burnHeight: tip.burn_block_height ?? 0 };
    if (response.headers.etag) this.perUpstream.set(origin, { etag: response.headers.etag, tip: parsed });
    this.upstream.reportTip(origin, parsed.height);
    return { origin, tip: parsed };
  }

  private async advanceTo(next: ChainTip, origin: string): Promise<void> {
    const previous = this.current;
    if (previous && !(await this.extends(previous, next, origin))) {
      const forkHeight = await this.findForkHeight(Math.min(previous.height, next.height), origin);
      const record = { at: this.now(), forkHeight };
      this.reorgs.push(record);
      this.foldOldReorgs();
      for (const height of [...this.seen.keys()]) if (height > forkHeight) this.seen.delete(height);
      // Finality learned on the old branch above the fork cannot be trusted.
      if (this.finalStacksHeight !== undefined && this.finalStacksHeight > forkHeight) this.finalStacksHeight = forkHeight;
      this.observer.onReorg?.(record, previous, next);
    }
    this.current = next;
    this.seen.set(next.height, next.indexBlockHash);
    if (this.seen.size > HISTORY_LIMIT) this.seen.delete(Math.min(...this.seen.keys()));
    this.observer.onTip?.(next);
  }

  /**
   * Keeps the reorg list bounded without forgetting: the two oldest records merge into one
   * that is at least as strict (latest time, lowest fork), so nothing they purged comes back.
   */
  private foldOldReorgs(): void {
    while (this.reorgs.length > REORG_RECORDS_KEPT) {
      const [first, second] = this.reorgs.splice(0, 2) as [ReorgRecord, ReorgRecord];
      this.reorgs.unshift({ at: Math.max(first.at, second.at), forkHeight: Math.min(first.forkHeight, second.forkHeight) });
    }
  }

  /** The new tip extends the old one when the old tip is still the canonical block at its height. */
  private async extends(previous: ChainTip, next: ChainTip, origin: string): Promise<boolean> {
    if (next.height <= previous.height) return false;
    return (await this.canonicalHashAt(previous.height, origin)) === previous.indexBlockHash;
  }

  private async findForkHeight(start: number, origin: string): Promise<number> {
    const lowest = Math.max(0, start - this.settings.reorgMaxWalk);
    for (let height = start; height > lowest; height--) {
      const remembered = this.seen.get(height);
      if (remembered === undefined) continue;
      if ((await this.canonicalHashAt(height, origin)) === remembered) return height;
    }
    return lowest;
  }

  private async canonicalHashAt(height: number, origin: string): Promise<string | undefined> {
    const response = await this.upstream.getFrom(origin, { path: `/extended/v2/blocks/${height}`, route: 'chain_tip' });
    if (response.status !== 200) return undefined;
    return parseJson<{ index_block_hash?: string }>(response.body)?.index_block_hash;
  }

  /** The highest Stacks block in the burn block `burnConfirmations` deep is the final watermark. */
  private async refreshFinality(burnHeight: number, origin: string): Promise<void> {
    const target = burnHeight - this.settings.burnConfirmations;
    if (target < 0 || target === this.finalityBurnHeight) return;
    const response = await this.upstream.getFrom(origin, { path: `/extended/v1/block/by_burn_block_height/${target}`, route: 'chain_tip' });
    if (response.status === 200) {
      const block = parseJson<{ height?: number; canonical?: boolean }>(response.body);
      if (typeof block?.height === 'number' && block.canonical !== false) this.finalStacksHeight = block.height;
    }
    // A burn block without Stacks blocks (404) keeps the previous watermark, which is still final.
    this.finalityBurnHeight = target;
  }

  private publish(): void {
    const tip = this.current;
    this.snapshot = {
      tipHash: tip?.indexBlockHash,
      tipHeight: tip?.height,
      burnHeight: tip?.burnHeight,
      finalBurnHeight: tip ? tip.burnHeight - this.settings.burnConfirmations : undefined,
      finalStacksHeight: this.finalStacksHeight,
      reorgs: [...this.reorgs],
    };
  }
}
