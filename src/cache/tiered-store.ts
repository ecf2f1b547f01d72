/**
 * Memory in front of an optional shared tier. Lookups try memory synchronously, then the
 * shared tier; a shared-tier failure is a miss (counted), never an error for the client.
 */
import type { CacheEntry, FreshnessClass } from './entry.js';
import type { MemoryStore } from './memory-store.js';
import type { CacheStore, Tier } from './store.js';

export type LookupResult = 'hit' | 'miss' | 'error';

export interface TieredObserver {
  onLookup?(tier: Tier, cls: FreshnessClass | 'unknown', result: LookupResult): void;
  onError?(tier: Tier, operation: string, error: unknown): void;
}

export interface Found {
  entry: CacheEntry;
  tier: Tier;
}

export class TieredStore {
  constructor(
    readonly memory: MemoryStore,
    readonly shared: CacheStore | undefined,
    private readonly retention: (entry: CacheEntry) => number | null,
    private readonly observer: TieredObserver = {},
  ) {}

  /**
   * The hit path: no promise, no I/O. Memory-tier entries are not counted here: only the
   * caller knows whether one was served (hit) or had to be refreshed (miss); see countLookup.
   */
  peek(key: string): CacheEntry | undefined {
    return this.memory.peek(key);
  }

  countLookup(tier: Tier, cls: FreshnessClass | 'unknown', result: LookupResult): void {
    this.observer.onLookup?.(tier, cls, result);
  }

  async get(key: string): Promise<Found | undefined> {
    const local = this.memory.peek(key);
    if (local) return { entry: local, tier: 'memory' };
    this.observer.onLookup?.('memory', 'unknown', 'miss');
    const entry = await this.getShared(key);
    return entry ? { entry, tier: 'redis' } : undefined;
  }

  /**
   * The shared tier alone, for a caller that already peeked memory (one lookup per tier per
   * request). An entry found there is copied to memory.
   */
  async getShared(key: string): Promise<CacheEntry | undefined> {
    if (!this.shared) return undefined;
    try {
      const entry = await this.shared.get(key);
      this.observer.onLookup?.('redis', entry?.cls ?? 'unknown', entry ? 'hit' : 'miss');
      if (!entry) return undefined;
      this.memory.put(key, entry, this.retention(entry));
      return entry;
    } catch (error) {
      this.observer.onLookup?.('redis', 'unknown', 'error');
      this.observer.onError?.('redis', 'get', error);
      return undefined;
    }
  }

  /**
   * Writes memory at once and the shared tier in the background: a slow Redis never delays an
   * answer. `memoryOnly` is for entries just read from the shared tier.
   */
  set(key: string, entry: CacheEntry, options: { memoryOnly?: boolean } = {}): Promise<void> {
    const retainMs = this.retention(entry);
    this.memory.put(key, entry, retainMs);
    if (!this.shared || options.memoryOnly) return Promise.resolve();
    return this.shared.set(key, entry, retainMs).catch((error: unknown) => this.observer.onError?.('redis', 'set', error));
  }

  async close(): Promise<void> {
    await this.memory.close();
    await this.shared?.close();
  }
}
