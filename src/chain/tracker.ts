/**
 * Tracks the upstream's chain tip by polling `GET /extended` with If-None-Match (a 304 until
 * a block arrives), detects reorgs (a new tip that does not extend the old one, fork-search.ts)
 * and learns which Stacks height is final (finality.ts). Each upstream's tip goes to the
 * upstream health owner, which decides from it which upstreams lag.
 */
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';
import type { Clock } from '../clock.js';
import type { UpstreamRequest, UpstreamResponse } from '../upstream/client.js';
import { FinalityWatermark } from './finality.js';
import { extendsTip, findForkHeight, TipHistory } from './fork-search.js';
import { ReorgLog } from './reorg-log.js';
import type { ChainTip, ChainView } from './view.js';

export type { ChainTip } from './view.js';

export interface ChainTipSettings {
  pollIntervalMs: number;
  burnConfirmations: number;
  /** How many blocks back a reorg's fork point is searched for before assuming the worst. */
  reorgMaxWalk: number;
}

/** What the tracker needs of the upstreams: who they are, and one request to a named one. */
export interface TipSource {
  readonly origins: string[];
  getFrom(origin: string, request: UpstreamRequest): Promise<UpstreamResponse>;
}

/** Where each upstream's tip height goes (the upstream health owner). */
export interface TipReceiver {
  reportTip(origin: string, height: number): void;
}

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
  private readonly finality: FinalityWatermark;
  private readonly reorgs = new ReorgLog();
  /** The reference for fork search. */
  private readonly history = new TipHistory();
  private snapshot: ChainView = { reorgs: [] };
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly upstream: TipSource,
    private readonly health: TipReceiver,
    private readonly settings: ChainTipSettings,
    private readonly clock: Clock,
    private readonly telemetry: Telemetry = noopTelemetry,
  ) {
    this.finality = new FinalityWatermark(settings.burnConfirmations);
  }

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

  /** One poll; concurrent calls share it. Never throws (errors go to telemetry). */
  pollOnce(): Promise<void> {
    this.polling ??= this.poll()
      .catch((error: unknown) => this.telemetry.tipPollFailed(error))
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
    if (this.isLaggingView(best)) return;
    if (best.tip.indexBlockHash !== this.current?.indexBlockHash) await this.advanceTo(best.tip, best.origin);
    this.currentOrigin = best.origin;
    const origin = best.origin;
    await this.finality.advance(best.tip.burnHeight, (burnHeight) => this.stacksHeightAtBurn(burnHeight, origin));
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
    return best.origin !== this.currentOrigin || this.history.at(best.tip.height) === best.tip.indexBlockHash;
  }

  /** One upstream's tip: a 304 repeats the last one it sent. Failures leave it out. */
  private async pollUpstream(origin: string): Promise<{ origin: string; tip: ChainTip } | undefined> {
    const known = this.perUpstream.get(origin);
    const headers: Record<string, string> = known ? { 'if-none-match': known.etag } : {};
    let response;
    try {
      response = await this.upstream.getFrom(origin, { path: '/extended', route: 'chain_tip', headers });
    } catch (error) {
      this.telemetry.tipPollFailed(error);
      return undefined;
    }
    if (response.status === 304 && known) return { origin, tip: known.tip };
    const tip = response.status === 200 ? parseJson<StatusBody>(response.body)?.chain_tip : undefined;
    if (!tip || typeof tip.block_height !== 'number' || typeof tip.index_block_hash !== 'string') {
      this.telemetry.tipPollFailed(new Error(`chain tip poll of ${origin} answered ${response.status} without a chain_tip`));
      return undefined;
    }
    const parsed: ChainTip = { height: tip.block_height, indexBlockHash: tip.index_block_hash, burnHeight: tip.burn_block_height ?? 0 };
    if (response.headers.etag) this.perUpstream.set(origin, { etag: response.headers.etag, tip: parsed });
    this.health.reportTip(origin, parsed.height);
    return { origin, tip: parsed };
  }

  private async advanceTo(next: ChainTip, origin: string): Promise<void> {
    const previous = this.current;
    const hashAt = (height: number) => this.canonicalHashAt(height, origin);
    if (previous && !(await extendsTip(previous, next.height, hashAt))) {
      const forkHeight = await findForkHeight(Math.min(previous.height, next.height), this.settings.reorgMaxWalk, this.history, hashAt);
      const record = { at: this.clock(), forkHeight };
      this.reorgs.add(record);
      this.history.forgetAbove(forkHeight);
      this.finality.lowerTo(forkHeight);
      this.telemetry.reorgDetected(record.forkHeight, previous, next);
    }
    this.current = next;
    this.history.remember(next.height, next.indexBlockHash);
    this.telemetry.tipChanged(next);
  }

  private async canonicalHashAt(height: number, origin: string): Promise<string | undefined> {
    const response = await this.upstream.getFrom(origin, { path: `/extended/v2/blocks/${height}`, route: 'chain_tip' });
    if (response.status !== 200) return undefined;
    return parseJson<{ index_block_hash?: string }>(response.body)?.index_block_hash;
  }

  private async stacksHeightAtBurn(burnHeight: number, origin: string): Promise<number | undefined> {
    const response = await this.upstream.getFrom(origin, { path: `/extended/v1/block/by_burn_block_height/${burnHeight}`, route: 'chain_tip' });
    if (response.status !== 200) return undefined;
    const block = parseJson<{ height?: number; canonical?: boolean }>(response.body);
    return typeof block?.height === 'number' && block.canonical !== false ? block.height : undefined;
  }

  private publish(): void {
    const tip = this.current;
    this.snapshot = {
      tipHash: tip?.indexBlockHash,
      tipHeight: tip?.height,
      burnHeight: tip?.burnHeight,
      finalBurnHeight: tip ? this.finality.finalBurnHeight(tip.burnHeight) : undefined,
      finalStacksHeight: this.finality.finalStacksHeight,
      reorgs: this.reorgs.list(),
    };
  }
}
