/**
 * Carries out an admin purge: Redis first (so no tier can refill memory with a purged entry),
 * then this instance's memory tier, then the announcement on the purge channel, on which every
 * other instance sharing the Redis purges its own memory tier with the same predicate.
 */
import { randomUUID } from 'node:crypto';
import { purgeMatcher, type PurgeSelector } from './purge.js';
import type { MemoryStore } from './memory-store.js';
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';

/** The parts of the Redis store a purge uses (redis-store.ts). */
export interface PurgeableRedis {
  deleteMatching(target: { keys?: string[]; patterns: string[]; matches: (key: string) => boolean }): Promise<number>;
  publish(channel: string, message: string): Promise<void>;
}

export interface PurgeOutcome {
  memory: number;
  /** Keys deleted from Redis; null without Redis. */
  redis: number | null;
  /** Why Redis could not be purged (the memory tier was purged all the same). */
  redisError?: string;
}

interface Announcement {
  from: string;
  selector: PurgeSelector;
}

const SELECTOR_KINDS = new Set(['keys', 'route', 'tx', 'principal', 'block', 'all']);

/** The purge channel's name for a key prefix: instances share a channel exactly when they share keys. */
export const purgeChannelName = (keyPrefix: string): string => `${keyPrefix}:purge`;

export class Purger {
  /** This instance, so that it skips its own announcements. */
  private readonly id = randomUUID();
  private readonly telemetry: Telemetry;
  /** Purges asked of this instance, and announced by others and applied here. */
  readonly counts = { local: 0, fromPeers: 0 };

  constructor(private readonly deps: { memory: MemoryStore; redis?: PurgeableRedis; keyPrefix: string; telemetry?: Telemetry }) {
    this.telemetry = deps.telemetry ?? noopTelemetry;
  }

  async purge(selector: PurgeSelector): Promise<PurgeOutcome> {
    const matcher = purgeMatcher(this.deps.keyPrefix, selector);
    let redis: number | null = null;
    let redisError: string | undefined;
    if (this.deps.redis) {
      try {
        redis = await this.deps.redis.deleteMatching(matcher);
      } catch (error) {
        redisError = (error as Error).message;
        this.telemetry.storeError('redis', 'purge', error);
      }
    }
    const memory = this.deps.memory.deleteMatching(matcher.matches);
    this.counts.local += 1;
    this.telemetry.purged(selector.kind, 'admin', { memory, redis });
    if (this.deps.redis && redisError === undefined) {
      const announcement: Announcement = { from: this.id, selector };
      try {
        await this.deps.redis.publish(purgeChannelName(this.deps.keyPrefix), JSON.stringify(announcement));
      } catch (error) {
        redisError = `the purge could not be announced to other instances: ${(error as Error).message}`;
        this.telemetry.storeError('redis', 'publish', error);
      }
    }
    return redisError === undefined ? { memory, redis } : { memory, redis, redisError };
  }

  /** A message from the purge channel: another instance's purge, applied to this memory tier. */
  applyAnnouncement(message: string): void {
    let announcement: Announcement;
    try {
      announcement = JSON.parse(message) as Announcement;
      if (typeof announcement?.from !== 'string' || !SELECTOR_KINDS.has(announcement.selector?.kind)) throw new Error('not a purge announcement');
    } catch (error) {
      this.telemetry.storeError('redis', 'purge-message', error);
      return;
    }
    if (announcement.from === this.id) return;
    const memory = this.deps.memory.deleteMatching(purgeMatcher(this.deps.keyPrefix, announcement.selector).matches);
    this.counts.fromPeers += 1;
    this.telemetry.purged(announcement.selector.kind, 'peer', { memory, redis: null });
  }
}
