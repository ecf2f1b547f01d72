/**
 * Worker mode's one block learner per host (chain/block-learner.ts `shared`): the tip leader's
 * learner sends what it found in each block (`scp:block-learned`, by index block hash, with the
 * block's transaction ids for each follower's warm-up), and a follower's learner waits up to
 * LEADER_WORD_WAIT_MS for that word about the block its own tracker believes, learning the block
 * itself when none comes (a leader that died or is slow). A word that comes before a follower's
 * tracker believes the block is kept for it (a few, oldest dropped first). The word is about a
 * block named by its hash: a follower applies it only to that block (activity.ts blockLearned).
 */
import type { BlockTouches, TipRef } from '../chain/activity.js';
import type { SharedLearning } from '../chain/block-learner.js';
import { HEX_HASH, isBlockLearnedNews, MAX_LEARNED_PRINCIPALS, MAX_LEARNED_TX_IDS, type BlockLearnedNews } from './messages.js';

/** How long a follower's learner waits for the leader's word on a block before it learns the block itself. */
export const LEADER_WORD_WAIT_MS = 10_000;
/** The leader's words kept for blocks a follower's tracker has not believed yet (oldest dropped first). */
const MAX_EARLY_WORDS = 64;

type LeaderWord = { touches: BlockTouches; txIds: string[] };

export class WorkerBlockLearning implements SharedLearning {
  private detached = false;
  /** The leader's words on blocks no learner here has asked about yet, by index block hash. */
  private readonly words = new Map<string, LeaderWord>();
  /** Learners waiting for the leader's word, by index block hash. */
  private readonly waiting = new Map<string, Array<(word: LeaderWord | undefined) => void>>();

  /** `leading`: whether this worker is the tip leader now (worker-tip-share.ts). */
  constructor(
    private readonly send: (message: BlockLearnedNews) => boolean,
    private readonly leading: () => boolean,
  ) {}

  /** Every message from the primary: the leader's words are taken, anything else ignored. */
  received(message: unknown): void {
    if (!this.detached && isBlockLearnedNews(message)) this.heardWord(message);
  }

  /** The core is stopping: learners waiting are told there is no word (nothing more is sent). */
  detach(): void {
    this.detached = true;
    for (const waiters of this.waiting.values()) for (const resolve of waiters) resolve(undefined);
    this.waiting.clear();
  }

  learnsItself(): boolean {
    return this.leading() && !this.detached;
  }

  learned(tip: TipRef, touches: BlockTouches, txIds: string[] | undefined): void {
    if (!this.learnsItself()) return;
    const block = { height: tip.height, indexBlockHash: tip.indexBlockHash, burnHeight: tip.burnHeight };
    const ids = (txIds ?? []).filter((id) => HEX_HASH.test(id)).slice(0, MAX_LEARNED_TX_IDS);
    const principals = touches.kind === 'known' ? [...touches.principals] : [];
    const coinbaseRecipients = touches.kind === 'known' ? [...touches.coinbaseRecipients] : [];
    const tooMany = principals.length > MAX_LEARNED_PRINCIPALS || coinbaseRecipients.length > MAX_LEARNED_PRINCIPALS;
    if (touches.kind === 'unknown' || tooMany) {
      const why = touches.kind === 'unknown' ? touches.why.slice(0, 1_000) : 'the leader learned more principals than a notice carries';
      this.send({ type: 'scp:block-learned', block, kind: 'unknown', principals: [], coinbaseRecipients: [], why, txIds: ids });
      return;
    }
    // The narrower roles are subsets of `principals`, so within its bound.
    const roles = {
      ...(touches.tokenPrincipals ? { tokenPrincipals: [...touches.tokenPrincipals] } : {}),
      ...(touches.senderPrincipals ? { senderPrincipals: [...touches.senderPrincipals] } : {}),
      ...(touches.listedPrincipals ? { listedPrincipals: [...touches.listedPrincipals] } : {}),
    };
    this.send({ type: 'scp:block-learned', block, kind: 'known', principals, coinbaseRecipients, ...roles, why: '', txIds: ids });
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
        ? {
            kind: 'known',
            principals: message.principals,
            coinbaseRecipients: message.coinbaseRecipients,
            ...(message.tokenPrincipals ? { tokenPrincipals: message.tokenPrincipals } : {}),
            ...(message.senderPrincipals ? { senderPrincipals: message.senderPrincipals } : {}),
            ...(message.listedPrincipals ? { listedPrincipals: message.listedPrincipals } : {}),
          }
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
}
