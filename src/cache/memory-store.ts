/**
 * The in-memory tier: an LRU bounded by bytes, with per-entry retention. It is the whole
 * cache when no Redis is configured, and the small hot tier in front of Redis otherwise.
 */
import { LRUCache } from 'lru-cache';
import { systemClock, type Clock } from '../clock.js';
import { entryCost, withOwnedBody, type CacheEntry } from './entry.js';
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';
import type { CacheStore } from './store.js';

/**
 * How often expired entries are swept. A sweep (lru-cache purgeStale) walks every entry, about
 * 500 ns each on Node 24: 50 ms for the ~100,000 small entries the default 128 MiB holds. Every
 * 30 s that is under 0.2% of one core. lru-cache's ttlAutopurge instead keeps one timer per entry
 * (265 bytes more an entry, a timer set per put, on real time rather than the injected clock).
 * Measured by bench/micro/memory-entry-cost.ts.
 */
export const DEFAULT_SWEEP_INTERVAL_MS = 30_000;

export interface MemoryStoreOptions {
  maxBytes: number;
  /** Larger entries are not kept in memory (one huge answer must not flush the tier). */
  maxEntryBytes: number;
  /** The composition root's clock; the system clock for tests that build a store alone. */
  now?: Clock;
  telemetry?: Telemetry;
  /** Expired entries are dropped at least this often, not only when read or evicted; 0: never swept. */
  sweepIntervalMs?: number;
}

/**
 * lru-cache keeps the byte budget, per-entry retention and recency (measured against the
 * hand-written Map LRU it replaced: about 1.9x faster per hit and 2.7x per put that evicts, see
 * docs/architecture.md "Design notes"); this class adapts it to the CacheStore interface. Each entry is
 * charged what it really holds (entry.ts entryCost: key, headers, metadata, lru-cache's slot),
 * so `maxBytes` bounds the tier's memory, not only its bodies.
 */
export class MemoryStore implements CacheStore {
  readonly tier = 'memory' as const;
  private readonly lru: LRUCache<string, CacheEntry>;
  private readonly sweeper: NodeJS.Timeout | undefined;
  /**
   * The largest entry kept: maxEntryBytes, but never more than the whole budget. In front of Redis
   * the tier is small (maxBytesWithRedis) and maxEntryBytes is not; lru-cache, handed an entry
   * larger than its maxSize, evicts every other entry, then the new one, and leaves its byte count
   * negative by that entry's size (the tier then holds more than its bound). Such an entry is
   * refused before lru-cache sees it (and before its body is copied): every Redis hit on it is
   * then a plain Redis read, with nothing put into memory and nothing evicted.
   */
  private readonly maxEntryBytes: number;

  constructor(options: MemoryStoreOptions) {
    const telemetry = options.telemetry ?? noopTelemetry;
    this.maxEntryBytes = Math.min(options.maxEntryBytes, options.maxBytes);
    this.lru = new LRUCache<string, CacheEntry>({
      maxSize: options.maxBytes,
      maxEntrySize: this.maxEntryBytes,
      // Retention is measured on the injected clock, read at every check (tests move it).
      perf: { now: options.now ?? systemClock },
      ttlResolution: 0,
      allowStale: false,
      updateAgeOnGet: false,
      dispose: (_entry, _key, reason) => {
        if (reason === 'evict') telemetry.cacheEvicted('memory');
      },
    });
    const interval = options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
    // A flood of distinct short-lived entries nobody reads again must not hold memory past their retention.
    this.sweeper = interval > 0 ? setInterval(() => this.sweep(), interval).unref() : undefined;
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

  /**
   * `retainMs` null: kept until evicted for room. An entry over maxEntryBytes or over the whole
   * budget is not kept, nor is an older copy.
   */
  put(key: string, entry: CacheEntry, retainMs: number | null): void {
    const size = entryCost(key, entry);
    if (size > this.maxEntryBytes) {
      this.lru.delete(key);
      return;
    }
    // lru-cache reads a ttl of 0 as "no ttl"; a retention that rounds to 0 still expires.
    this.lru.set(key, withOwnedBody(entry), { size, ttl: retainMs === null ? 0 : Math.max(1, retainMs) });
  }

  /** Drops every entry past its retention now (the timer calls this; tests call it directly). */
  sweep(): void {
    this.lru.purgeStale();
  }

  async delete(key: string): Promise<void> {
    this.lru.delete(key);
  }

  /** Deletes every key `matches` accepts (an admin purge); returns how many were deleted. */
  deleteMatching(matches: (key: string) => boolean): number {
    // Collected first: deleting while lru-cache iterates would skip entries.
    const doomed = [...this.lru.keys()].filter(matches);
    for (const key of doomed) this.lru.delete(key);
    return doomed.length;
  }

  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    this.lru.clear();
  }

  get entryCount(): number {
    return this.lru.size;
  }

  get byteCount(): number {
    return this.lru.calculatedSize;
  }
}
