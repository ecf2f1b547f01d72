/**
 * One client lookup, tier by tier, and the one place cache lookups are counted: once per tier
 * a client request consults (memory; then Redis, only when memory held nothing usable). An
 * answer that may live under more than one key (a transaction kept for /tx/{id} or as a list
 * member) is still one lookup. Internal reads (the tx/events finality probe) go to the store
 * directly, and the warm-up's reads through uncounted lookups: they count nothing, no client asked.
 */
import type { Telemetry } from '../telemetry/telemetry.js';
import type { Decider } from './decider.js';
import type { CacheEntry } from './entry.js';
import type { Decision } from './policy.js';
import type { TieredStore } from './tiered-store.js';

/** What the policy decided about the entry a tier held for a request (if any), and its key. */
export interface Found {
  key: string;
  entry: CacheEntry | undefined;
  decision: Decision;
}

export interface LookupDeps {
  store: TieredStore;
  telemetry: Telemetry;
  /** The one decision (decider.ts). */
  decider: Decider;
}

/** Which entries a reader can use (a tx/multiple member cannot be built from a /tx/{id} 404). */
export type Usable = (entry: CacheEntry) => boolean;

const ANY: Usable = () => true;
const firstOf = (keys: string | readonly string[]): string => (typeof keys === 'string' ? keys : (keys[0] as string));

export class CacheLookups {
  /**
   * `servesStale`: whether the reader serves an entry the decision allows to be served while it
   * refreshes or is revalidated (the single reader does; tx/multiple refetches such members, so
   * for it they are misses).
   * `counted`: false for the proxy's own reads (the warm-up of a new block): no client asked.
   */
  constructor(
    private readonly deps: LookupDeps,
    private readonly servesStale = true,
    private readonly counted = true,
  ) {}

  /**
   * A fresh entry is a hit, one served while it refreshes is stale, one served while it is
   * revalidated behind the answer a hit, anything else needs the upstream.
   */
  private resultOf(decision: Decision): 'hit' | 'stale' | 'miss' {
    if (decision.action === 'fresh') return 'hit';
    if (!this.servesStale) return 'miss';
    return decision.action === 'serve-stale-and-refresh' ? 'stale' : decision.action === 'serve-and-revalidate-behind' ? 'hit' : 'miss';
  }

  /** The memory tier, synchronously: the hit path. `keys` in order of preference. */
  memory(keys: string | readonly string[], usable: Usable = ANY): Found {
    const { store } = this.deps;
    let found: Found | undefined;
    for (const key of typeof keys === 'string' ? [keys] : keys) {
      const entry = store.peek(key);
      if (entry && usable(entry)) {
        found = { key, entry, decision: this.decide(entry) };
        break;
      }
    }
    found ??= { key: firstOf(keys), entry: undefined, decision: { action: 'refetch' } };
    if (this.counted) this.deps.telemetry.cacheLookup('memory', found.entry?.cls ?? 'unknown', this.resultOf(found.decision));
    return found;
  }

  /** The shared tier, after memory held nothing usable; undefined when there is no shared tier. */
  shared(keys: string | readonly string[], usable: Usable = ANY): Promise<Found | undefined> {
    const { store } = this.deps;
    if (!store.shared) return Promise.resolve(undefined);
    // One key (every single-route read): one promise step, no async frame (the Redis-hit path).
    if (typeof keys === 'string') {
      return store.getShared(keys).then((read) => (read === 'failed' ? this.sharedFailed() : (this.sharedFound(keys, read, usable) ?? this.sharedMiss(keys))));
    }
    return this.sharedInOrder(keys, usable);
  }

  private async sharedInOrder(keys: readonly string[], usable: Usable): Promise<Found | undefined> {
    for (const key of keys) {
      const read = await this.deps.store.getShared(key);
      if (read === 'failed') return this.sharedFailed();
      const found = this.sharedFound(key, read, usable);
      if (found) return found;
    }
    return this.sharedMiss(firstOf(keys));
  }

  /** Redis did not answer: counted as an error; the caller goes on as if it held nothing. */
  private sharedFailed(): undefined {
    if (this.counted) this.deps.telemetry.cacheLookup('redis', 'unknown', 'error');
    return undefined;
  }

  /** Counts and decides a usable entry; undefined when there is none. */
  private sharedFound(key: string, read: CacheEntry | undefined, usable: Usable): Found | undefined {
    if (!read || !usable(read)) return undefined;
    const found = { key, entry: read, decision: this.decide(read) };
    if (this.counted) this.deps.telemetry.cacheLookup('redis', read.cls, this.resultOf(found.decision));
    return found;
  }

  private sharedMiss(key: string): Found {
    if (this.counted) this.deps.telemetry.cacheLookup('redis', 'unknown', 'miss');
    return { key, entry: undefined, decision: { action: 'refetch' } };
  }

  private decide(entry: CacheEntry): Decision {
    return this.deps.decider.decide(entry);
  }
}
