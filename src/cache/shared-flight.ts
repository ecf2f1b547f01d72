/**
 * Single-flight across processes: what the read path asks of it (CrossProcessFlight), and its
 * Redis implementation. Worker mode without Redis has the other one, through the primary
 * (cluster/worker-flight.ts).
 *
 * Single-flight across instances, through a lock in the shared tier (Redis): the holder
 * fetches and writes its answer to the shared tier BEFORE it releases the lock; the others
 * poll the shared tier until that answer lands, the lock goes away, or `waitMs` passes, and
 * then fetch themselves if they still need to. Whoever takes the lock looks in the shared tier
 * once more first: the previous holder may have landed its answer and released the lock since
 * the caller's own look. Without a lock (Redis down), everyone fetches.
 */
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../clock.js';
import type { CacheEntry } from './entry.js';
import type { CacheStore, SharedLock } from './store.js';

export interface SharedFlightSettings {
  lock: SharedLock;
  lockTtlMs: number;
  waitMs: number;
}

const SHARED_POLL_MS = 15;

export type SharedFlightOutcome<T> = { kind: 'fetched'; value: T } | { kind: 'filled'; entry: CacheEntry };

/**
 * One fetch of a key across processes: the first asker fetches, the others wait (at most `waitMs`)
 * and get its entry, or fetch themselves when none comes.
 */
export interface CrossProcessFlight {
  /**
   * `fetch(mustLand)`: the holder passes true when its fetch must not resolve before its entry is
   * in the shared tier. `accept(entry)`: whether a peer's entry answers this request (fresh).
   * `entryOf(value)`: the entry a fetch stored, which a flight that hands it on to its waiters
   * itself needs (undefined: nothing stored, the waiters fetch themselves).
   */
  run<T>(
    key: string,
    route: string,
    fetch: (mustLand: boolean) => Promise<T>,
    accept: (entry: CacheEntry) => boolean,
    entryOf: (value: T) => CacheEntry | undefined,
  ): Promise<SharedFlightOutcome<T>>;
}

/** Through Redis: the holder's entry lands in the shared tier, where the waiters read it (`entryOf` is not needed). */
export class SharedFlight implements CrossProcessFlight {
  constructor(
    private readonly settings: SharedFlightSettings,
    private readonly sharedTier: CacheStore,
    private readonly clock: Clock,
    private readonly telemetry: Telemetry = noopTelemetry,
  ) {}

  async run<T>(key: string, route: string, fetch: (mustLand: boolean) => Promise<T>, accept: (entry: CacheEntry) => boolean): Promise<SharedFlightOutcome<T>> {
    const lockKey = `${key}:lock`;
    const release = await this.settings.lock.acquire(lockKey, this.settings.lockTtlMs);
    if (release === 'busy') {
      const filled = await this.waitForPeer(key, lockKey, accept);
      this.telemetry.sharedFlightWaited(route, filled ? 'filled' : 'timeout');
      if (filled) return { kind: 'filled', entry: filled };
      return { kind: 'fetched', value: await fetch(false) };
    }
    try {
      // The caller looked in the shared tier before asking for the lock; a holder may have written
      // its answer and released the lock in between. Looking again under the lock tells that apart
      // from a miss, so two instances never both fetch one answer.
      const landed = release === undefined ? undefined : await this.peerEntry(key, accept);
      if (landed) {
        this.telemetry.sharedFlightWaited(route, 'filled');
        return { kind: 'filled', entry: landed };
      }
      return { kind: 'fetched', value: await fetch(release !== undefined) };
    } finally {
      await release?.();
    }
  }

  private async waitForPeer(key: string, lockKey: string, accept: (entry: CacheEntry) => boolean): Promise<CacheEntry | undefined> {
    const deadline = this.clock() + this.settings.waitMs;
    while (this.clock() < deadline) {
      await sleep(SHARED_POLL_MS);
      const entry = await this.peerEntry(key, accept);
      if (entry) return entry;
      // The holder writes its answer before it releases the lock, but both may have happened
      // between the look above and this check: one more look tells a landed answer from a failure.
      if (!(await this.settings.lock.isHeld(lockKey))) return this.peerEntry(key, accept);
    }
    return undefined;
  }

  private async peerEntry(key: string, accept: (entry: CacheEntry) => boolean): Promise<CacheEntry | undefined> {
    const entry = await this.sharedTier.get(key).catch(() => undefined);
    return entry && accept(entry) ? entry : undefined;
  }
}
