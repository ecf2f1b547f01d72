/**
 * When the tip leader's poll of an upstream is news to the workers that do not poll on the interval
 * (worker mode: cluster/worker-tip-share.ts). News is an answer other than that upstream's previous
 * one (a new block, a reorg, a jump), or other than the believed tip (an upstream lagging, or a
 * jump held while its parent chain is walked: the followers walk it at the leader's pace). An
 * upstream that answers the believed tip again and again is no news: that is the steady state,
 * and the one where polling once per host instead of once per worker saves the requests.
 */
import type { ChainTip } from './view.js';

export class TipNewsRule {
  /** Each upstream's previous answer (index block hash, lower case). */
  private readonly previous = new Map<string, string>();

  /** `believed`: the tracker's tip once the answer was judged. Remembers the answer. */
  isNews(origin: string, answered: ChainTip, believed: ChainTip | undefined): boolean {
    const hash = answered.indexBlockHash.toLowerCase();
    const before = this.previous.get(origin);
    this.previous.set(origin, hash);
    return before !== hash || believed === undefined || believed.indexBlockHash.toLowerCase() !== hash;
  }
}
