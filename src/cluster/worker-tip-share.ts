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
 *
 * Blocks are learned once per host too (chain/block-learner.ts): the leader's learner sends what
 * it found in each block (`scp:block-learned`, by index block hash); a follower's learner waits up
 * to LEADER_WORD_WAIT_MS for that word about the block its own tracker believes, and learns the
 * block itself when none comes (a leader that died or is slow).
 */
import { randomUUID } from 'node:crypto';
import type { BlockTouches, MempoolPoll, TipRef } from '../chain/activity.js';
import type { SharedLearning } from '../chain/block-learner.js';
import {
  isBlockLearnedNews,
  isMempoolNews,
  isMempoolPollNews,
  isTipLead,
  isTipNews,
  MAX_LEARNED_PRINCIPALS,
  MAX_LEARNED_TX_IDS,
  MAX_NEWS_PRINCIPALS,
  type BlockLearnedNews,
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

/** The core's view of the share: handlers in, the leader's news out; and the host's one block learner. */
export interface TipShare extends SharedLearning {
  attach(handlers: TipShareHandlers): void;
  /** The core is stopping: nothing more is acted on. */
  detach(): void;
  tipNews(origin: string): void;
  mempoolNews(principals: Iterable<string>): void;
  /** The leader's own mempool watcher polled: sent to the followers. */
  mempoolPolled(poll: MempoolPoll): void;
}

/** The way to the primary: false when the message could not be sent. */
export type SendNews = (message: TipNews | MempoolNews | MempoolPollNews | BlockLearnedNews) => boolean;

/** Relayed polls kept while the core starts; past it they collapse into one change in ways not known. */
const MAX_EARLY_POLLS = 64;
/** How long a follower's learner waits for the leader's word on a block before it learns the block itself. */
export const LEADER_WORD_WAIT_MS = 10_000;
/** The leader's words kept for blocks a follower's tracker has not believed yet (oldest dropped first). */
const MAX_EARLY_WORDS = 64;
const TX_ID = /^0x[0-9a-f]{64}$/;

type LeaderWord = { touches: BlockTouches; txIds: string[] };

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
  /** The leader's words on blocks no learner here has asked about yet, by index block hash. */
  private readonly words = new Map<string, LeaderWord>();
  /** Learners waiting for the leader's word, by index block hash. */
  private readonly waiting = new Map<string, Array<(word: LeaderWord | undefined) => void>>();

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
    } else if (isBlockLearnedNews(message)) {
      this.heardWord(message);
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
    return message.kind === 'changed' ? { kind: 'changed', principals: message.principals, ...times } : { kind: 'unchanged', ...times };
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
    for (const waiters of this.waiting.values()) for (const resolve of waiters) resolve(undefined);
    this.waiting.clear();
  }

  learnsItself(): boolean {
    return this.leading && !this.detached;
  }

  learned(tip: TipRef, touches: BlockTouches, txIds: string[] | undefined): void {
    if (!this.learnsItself()) return;
    const block = { height: tip.height, indexBlockHash: tip.indexBlockHash, burnHeight: tip.burnHeight };
    const ids = (txIds ?? []).filter((id) => TX_ID.test(id)).slice(0, MAX_LEARNED_TX_IDS);
    const principals = touches.kind === 'known' ? [...touches.principals] : [];
    const coinbaseRecipients = touches.kind === 'known' ? [...touches.coinbaseRecipients] : [];
    const tooMany = principals.length > MAX_LEARNED_PRINCIPALS || coinbaseRecipients.length > MAX_LEARNED_PRINCIPALS;
    if (touches.kind === 'unknown' || tooMany) {
      const why = touches.kind === 'unknown' ? touches.why.slice(0, 1_000) : 'the leader learned more principals than a notice carries';
      this.send({ type: 'scp:block-learned', block, kind: 'unknown', principals: [], coinbaseRecipients: [], why, txIds: ids });
      return;
    }
    this.send({ type: 'scp:block-learned', block, kind: 'known', principals, coinbaseRecipients, why: '', txIds: ids });
  }

  leaderLearned(tip: TipRef): Promise<LeaderWord | undefined> {
    const hash = tip.indexBlockHash;
    const word = this.words.get(hash);
    if (word) {
      this.words.delete(hash);
      return Promise.resolve(word);
    }
    if (this.detached) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const done = (got: LeaderWord | undefined): void => {
        clearTimeout(timer);
        resolve(got);
      };
      const timer = setTimeout(() => {
        const left = (this.waiting.get(hash) ?? []).filter((waiter) => waiter !== done);
        if (left.length > 0) this.waiting.set(hash, left);
        else this.waiting.delete(hash);
        resolve(undefined);
      }, LEADER_WORD_WAIT_MS);
      timer.unref();
      this.waiting.set(hash, [...(this.waiting.get(hash) ?? []), done]);
    });
  }

  /** The leader's word on a block: to the learners waiting for it, else kept for the one that will ask. */
  private heardWord(message: BlockLearnedNews): void {
    const touches: BlockTouches =
      message.kind === 'known'
        ? { kind: 'known', principals: message.principals, coinbaseRecipients: message.coinbaseRecipients }
        : { kind: 'unknown', why: message.why };
    const word = { touches, txIds: message.txIds };
    const hash = message.block.indexBlockHash;
    const waiters = this.waiting.get(hash);
    if (waiters) {
      this.waiting.delete(hash);
      for (const resolve of waiters) resolve(word);
      return;
    }
    this.words.delete(hash);
    this.words.set(hash, word);
    if (this.words.size > MAX_EARLY_WORDS) this.words.delete(this.words.keys().next().value as string);
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
    // A poll naming more than one notice may carry: the followers take it as a change in ways not known.
    const kind = principals.length > MAX_NEWS_PRINCIPALS ? 'unknown' : poll.kind;
    this.send({
      type: 'scp:mempool-poll',
      leaderId: this.leaderId,
      seq: this.polls,
      kind,
      principals: kind === 'changed' ? principals : [],
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
