/**
 * The in-memory tier: an LRU bounded by bytes, with per-entry retention. It is the whole
 * cache when no Redis is configured, and the small hot tier in front of Redis otherwise.
 */
import { LRUCache } from 'lru-cache';
import { systemClock, type Clock } from '../clock.js';
import { entrySize, type CacheEntry } from './entry.js';
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';
import type { CacheStore } from './store.js';

export interface MemoryStoreOptions {
  maxBytes: number;
  /** Larger entries are not kept in memory (one huge answer must not flush the tier). */
  maxEntryBytes: number;
  /** The composition root's clock; the system clock for tests that build a store alone. */
  now?: Clock;
  telemetry?: Telemetry;
}

/**
 * lru-cache keeps the byte budget, per-entry retention and recency (measured against the
 * hand-written Map LRU it replaced: about 1.9x faster per hit and 2.7x per put that evicts, see
 * README "Design notes"); this class adapts it to the CacheStore interface.
 */
export class MemoryStore implements CacheStore {
  readonly tier = 'memory' as const;
  private readonly lru: LRUCache<string, CacheEntry>;

  constructor(private readonly options: MemoryStoreOptions) {
    const telemetry = options.telemetry ?? noopTelemetry;
    this.lru = new LRUCache<string, CacheEntry>({
      maxSize: options.maxBytes,
      maxEntrySize: options.maxEntryBytes,
      sizeCalculation: entrySize,
      // Retention is measured on the injected clock, read at every check (tests move it).
      perf: { now: options.now ?? systemClock },
      ttlResolution: 0,
      allowStale: false,
      updateAgeOnGet: false,
      dispose: (_entry, _key, reason) => {
        if (reason === 'evict') telemetry.cacheEvicted('memory');
      },
    });
  }

  /** Synchronous lookup (it also marks the entry recently used), so a hit never waits for a promise tick. */
  peek(key: string): CacheEntry | undefined {
    return this.lru.get(key);
  }

  async get(key: string): Promise<CacheEntry | undefined> {
    return this.peek(key);
  }

  async set(key: string, entry: CacheEntry, retainMs: number | null): Promise<void> {
    this.put(key, entry, retainMs);
  }

  /** `retainMs` null: kept until evicted for room. An entry over maxEntryBytes is not kept, nor is an older copy. */
  put(key: string, entry: CacheEntry, retainMs: number | null): void {
    if (entrySize(entry) > this.options.maxEntryBytes) {
      this.lru.delete(key);
      return;
    }
    // lru-cache reads a ttl of 0 as "no ttl"; a retention that rounds to 0 still expires.
    this.lru.set(key, entry, { ttl: retainMs === null ? 0 : Math.max(1, retainMs) });
  }

  async delete(key: string): Promise<void> {
    this.lru.delete(key);
  }

  async close(): Promise<void> {
    this.lru.clear();
  }

  get entryCount(): number {
    return this.lru.size;
  }

  get byteCount(): number {
    return this.lru.calculatedSize;
  }
}
