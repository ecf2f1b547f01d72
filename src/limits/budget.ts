/**
 * A budget per client and fixed window: each request takes its cost from the client's
 * allowance for the current window; what would go over the limit is refused and takes nothing.
 *
 * Why a fixed window: its state is one counter per client and window, so the shared version is
 * one INCRBY in Redis and the RateLimit-* headers (limit, remaining, reset) describe it exactly.
 * The price is that a client may spend up to twice its limit across a window boundary; for
 * protecting a node over a window of seconds to a minute that is acceptable. Windows are aligned
 * to multiples of windowMs on the proxy's clock, so every instance (and every test that moves
 * the injected clock) agrees on which window a request falls in.
 */
import { LRUCache } from 'lru-cache';

export interface Charge {
  allowed: boolean;
  /** Units used in this window after this charge (before it, when refused). */
  used: number;
  /** When this window ends (ms since the epoch). */
  resetAtMs: number;
}

export interface Budget {
  /** Rejects when the budget's store fails (the limiter then lets the request through). */
  take(client: string, cost: number, limit: number, now: number): Charge | Promise<Charge>;
  close(): Promise<void>;
}

export const windowIndex = (now: number, windowMs: number): number => Math.floor(now / windowMs);

/**
 * The budget of one process (no Redis). Only the current window's counts matter, so a new
 * window starts with an empty table: idle clients cost nothing after one window.
 *
 * The table is bounded: when it is full, the client seen least recently in this window is
 * forgotten to make room, so a new client always starts with its own budget, whatever other
 * clients did (no budget is shared between clients). The leniency this costs, bounded: a
 * client forgotten mid-window starts again from a fresh budget when it returns. Forgetting it
 * takes `maxClients` other clients seen after its last request, so only a client with more
 * addresses (IPv4 addresses, IPv6 /64s) than the table holds can use it to regain budget; the
 * shared budget (Redis) is exact.
 */
export class MemoryBudget implements Budget {
  private window = Number.NaN;
  // A mutable count per client: a returning client costs one lookup; lru-cache keeps the
  // recency and drops the least recently used count when a new client needs the room.
  private readonly used: LRUCache<string, { used: number }>;

  constructor(
    private readonly windowMs: number,
    /** rateLimit.maxTrackedClients: at about 200 bytes a client (measured), 100 000 hold about 20 MB even under an address-spraying flood. */
    maxClients: number,
  ) {
    this.used = new LRUCache({ max: maxClients });
  }

  take(client: string, cost: number, limit: number, now: number): Charge {
    const window = windowIndex(now, this.windowMs);
    if (window !== this.window) {
      this.window = window;
      this.used.clear();
    }
    const resetAtMs = (window + 1) * this.windowMs;
    let count = this.used.get(client);
    if (count === undefined) {
      count = { used: 0 };
      this.used.set(client, count);
    }
    if (count.used + cost > limit) return { allowed: false, used: count.used, resetAtMs };
    count.used += cost;
    return { allowed: true, used: count.used, resetAtMs };
  }

  /** Clients tracked in the current window (at most maxClients). */
  get trackedClients(): number {
    return this.used.size;
  }

  async close(): Promise<void> {}
}
