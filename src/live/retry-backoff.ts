/**
 * When to try an upstream WebSocket again (issue 27): the JSON-RPC link, the Socket.IO
 * connection and the Redis notifier's reads share this schedule. Many Hiro API deployments serve
 * no WebSocket at all (or a gateway refuses the upgrade: 404, 401, 403): to them the proxy's
 * attempts are only noise, and the tip poll does the work meanwhile. So failed attempts space
 * out, doubling from live.push.reconnectMinMs up to live.push.reconnectMaxMs (minutes), and
 * the schedule starts again only after a connection that stayed up: one that opens and drops
 * at once (a gateway that accepts the upgrade and then cuts it) keeps backing off.
 */

export interface BackoffSettings {
  minMs: number;
  maxMs: number;
  /** A connection open at least this long counts as up: the next drop starts again from minMs. */
  stayedUpMs: number;
}

/**
 * The wait before attempt `attempt + 1`: doubling from `minMs` up to `maxMs`, with jitter over
 * the upper half of that ceiling (`random` in [0, 1)). Half the ceiling is a floor on purpose
 * ("equal jitter"): full jitter could try again a few milliseconds after a refusal, and the point
 * is to spare an upstream that refuses; the other half still spreads proxies that lost the same
 * upstream, so that they do not all come back in the same millisecond.
 */
export function reconnectDelay(attempt: number, minMs: number, maxMs: number, random: number): number {
  const ceiling = Math.min(maxMs, minMs * 2 ** Math.min(attempt, 30));
  return ceiling / 2 + random * (ceiling / 2);
}

/** One connection's schedule: how long to wait after each failed attempt or drop. */
export class RetryBackoff {
  private attempts = 0;

  constructor(
    private readonly settings: BackoffSettings,
    private readonly random: () => number = Math.random,
  ) {}

  /** Attempts that failed (or connections that did not stay up) since the last one that stayed up. */
  get failures(): number {
    return this.attempts;
  }

  /**
   * The wait before the next attempt, after one that did not open (`upMs` undefined) or a
   * connection that closed after `upMs` open.
   */
  next(upMs?: number): number {
    if (upMs !== undefined && upMs >= this.settings.stayedUpMs) this.attempts = 0;
    const delay = reconnectDelay(this.attempts, this.settings.minMs, this.settings.maxMs, this.random());
    this.attempts += 1;
    return delay;
  }
}
