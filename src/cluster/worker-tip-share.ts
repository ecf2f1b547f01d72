/**
 * A worker's side of one tip poll and push feed per host (worker mode). Every worker starts as a
 * follower: its tracker polls the upstreams' tip only at the follower's fallback interval, and at
 * once when the leader has news (`scp:tip-news`, relayed by the primary), judging the answer itself
 * as any poll (the notice names which upstream to ask, nothing more). The one the primary designates
 * (`scp:tip-lead`, tip-leader.ts) polls on the interval, follows the push feed and the Redis notifier,
 * and sends its news: upstreams whose poll answered something new (chain/tip-news.ts), the
 * principals its push feed's pending transactions named (applied by each follower to its own
 * activity registry, as its own feed would have), and what each poll of its mempool watcher found
 * (only the leader runs one: one mempool poll per host per interval instead of one per worker).
 *
 * A follower's registry takes a relayed mempool poll as its own watcher's, but a poll says what
 * changed since the poll before it: one that follows a poll this follower did not hear (it started
 * after the watcher, a notice was lost, a new leader's watcher took over) is taken as a change in
 * ways not known, as a watcher's first poll is, so nothing validated before it is vouched for.
 * Blocks are learned once per host too: worker-block-learning.ts.
 */
import { randomUUID } from 'node:crypto';
import type { MempoolPoll } from '../chain/activity.js';
import {
  isMempoolNews,
  isMempoolPollNews,
  isTipLead,
  isTipNews,
  MAX_NEWS_PRINCIPALS,
  type MempoolNews,
  type MempoolPollNews,
  type TipNews,
} from './messages.js';

/** What the proxy core does for the share (composition-root.ts). */
export interface TipShareHandlers {
  /** This process is the tip leader from now on (called once at most). */
  lead(): void;
  /** The leader has news of that upstream: poll it now. */
  pollNow(origin: string): void;
  /** The leader's push feed saw a pending transaction naming these principals. */
  mempool(principals: Set<string>): void;
  /** The leader's mempool watcher polled (as this follower must take it: see above). */
  mempoolPolled(poll: MempoolPoll): void;
}

/** The core's view of the share: handlers in, the leader's news out. */
export interface TipShare {
  attach(handlers: TipShareHandlers): void;
  /** The core is stopping: nothing more is acted on. */
  detach(): void;
  tipNews(origin: string): void;
  mempoolNews(principals: Iterable<string>): void;
  /** The leader's own mempool watcher polled: sent to the followers. */
  mempoolPolled(poll: MempoolPoll): void;
}

/** The way to the primary: false when the message could not be sent. */
export type SendNews = (message: TipNews | MempoolNews | MempoolPollNews) => boolean;

/** Relayed polls kept while the core starts; past it they collapse into one change in ways not known. */
const MAX_EARLY_POLLS = 64;

export class WorkerTipShare implements TipShare {
  private handlers: TipShareHandlers | undefined;
  private detached = false;
  private leadAsked = false;
  private leading = false;
  /** News that came while the core was still starting (its first poll may have been asked before it). */
  private readonly earlyOrigins = new Set<string>();
  private readonly earlyPrincipals = new Set<string>();
  private earlyPolls: MempoolPoll[] = [];
  /** The leader's watcher this follower heard last, and its last poll's number. */
  private heard: { leaderId: string; seq: number } | undefined;
  /** As the leader: this watcher's id and its polls so far. */
  private readonly leaderId = randomUUID();
  private polls = 0;

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
    } else if (isMempoolPollNews(message)) {
      const poll = this.asHeard(message);
      if (this.handlers) this.handlers.mempoolPolled(poll);
      else this.keepEarly(poll);
    }
  }

  /** A relayed poll as this follower takes it: `unknown` unless it follows the last one it heard from the same watcher. */
  private asHeard(message: MempoolPollNews): MempoolPoll {
    const follows = this.heard !== undefined && this.heard.leaderId === message.leaderId && message.seq === this.heard.seq + 1;
    this.heard = { leaderId: message.leaderId, seq: message.seq };
    const times = { startedAt: message.startedAt, endedAt: message.endedAt };
    if (!follows || message.kind === 'unknown') return { kind: 'unknown', ...times };
    if (message.kind !== 'changed') return { kind: 'unchanged', ...times };
    const roles = message.senders && message.listed ? { senders: message.senders, listed: message.listed } : {};
    return { kind: 'changed', principals: message.principals, ...roles, ...times };
  }

  private keepEarly(poll: MempoolPoll): void {
    if (this.earlyPolls.length < MAX_EARLY_POLLS) this.earlyPolls.push(poll);
    else this.earlyPolls = [{ kind: 'unknown', startedAt: poll.startedAt, endedAt: poll.endedAt }];
  }

  attach(handlers: TipShareHandlers): void {
    if (this.detached) return;
    this.handlers = handlers;
    for (const origin of this.earlyOrigins) handlers.pollNow(origin);
    this.earlyOrigins.clear();
    if (this.earlyPrincipals.size > 0) handlers.mempool(new Set(this.earlyPrincipals));
    this.earlyPrincipals.clear();
    for (const poll of this.earlyPolls) handlers.mempoolPolled(poll);
    this.earlyPolls = [];
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

  mempoolPolled(poll: MempoolPoll): void {
    if (!this.leading || this.detached) return;
    this.polls += 1;
    const principals = poll.kind === 'changed' ? [...poll.principals] : [];
    const roles = poll.kind === 'changed' && poll.senders && poll.listed ? { senders: [...poll.senders], listed: [...poll.listed] } : undefined;
    // A poll naming more than one notice may carry: the followers take it as a change in ways not known.
    const tooMany =
      principals.length > MAX_NEWS_PRINCIPALS ||
      (roles !== undefined && (roles.senders.length > MAX_NEWS_PRINCIPALS || roles.listed.length > MAX_NEWS_PRINCIPALS));
    const kind = tooMany ? 'unknown' : poll.kind;
    this.send({
      type: 'scp:mempool-poll',
      leaderId: this.leaderId,
      seq: this.polls,
      kind,
      principals: kind === 'changed' ? principals : [],
      ...(kind === 'changed' && roles ? roles : {}),
      startedAt: poll.startedAt,
      endedAt: poll.endedAt,
    });
  }

  private takeLead(): void {
    if (this.leading || !this.leadAsked || !this.handlers) return;
    this.leading = true;
    this.handlers.lead();
  }
}
