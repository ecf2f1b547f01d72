/**
 * The store interface. A store keeps entries and their retention time and never reads
 * them: deciding what an entry is worth is the policy's job (policy.ts).
 */
import type { CacheEntry } from './entry.js';

export type Tier = 'memory' | 'redis';

export interface CacheStore {
  readonly tier: Tier;
  get(key: string): Promise<CacheEntry | undefined>;
  /** `retainMs` null keeps the entry until it is evicted for room. */
  set(key: string, entry: CacheEntry, retainMs: number | null): Promise<void>;
  delete(key: string): Promise<void>;
  close(): Promise<void>;
}

/** A lock shared by instances (Redis), so one of them fetches a miss while the others wait. */
export interface SharedLock {
  /** The release function when acquired, 'busy' when another holder has it, undefined when unavailable. */
  acquire(key: string, ttlMs: number): Promise<(() => Promise<void>) | 'busy' | undefined>;
  isHeld(key: string): Promise<boolean>;
}
