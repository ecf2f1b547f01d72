/**
 * The push feed (issue 16): each upstream's own `block` and `mempool` notifications, through the
 * shared JSON-RPC link to it (upstream-links.ts), acted on at once.
 *   - `block`: that upstream's tip is polled now (tracker.pollNow). The notification is only a
 *     reason to ask: the poll's answer is judged by the tracker's evidence rules as any other, so
 *     a feed that lies can make the proxy ask, never believe.
 *   - `mempool`: the principals the pending transaction names (touched-principals.ts) are marked
 *     changed in the activity registry, as a broadcast the proxy forwarded would be, so their
 *     nonce and balance answers are not served from before it.
 * While an upstream's feed is believed (its link open, `block` subscribed, not distrusted), its
 * tip is polled every live.push.crossCheckIntervalMs instead of chainTip.pollIntervalMs: the poll
 * stays as a cross-check. When a poll finds a block the feed did not announce within
 * ANNOUNCE_GRACE_MS (a feed gone quiet, or one that disagrees with the poll), the feed is not
 * believed for live.push.distrustMs, and the upstream is polled at chainTip.pollIntervalMs.
 */
import type { Clock } from '../clock.js';
import type { PrincipalActivity } from '../chain/activity.js';
import type { ChainTip, ChainTipTracker } from '../chain/tracker.js';
import { collectPrincipals } from '../chain/touched-principals.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { UpstreamLinks } from './upstream-links.js';
import type { RpcNotification, UpstreamRpcLink } from './upstream-rpc-link.js';

export interface PushFeedSettings {
  crossCheckIntervalMs: number;
  distrustMs: number;
  /** chainTip.pollIntervalMs: the interval of an upstream whose feed is not believed. */
  pollIntervalMs: number;
}

export interface PushFeedDeps {
  origins: readonly string[];
  links: UpstreamLinks;
  tracker: Pick<ChainTipTracker, 'pollNow' | 'onPolled' | 'setIntervalFor' | 'tip'>;
  /** The activity registry (none with activity.enabled off: mempool notifications are then only counted). */
  activity?: Pick<PrincipalActivity, 'recordBroadcast'>;
  settings: PushFeedSettings;
  clock: Clock;
  telemetry: Telemetry;
}

/**
 * How long a block a poll found may wait for its notification. The upstream pushes after its
 * write and after reading the block back, one notification at a time: a poll may see a block a
 * moment before its notification arrives.
 */
export const ANNOUNCE_GRACE_MS = 2_000;
/** Block hashes remembered per upstream as announced (blocks come seconds apart: minutes' worth). */
const ANNOUNCED_KEPT = 64;
const BLOCK_TOPIC = { key: 'block', params: { event: 'block' } };
const MEMPOOL_TOPIC = { key: 'mempool', params: { event: 'mempool' } };

interface OriginFeed {
  origin: string;
  link: UpstreamRpcLink;
  /** The upstream accepted the `block` subscription on the current connection. */
  subscribed: boolean;
  distrustedUntil: number;
  /** What the gauge and the interval last said. */
  believed: boolean;
  /** Index block hashes its `block` notifications named, oldest first (at most ANNOUNCED_KEPT). */
  announced: Set<string>;
  announcedHeight: number;
  /** The tip its previous poll answered (at first the believed one): only a new one is compared with the announcements. */
  lastPolled: { hash: string; height: number } | undefined;
  /** A polled block waiting for its announcement. */
  pending: { hash: string; timer: NodeJS.Timeout } | undefined;
  distrustTimer: NodeJS.Timeout | undefined;
  stop: (() => void)[];
}

export class PushFeed {
  private readonly feeds = new Map<string, OriginFeed>();
  private closed = false;

  constructor(private readonly deps: PushFeedDeps) {}

  /** Follows every upstream's feed. Call after the first tip poll (a feed is compared with polls). */
  start(): void {
    const { tracker, settings } = this.deps;
    for (const origin of this.deps.origins) this.follow(origin);
    tracker.setIntervalFor((origin) => (this.believed(origin) ? settings.crossCheckIntervalMs : settings.pollIntervalMs));
    tracker.onPolled((origin, tip) => this.polled(origin, tip));
  }

  /** Whether that upstream's feed is believed now. */
  believed(origin: string): boolean {
    const feed = this.feeds.get(origin);
    return feed !== undefined && !this.closed && feed.link.state === 'open' && feed.subscribed && this.deps.clock() >= feed.distrustedUntil;
  }

  /** Lets go of every topic (the links themselves belong to UpstreamLinks) and stops the timers. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    for (const feed of this.feeds.values()) {
      for (const stop of feed.stop) stop();
      clearTimeout(feed.pending?.timer);
      clearTimeout(feed.distrustTimer);
      feed.link.unsubscribe(BLOCK_TOPIC.key);
      feed.link.unsubscribe(MEMPOOL_TOPIC.key);
    }
    return Promise.resolve();
  }

  private follow(origin: string): void {
    const link = this.deps.links.linkFor(origin);
    const feed: OriginFeed = {
      origin,
      link,
      subscribed: false,
      distrustedUntil: Number.NEGATIVE_INFINITY,
      believed: false,
      announced: new Set(),
      announcedHeight: Number.NEGATIVE_INFINITY,
      lastPolled: this.deps.tracker.tip && { hash: this.deps.tracker.tip.indexBlockHash.toLowerCase(), height: this.deps.tracker.tip.height },
      pending: undefined,
      distrustTimer: undefined,
      stop: [],
    };
    this.feeds.set(origin, feed);
    this.deps.telemetry.pushFeedBelieved(origin, false);
    feed.stop.push(
      link.onNotification((notification) => this.notified(feed, notification)),
      link.onState((state) => {
        if (state === 'open') void this.checkSubscribed(feed);
        else {
          feed.subscribed = false;
          this.refresh(feed);
        }
      }),
    );
    void link.subscribe(BLOCK_TOPIC.key, BLOCK_TOPIC.params).then((reply) => {
      feed.subscribed = reply.ok;
      this.refresh(feed);
    });
    void link.subscribe(MEMPOOL_TOPIC.key, MEMPOOL_TOPIC.params);
  }

  /** After a reconnect: whether the upstream took `block` again (the link's latest reply, asked as one more holder). */
  private async checkSubscribed(feed: OriginFeed): Promise<void> {
    if (this.closed) return;
    const reply = await feed.link.subscribe(BLOCK_TOPIC.key, BLOCK_TOPIC.params);
    if (reply.ok || reply.error !== 'over-limit') feed.link.unsubscribe(BLOCK_TOPIC.key);
    feed.subscribed = reply.ok && feed.link.state === 'open';
    this.refresh(feed);
  }

  private notified(feed: OriginFeed, notification: RpcNotification): void {
    if (this.closed) return;
    if (notification.method === 'block') this.blockAnnounced(feed, notification.params);
    else if (notification.method === 'mempool') this.mempoolChanged(feed, notification.params);
  }

  private blockAnnounced(feed: OriginFeed, params: unknown): void {
    const block = params as { index_block_hash?: unknown; height?: unknown } | null;
    const hash = typeof block?.index_block_hash === 'string' ? block.index_block_hash.toLowerCase() : undefined;
    const height = typeof block?.height === 'number' ? block.height : undefined;
    if (hash === undefined || height === undefined) return;
    this.deps.telemetry.pushNotified(feed.origin, 'block');
    // A repeat says nothing new: no second poll for it.
    if (feed.announced.has(hash)) return;
    feed.announced.add(hash);
    if (feed.announced.size > ANNOUNCED_KEPT) feed.announced.delete(feed.announced.values().next().value as string);
    feed.announcedHeight = Math.max(feed.announcedHeight, height);
    if (feed.pending?.hash === hash) {
      clearTimeout(feed.pending.timer);
      feed.pending = undefined;
    }
    this.deps.tracker.pollNow(feed.origin);
  }

  private mempoolChanged(feed: OriginFeed, params: unknown): void {
    this.deps.telemetry.pushNotified(feed.origin, 'mempool');
    const principals = new Set<string>();
    collectPrincipals(params, principals);
    // A pending transaction names at least its sender; one naming none tells nothing to mark.
    if (principals.size > 0) this.deps.activity?.recordBroadcast(principals, this.deps.clock());
  }

  /** A poll's answer: a new block the believed feed has not announced gets ANNOUNCE_GRACE_MS to be. */
  private polled(origin: string, tip: ChainTip): void {
    const feed = this.feeds.get(origin);
    if (!feed || this.closed) return;
    const hash = tip.indexBlockHash.toLowerCase();
    const previous = feed.lastPolled;
    feed.lastPolled = { hash, height: tip.height };
    // Lower than before is no new block (an upstream behind the others, or a reorg the tracker judges).
    if (previous === undefined || previous.hash === hash || tip.height < previous.height || !this.believed(origin)) return;
    if (feed.announced.has(hash) || feed.announcedHeight > tip.height) return;
    clearTimeout(feed.pending?.timer);
    const timer = setTimeout(() => {
      feed.pending = undefined;
      if (!feed.announced.has(hash) && !this.closed) this.distrust(feed, 'unannounced');
    }, ANNOUNCE_GRACE_MS);
    timer.unref();
    feed.pending = { hash, timer };
  }

  private distrust(feed: OriginFeed, reason: string): void {
    const { distrustMs } = this.deps.settings;
    feed.distrustedUntil = this.deps.clock() + distrustMs;
    this.deps.telemetry.pushDistrusted(feed.origin, reason);
    clearTimeout(feed.distrustTimer);
    feed.distrustTimer = setTimeout(() => this.refresh(feed), distrustMs);
    feed.distrustTimer.unref();
    this.refresh(feed);
  }

  /**
   * The gauge follows belief. A feed that stops being believed has the upstream polled now: a
   * block may have come while it was not heard, and the next poll then comes at the short interval.
   */
  private refresh(feed: OriginFeed): void {
    if (this.closed) return;
    const believed = this.believed(feed.origin);
    if (believed === feed.believed) return;
    feed.believed = believed;
    this.deps.telemetry.pushFeedBelieved(feed.origin, believed);
    if (!believed) this.deps.tracker.pollNow(feed.origin);
  }
}
