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
 * stays as a cross-check. A feed is believed only while what it announces agrees with what the
 * polls find, block by block (by index block hash), each side given ANNOUNCE_GRACE_MS:
 *   - `unannounced`: a new tip a poll found that the feed did not announce (a feed gone quiet);
 *   - `unconfirmed`: a block the feed announced that no poll found, while no tip the feed
 *     announced and a poll found reached its height (a block the upstream does not have).
 * Several blocks between two polls agree when the feed announced the one the poll finds: a
 * confirmed tip settles every announcement at or below its height. Either disagreement makes the
 * feed not believed for live.push.distrustMs, and the upstream is polled at chainTip.pollIntervalMs.
 * After its link was lost, a feed is judged from the first poll answered once it is believed
 * again: blocks that came while it was not connected were nobody's to announce.
 * A link that cannot open (an upstream that serves no WebSocket and answers the upgrade 404, a
 * gateway's 401/403) is never believed: its upstream is polled at chainTip.pollIntervalMs while
 * the link tries again ever more seldom (retry-backoff.ts). mode() says which, and why.
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
/**
 * Block hashes remembered per upstream as announced, and blocks waiting for the other side's
 * word, each (blocks come seconds apart: minutes' worth; a feed naming more within the grace
 * loses the oldest, and is judged by the rest).
 */
const ANNOUNCED_KEPT = 64;
const BLOCK_TOPIC = { key: 'block', params: { event: 'block' } };
const MEMPOOL_TOPIC = { key: 'mempool', params: { event: 'mempool' } };

/**
 * How an upstream's tip is followed now: by its push feed (the poll a cross-check), or by the
 * poll alone, why, and when that may change at the earliest (clock time: the link's next
 * attempt, the end of a distrust).
 */
export type PushModeReading = { mode: 'push' } | { mode: 'poll'; reason: string; retryAt?: number };

const DISTRUST_WORDS: Record<DistrustReason, string> = {
  unannounced: 'feed not believed: a poll found a block it did not announce',
  unconfirmed: 'feed not believed: it announced a block no poll found',
};

type DistrustReason = 'unannounced' | 'unconfirmed';

/** A block waiting for the other side's word until `deadline` (clock time). */
interface Awaited {
  height: number;
  deadline: number;
}

interface OriginFeed {
  origin: string;
  link: UpstreamRpcLink;
  /** The upstream accepted the `block` subscription on the current connection. */
  subscribed: boolean;
  distrustedUntil: number;
  /** Why it was last distrusted. */
  distrustReason: DistrustReason | undefined;
  /** What the gauge and the interval last said. */
  believed: boolean;
  /** Index block hashes its `block` notifications named, with their heights, oldest first (at most ANNOUNCED_KEPT). */
  announced: Map<string, number>;
  /** The tip its previous poll answered (at first the believed one; none after a lost link): only a new one is compared with the announcements. */
  lastPolled: { hash: string; height: number } | undefined;
  /** The link was lost while the feed was subscribed: the next belief starts from a fresh poll. */
  lostLink: boolean;
  /** New tips polls found that the feed has not announced yet, and its announcements no poll has found yet. */
  unannounced: Map<string, Awaited>;
  unconfirmed: Map<string, Awaited>;
  /** Fires at the earliest deadline of the two. */
  deadlineTimer: NodeJS.Timeout | undefined;
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

  /** How that upstream's tip is followed now (undefined: not followed here, before start() or after close()). */
  mode(origin: string): PushModeReading | undefined {
    const feed = this.feeds.get(origin);
    if (!feed || this.closed) return undefined;
    if (this.believed(origin)) return { mode: 'push' };
    const failure = feed.link.failure;
    if (failure) return { mode: 'poll', reason: failure.reason, retryAt: failure.retryAt };
    if (feed.link.state !== 'open') return { mode: 'poll', reason: 'connecting' };
    if (this.deps.clock() < feed.distrustedUntil && feed.distrustReason) {
      return { mode: 'poll', reason: DISTRUST_WORDS[feed.distrustReason], retryAt: feed.distrustedUntil };
    }
    return { mode: 'poll', reason: 'block subscription not accepted' };
  }

  /** Lets go of every topic (the links themselves belong to UpstreamLinks) and stops the timers. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    for (const feed of this.feeds.values()) {
      for (const stop of feed.stop) stop();
      clearTimeout(feed.deadlineTimer);
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
      distrustReason: undefined,
      believed: false,
      announced: new Map(),
      lastPolled: this.deps.tracker.tip && { hash: this.deps.tracker.tip.indexBlockHash.toLowerCase(), height: this.deps.tracker.tip.height },
      lostLink: false,
      unannounced: new Map(),
      unconfirmed: new Map(),
      deadlineTimer: undefined,
      distrustTimer: undefined,
      stop: [],
    };
    this.feeds.set(origin, feed);
    this.deps.telemetry.pushFeedBelieved(origin, false);
    this.deps.telemetry.upstreamPushMode(origin, 'poll');
    feed.stop.push(
      link.onNotification((notification) => this.notified(feed, notification)),
      link.onState((state) => {
        if (state === 'open') void this.checkSubscribed(feed);
        else {
          if (feed.subscribed) feed.lostLink = true;
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
    keep(feed.announced, hash, height);
    const polled = feed.unannounced.get(hash) ?? (feed.lastPolled?.hash === hash ? feed.lastPolled : undefined);
    if (polled) {
      // A poll found it first (the upstream's notification comes a moment after its write): agreed, nothing to ask.
      feed.unannounced.delete(hash);
      this.confirmed(feed, polled.height);
      return;
    }
    if (this.believed(feed.origin)) this.await(feed, feed.unconfirmed, hash, height);
    this.deps.tracker.pollNow(feed.origin);
  }

  private mempoolChanged(feed: OriginFeed, params: unknown): void {
    this.deps.telemetry.pushNotified(feed.origin, 'mempool');
    const principals = new Set<string>();
    collectPrincipals(params, principals);
    // A pending transaction names at least its sender; one naming none tells nothing to mark.
    if (principals.size > 0) this.deps.activity?.recordBroadcast(principals, this.deps.clock());
  }

  /**
   * A poll's answer. A tip the feed announced confirms it, and settles its announcements at or
   * below that height (blocks between two polls). A new tip it has not announced gets
   * ANNOUNCE_GRACE_MS to be.
   */
  private polled(origin: string, tip: ChainTip): void {
    const feed = this.feeds.get(origin);
    if (!feed || this.closed) return;
    const hash = tip.indexBlockHash.toLowerCase();
    const previous = feed.lastPolled;
    feed.lastPolled = { hash, height: tip.height };
    if (!this.believed(origin)) return;
    if (feed.announced.has(hash)) {
      this.confirmed(feed, tip.height);
      return;
    }
    // Lower than before is no new block (an upstream behind the others, or a reorg the tracker judges).
    if (previous === undefined || previous.hash === hash || tip.height < previous.height) return;
    this.await(feed, feed.unannounced, hash, tip.height);
  }

  /** A tip both sides named: the feed's announcements up to its height need no poll of their own. */
  private confirmed(feed: OriginFeed, height: number): void {
    for (const [hash, awaited] of feed.unconfirmed) if (awaited.height <= height) feed.unconfirmed.delete(hash);
  }

  /** One more block waiting for the other side's word until ANNOUNCE_GRACE_MS from now. */
  private await(feed: OriginFeed, waiting: Map<string, Awaited>, hash: string, height: number): void {
    keep(waiting, hash, { height, deadline: this.deps.clock() + ANNOUNCE_GRACE_MS });
    this.watchDeadlines(feed);
  }

  /** Wakes at the earliest deadline of the blocks waiting (one timer per upstream). */
  private watchDeadlines(feed: OriginFeed): void {
    if (feed.deadlineTimer !== undefined || this.closed) return;
    let earliest = Number.POSITIVE_INFINITY;
    for (const waiting of [feed.unannounced, feed.unconfirmed]) for (const { deadline } of waiting.values()) earliest = Math.min(earliest, deadline);
    if (earliest === Number.POSITIVE_INFINITY) return;
    feed.deadlineTimer = setTimeout(
      () => {
        feed.deadlineTimer = undefined;
        this.checkDeadlines(feed);
      },
      Math.max(0, earliest - this.deps.clock()),
    );
    feed.deadlineTimer.unref();
  }

  /** A block past its deadline without the other side's word: the feed disagrees with the polls. */
  private checkDeadlines(feed: OriginFeed): void {
    if (this.closed) return;
    const now = this.deps.clock();
    const overdue = (waiting: Map<string, Awaited>): boolean => [...waiting.values()].some(({ deadline }) => deadline <= now);
    if (overdue(feed.unannounced)) this.distrust(feed, 'unannounced');
    else if (overdue(feed.unconfirmed)) this.distrust(feed, 'unconfirmed');
    else this.watchDeadlines(feed);
  }

  private distrust(feed: OriginFeed, reason: DistrustReason): void {
    const { distrustMs } = this.deps.settings;
    feed.distrustedUntil = this.deps.clock() + distrustMs;
    feed.distrustReason = reason;
    this.deps.telemetry.pushDistrusted(feed.origin, reason);
    clearTimeout(feed.distrustTimer);
    feed.distrustTimer = setTimeout(() => this.refresh(feed), distrustMs);
    feed.distrustTimer.unref();
    this.refresh(feed);
  }

  /**
   * The gauge follows belief. A feed that stops being believed has the upstream polled now: a
   * block may have come while it was not heard, and the next poll then comes at the short interval.
   * What waited for its word is forgotten (it is judged afresh once believed again).
   */
  private refresh(feed: OriginFeed): void {
    if (this.closed) return;
    const believed = this.believed(feed.origin);
    if (believed === feed.believed) return;
    feed.believed = believed;
    this.deps.telemetry.pushFeedBelieved(feed.origin, believed);
    this.deps.telemetry.upstreamPushMode(feed.origin, believed ? 'push' : 'poll');
    if (believed) {
      if (feed.lostLink) feed.lastPolled = undefined;
      feed.lostLink = false;
      return;
    }
    feed.unannounced.clear();
    feed.unconfirmed.clear();
    clearTimeout(feed.deadlineTimer);
    feed.deadlineTimer = undefined;
    this.deps.tracker.pollNow(feed.origin);
  }
}

/** Adds an entry, dropping the oldest beyond ANNOUNCED_KEPT (a Map keeps insertion order). */
function keep<V>(entries: Map<string, V>, key: string, value: V): void {
  entries.set(key, value);
  if (entries.size > ANNOUNCED_KEPT) entries.delete(entries.keys().next().value as string);
}
