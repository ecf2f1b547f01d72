/**
 * THE decision: what the cache may do with an entry now (serve it, serve it while it refreshes,
 * revalidate, refetch), under the chain believed now and the clock. Every "may this entry be
 * served now?" of the read path asks it here (the lookup, a flight that landed meanwhile, a
 * peer's entry in shared single-flight, a scope confirmation, the tx/events finality probe,
 * tx/multiple's members), so the answer is the same everywhere. The rule itself is pure
 * (policy.ts `decide`); this binds it to the clock, the chain and the TTLs. So does the other
 * question, what may stand in for an upstream that failed (stale-if-error).
 */
import type { ChainView } from '../chain/view.js';
import type { Clock } from '../clock.js';
import type { CacheEntry } from './entry.js';
import { asServedNow, changedByActivity, decide, isUsableWhenFailing, type Decision, type StaleSettings, type TtlSettings } from './policy.js';

export interface DeciderDeps {
  clock: Clock;
  chain: () => ChainView;
  ttl: TtlSettings;
  stale: StaleSettings;
}

export class Decider {
  constructor(private readonly deps: DeciderDeps) {}

  decide(entry: CacheEntry | undefined): Decision {
    return decide(entry, this.deps.clock(), this.deps.chain(), this.deps.ttl);
  }

  /** Whether the entry may be served as it is, now. */
  isFresh(entry: CacheEntry): boolean {
    return this.decide(entry).action === 'fresh';
  }

  /**
   * Rules (a) and (b) alone: activity (a broadcast, a mempool change) named what the entry is
   * about after it was validated (the time its fetch was asked). A read that shared a flight
   * asks it of the flight's answer: the answer may predate a broadcast the read came after.
   */
  isChangedByActivity(entry: CacheEntry): boolean {
    const activity = this.deps.chain().activity;
    return activity !== undefined && changedByActivity(entry, activity);
  }

  /** The activity registry's generation (0 without one): flights are keyed by it. */
  activityGeneration(): number {
    return this.deps.chain().activity?.generation ?? 0;
  }

  /**
   * The entry as it may stand in for an upstream that failed (stale-if-error), or undefined
   * when the rules no longer allow it (policy.ts isUsableWhenFailing, asServedNow).
   */
  standIn(entry: CacheEntry): CacheEntry | undefined {
    const chain = this.deps.chain();
    return isUsableWhenFailing(entry, this.deps.clock(), chain, this.deps.ttl, this.deps.stale) ? asServedNow(entry, chain) : undefined;
  }
}
