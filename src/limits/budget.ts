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

// A cap on clients tracked per window in one process; beyond it, new clients share one budget.
// At ~100 bytes per entry this bounds the map near 10 MB even under an address-spraying flood.
export const MAX_TRACKED_CLIENTS = 100_000;
const OVERFLOW_CLIENT = '\u0000overflow';

/**
 * The budget of one process (no Redis). Only the current window's counts matter, so a new
 * window starts with an empty Map: idle clients cost nothing after one window.
 */
export class MemoryBudget implements Budget {
  private window = Number.NaN;
  // A mutable count per client: a returning client costs one Map lookup.
  private used = new Map<string, { used: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly maxClients = MAX_TRACKED_CLIENTS,
  ) {}

  take(client: string, cost: number, limit: number, now: number): Charge {
    const window = windowIndex(now, this.windowMs);
    if (window !== this.window) {
      this.window = window;
      this.used = new Map();
    }
    const resetAtMs = (window + 1) * this.windowMs;
    let count = this.used.get(client);
    if (count === undefined) {
      const name = this.used.size >= this.maxClients ? OVERFLOW_CLIENT : client;
      count = this.used.get(name);
      if (count === undefined) {
        count = { used: 0 };
        this.used.set(name, count);
      }
    }
    if (count.used + cost > limit) return { allowed: false, used: count.used, resetAtMs };
    count.used += cost;
    return { allowed: true, used: count.used, resetAtMs };
  }

  async close(): Promise<void> {}
}
