/**
 * Memory in front of an optional shared tier. Reads try memory synchronously, then the
 * shared tier; a shared-tier failure is reported as such, never an error for the client.
 * The store counts no lookups: cache/lookup.ts does, once per client lookup.
 */
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';
import type { CacheEntry } from './entry.js';
import type { MemoryStore } from './memory-store.js';
import type { CacheStore, Tier } from './store.js';

export interface Found {
  entry: CacheEntry;
  tier: Tier;
}

export class TieredStore {
  constructor(
    readonly memory: MemoryStore,
    readonly shared: CacheStore | undefined,
    private readonly retention: (entry: CacheEntry) => number | null,
    private readonly telemetry: Telemetry = noopTelemetry,
  ) {}

  /** The memory tier alone: the hit path (no promise, no I/O). */
  peek(key: string): CacheEntry | undefined {
    return this.memory.peek(key);
  }

  /** Memory, then the shared tier; for internal reads that are not a client's lookup. */
  async get(key: string): Promise<Found | undefined> {
    const local = this.memory.peek(key);
    if (local) return { entry: local, tier: 'memory' };
    const entry = await this.getShared(key);
    return entry && entry !== 'failed' ? { entry, tier: 'redis' } : undefined;
  }

  /**
   * The shared tier alone, for a caller that already looked in memory. An entry found there
   * is copied to memory; `failed`: the shared tier did not answer (the caller counts it).
   */
  getShared(key: string): Promise<CacheEntry | undefined | 'failed'> {
    const shared = this.shared;
    if (!shared) return Promise.resolve(undefined);
    const failed = (error: unknown): 'failed' => {
      this.telemetry.storeError('redis', 'get', error);
      return 'failed';
    };
    // One promise step, no async frame: this is the Redis-tier hit path.
    let reading: Promise<CacheEntry | undefined>;
    try {
      reading = shared.get(key);
    } catch (error) {
      return Promise.resolve(failed(error));
    }
    return reading.then((entry) => {
      if (entry) this.memory.put(key, entry, this.retention(entry));
      return entry;
    }, failed);
  }

  /**
   * Writes memory at once and the shared tier in the background: a slow Redis never delays an
   * answer. `memoryOnly` is for entries just read from the shared tier.
   */
  set(key: string, entry: CacheEntry, options: { memoryOnly?: boolean } = {}): Promise<void> {
    const retainMs = this.retention(entry);
    this.memory.put(key, entry, retainMs);
    if (!this.shared || options.memoryOnly) return Promise.resolve();
    return this.shared.set(key, entry, retainMs).catch((error: unknown) => this.telemetry.storeError('redis', 'set', error));
  }

  async close(): Promise<void> {
    await this.memory.close();
    await this.shared?.close();
  }
}
