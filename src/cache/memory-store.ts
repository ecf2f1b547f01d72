/**
 * The in-memory tier: an LRU bounded by bytes, with per-entry retention. It is the whole
 * cache when no Redis is configured, and the small hot tier in front of Redis otherwise.
 */
import { systemClock, type Clock } from '../clock.js';
import { entrySize, type CacheEntry } from './entry.js';
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';
import type { CacheStore } from './store.js';

interface Slot {
  entry: CacheEntry;
  size: number;
  expiresAt: number;
}

export interface MemoryStoreOptions {
  maxBytes: number;
  /** Larger entries are not kept in memory (one huge answer must not flush the tier). */
  maxEntryBytes: number;
  /** The composition root's clock; the system clock for tests that build a store alone. */
  now?: Clock;
  telemetry?: Telemetry;
}

export class MemoryStore implements CacheStore {
  readonly tier = 'memory' as const;
  // A Map iterates in insertion order: re-inserting on access makes its head the LRU.
  private readonly slots = new Map<string, Slot>();
  private bytes = 0;
  private readonly now: Clock;

  constructor(private readonly options: MemoryStoreOptions) {
    this.now = options.now ?? systemClock;
  }

  /** Synchronous lookup, so a hit never waits for a promise tick. */
  peek(key: string): CacheEntry | undefined {
    const slot = this.slots.get(key);
    if (!slot) return undefined;
    if (slot.expiresAt <= this.now()) {
      this.remove(key, slot);
      return undefined;
    }
    this.slots.delete(key);
    this.slots.set(key, slot);
    return slot.entry;
  }

  async get(key: string): Promise<CacheEntry | undefined> {
    return this.peek(key);
  }

  async set(key: string, entry: CacheEntry, retainMs: number | null): Promise<void> {
    this.put(key, entry, retainMs);
  }

  put(key: string, entry: CacheEntry, retainMs: number | null): void {
    const size = entrySize(entry);
    const existing = this.slots.get(key);
    if (existing) this.remove(key, existing);
    if (size > this.options.maxEntryBytes) return;
    this.slots.set(key, { entry, size, expiresAt: retainMs === null ? Infinity : this.now() + retainMs });
    this.bytes += size;
    this.evictForRoom();
  }

  async delete(key: string): Promise<void> {
    const slot = this.slots.get(key);
    if (slot) this.remove(key, slot);
  }

  async close(): Promise<void> {
    this.slots.clear();
    this.bytes = 0;
  }

  get entryCount(): number {
    return this.slots.size;
  }

  get byteCount(): number {
    return this.bytes;
  }

  private evictForRoom(): void {
    for (const [key, slot] of this.slots) {
      if (this.bytes <= this.options.maxBytes) return;
      this.remove(key, slot);
      (this.options.telemetry ?? noopTelemetry).cacheEvicted('memory');
    }
  }

  private remove(key: string, slot: Slot): void {
    this.slots.delete(key);
    this.bytes -= slot.size;
  }
}
