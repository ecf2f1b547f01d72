/**
 * A worker's side of one tip poll and push feed per host (worker mode). Every worker starts as a
 * follower: its tracker polls the upstreams' tip only at the follower's fallback interval, and at
 * once when the leader has news (`scp:tip-news`, relayed by the primary), judging the answer itself
 * as any poll (the notice names which upstream to ask, nothing more). The one the primary designates
 * (`scp:tip-lead`, tip-leader.ts) polls on the interval, follows the push feed and the Redis notifier,
 * and sends its news: upstreams whose poll answered something new (chain/tip-news.ts), and the
 * principals its push feed's pending transactions named (applied by each follower to its own
 * activity registry, as its own feed would have).
 */
import { isMempoolNews, isTipLead, isTipNews, MAX_NEWS_PRINCIPALS, type MempoolNews, type TipNews } from './messages.js';

/** What the proxy core does for the share (composition-root.ts). */
export interface TipShareHandlers {
  /** This process is the tip leader from now on (called once at most). */
  lead(): void;
  /** The leader has news of that upstream: poll it now. */
  pollNow(origin: string): void;
  /** The leader's push feed saw a pending transaction naming these principals. */
  mempool(principals: Set<string>): void;
}

/** The core's view of the share: handlers in, the leader's news out. */
export interface TipShare {
  attach(handlers: TipShareHandlers): void;
  /** The core is stopping: nothing more is acted on. */
  detach(): void;
  tipNews(origin: string): void;
  mempoolNews(principals: Iterable<string>): void;
}

/** The way to the primary: false when the message could not be sent. */
export type SendNews = (message: TipNews | MempoolNews) => boolean;

export class WorkerTipShare implements TipShare {
  private handlers: TipShareHandlers | undefined;
  private detached = false;
  private leadAsked = false;
  private leading = false;
  /** News that came while the core was still starting (its first poll may have been asked before it). */
  private readonly earlyOrigins = new Set<string>();
  private readonly earlyPrincipals = new Set<string>();

  constructor(private readonly send: SendNews) {}

  /** Every message from the primary: the share's are taken, anything else ignored. */
  received(message: unknown): void {
    if (this.detached) return;
    if (isTipLead(message)) {
      this.leadAsked = true;
      this.takeLead();
    } else if (isTipNews(message)) {
      if (this.handlers) this.handlers.pollNow(message.origin);
      else this.earlyOrigins.add(message.origin);
    } else if (isMempoolNews(message)) {
      if (this.handlers) this.handlers.mempool(new Set(message.principals));
      else for (const principal of message.principals) if (this.earlyPrincipals.size < MAX_NEWS_PRINCIPALS) this.earlyPrincipals.add(principal);
    }
  }

  attach(handlers: TipShareHandlers): void {
    if (this.detached) return;
    this.handlers = handlers;
    for (const origin of this.earlyOrigins) handlers.pollNow(origin);
    this.earlyOrigins.clear();
    if (this.earlyPrincipals.size > 0) handlers.mempool(new Set(this.earlyPrincipals));
    this.earlyPrincipals.clear();
    this.takeLead();
  }

  detach(): void {
    this.detached = true;
    this.handlers = undefined;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  tipNews(origin: string): void {
    if (this.leading && !this.detached) this.send({ type: 'scp:tip-news', origin });
  }

  mempoolNews(principals: Iterable<string>): void {
    if (!this.leading || this.detached) return;
    const named = [...principals];
    // In slices a notice may carry (a transaction naming more is rare, and must reach the followers whole).
    for (let i = 0; i < named.length; i += MAX_NEWS_PRINCIPALS) this.send({ type: 'scp:mempool-news', principals: named.slice(i, i + MAX_NEWS_PRINCIPALS) });
  }

  private takeLead(): void {
    if (this.leading || !this.leadAsked || !this.handlers) return;
    this.leading = true;
    this.handlers.lead();
  }
}
