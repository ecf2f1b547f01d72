/**
 * The one owner of upstream health: each upstream's circuit breaker, its last reported tip,
 * whether it lags the best tip, and the Retry-After its last 429 asked for. The client asks it which upstream to try next and tells
 * it how each attempt went; the chain tracker reports each upstream's tip; /ready and
 * metrics read status(). Time comes from the injected clock.
 */
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';
import type { Clock } from '../clock.js';
import { CircuitBreaker, type BreakerSettings, type BreakerState } from './breaker.js';
import { RecentFailures, type RecentFailure, type UpstreamFailure } from './recent-failures.js';

export interface HealthSettings extends BreakerSettings {
  /** An upstream more than this many blocks behind the best tip is not read from. */
  maxLagBlocks: number;
}

export interface HealthStatus {
  origin: string;
  breaker: BreakerState;
  tipHeight?: number;
  lagBlocks?: number;
  /** Milliseconds left of the Retry-After of its last 429, while it lasts. */
  rateLimitedMs?: number;
  usable: boolean;
  /** Its last failure (what /ready and the status page show), and how long ago it was. */
  lastError?: { message: string; ageMs: number };
  /** Its failures since its last success, oldest first, at most failureThreshold: while the breaker is open, those that opened it. */
  recentFailures: RecentFailure[];
}

/** Longest failure message kept: an upstream's error text is not trusted to be short. */
const MAX_ERROR_MESSAGE_CHARS = 300;

interface Tracked {
  origin: string;
  breaker: CircuitBreaker;
  tipHeight?: number;
  lagging: boolean;
  /** Until then (clock time) the upstream is sent nothing: it answered 429. */
  limitedUntil: number;
  lastError?: { message: string; at: number };
  failures: RecentFailures;
}

export class UpstreamHealth {
  private readonly upstreams: Tracked[];

  constructor(
    origins: readonly string[],
    private readonly settings: HealthSettings,
    private readonly clock: Clock,
    private readonly telemetry: Telemetry = noopTelemetry,
  ) {
    this.upstreams = origins.map((origin) => ({
      origin,
      breaker: new CircuitBreaker(settings),
      lagging: false,
      limitedUntil: 0,
      // As many as it takes to open the breaker: the opened log line names every one of them.
      failures: new RecentFailures(settings.failureThreshold),
    }));
  }

  status(): HealthStatus[] {
    const now = this.clock();
    return this.upstreams.map((u) => ({
      origin: u.origin,
      breaker: u.breaker.state(now),
      tipHeight: u.tipHeight,
      lagBlocks: this.lagOf(u, now),
      rateLimitedMs: u.limitedUntil > now ? u.limitedUntil - now : undefined,
      usable: this.isUsable(u, now),
      lastError: u.lastError ? { message: u.lastError.message, ageMs: Math.max(0, now - u.lastError.at) } : undefined,
      recentFailures: u.failures.list(now),
    }));
  }

  /** The upstream a passthrough request should use: the first usable one, else the first. */
  preferredOrigin(): string {
    const now = this.clock();
    const chosen = this.upstreams.find((u) => this.isUsable(u, now)) ?? this.upstreams[0];
    if (!chosen) throw new Error('no upstream configured');
    return chosen.origin;
  }

  /** A tip poll not answered in time: the upstream's last error says so (not a failure: its request may still answer). */
  reportNoAnswer(origin: string, waitedMs: number): void {
    const upstream = this.find(origin);
    // Only where nothing more precise is known (a refused connection, a status) and no tip came.
    if (!upstream || upstream.tipHeight !== undefined || upstream.lastError !== undefined) return;
    upstream.lastError = { message: `no answer to the chain tip poll within ${waitedMs} ms (chainTip.pollTimeoutMs)`, at: this.clock() };
  }

  /** The tracker reports each upstream's tip height; an upstream too far behind is not read from. */
  reportTip(origin: string, height: number): void {
    const upstream = this.find(origin);
    if (!upstream) return;
    upstream.tipHeight = height;
    const now = this.clock();
    for (const u of this.upstreams) {
      const lag = this.lagOf(u, now);
      const lagging = lag !== undefined && lag > this.settings.maxLagBlocks;
      if (lagging !== u.lagging) {
        u.lagging = lagging;
        this.telemetry.lagChanged(u.origin, lagging, lag ?? 0);
      }
    }
  }

  /**
   * The usable upstream to try next, its breaker slot taken: ones not tried yet first, then
   * those at the best tip (an answer from one a block behind would be stored as current), then
   * configured order. Lagging upstreams only when nothing else is left: old data beats none.
   * A rate-limited upstream is not sent anything until its Retry-After has passed.
   */
  acquire(tried: ReadonlySet<string>): string | undefined {
    const now = this.clock();
    const rank = (u: Tracked): number => (tried.has(u.origin) ? 2 : 0) + (u.lagging ? 4 : 0) + ((this.lagOf(u, now) ?? 0) > 0 ? 1 : 0);
    const order = this.upstreams.map((u, index) => ({ u, index })).sort((a, b) => rank(a.u) - rank(b.u) || a.index - b.index);
    for (const { u } of order) {
      if (u.limitedUntil <= now && u.breaker.tryAcquire(now)) return u.origin;
    }
    return undefined;
  }

  /**
   * The upstream answered 429: it is left alone for `forMs` (its Retry-After, capped). A later
   * 429 can only extend the pause, never shorten it.
   */
  rateLimited(origin: string, forMs: number): void {
    const upstream = this.find(origin);
    if (upstream) upstream.limitedUntil = Math.max(upstream.limitedUntil, this.clock() + forMs);
  }

  /** Milliseconds until a rate-limited upstream may be sent requests again; 0 when it may now. */
  rateLimitRemaining(origin: string): number {
    const upstream = this.find(origin);
    return upstream ? Math.max(0, upstream.limitedUntil - this.clock()) : 0;
  }

  /**
   * When no upstream can be tried because rate limits hold every one whose breaker would let a
   * request through: the shortest wait until one may be asked again. Otherwise undefined.
   */
  rateLimitedForAll(): number | undefined {
    const now = this.clock();
    const candidates = this.upstreams.filter((u) => u.breaker.state(now) !== 'open');
    if (candidates.length === 0 || candidates.some((u) => u.limitedUntil <= now)) return undefined;
    return Math.min(...candidates.map((u) => u.limitedUntil - now));
  }

  /**
   * The acquired slot was not used (the request never left), or its answer says nothing about
   * the upstream's health (a handler's refusal of one input): frees a half-open trial.
   */
  release(origin: string): void {
    this.find(origin)?.breaker.release();
  }

  /**
   * A health check (the tip poll) that succeeds while the breaker is open does not close it:
   * only after the cool-down does a good poll count as the half-open trial.
   */
  recordSuccess(origin: string, options: { healthCheck?: boolean } = {}): void {
    const upstream = this.find(origin);
    if (!upstream) return;
    if (options.healthCheck && upstream.breaker.state(this.clock()) === 'open') return;
    upstream.failures.clear();
    if (upstream.breaker.onSuccess()) this.telemetry.breakerChanged(origin, 'closed');
  }

  /**
   * A failed attempt: what it met is kept as the upstream's last error and among its recent
   * failures, which the breaker's "opened" event carries when this failure opens it.
   */
  recordFailure(origin: string, failure: UpstreamFailure): void {
    const upstream = this.find(origin);
    if (!upstream) return;
    const now = this.clock();
    upstream.lastError = { message: failure.message.slice(0, MAX_ERROR_MESSAGE_CHARS), at: now };
    upstream.failures.add(failure, now);
    if (upstream.breaker.onFailure(now)) this.telemetry.breakerChanged(origin, 'open', upstream.failures.list(now));
  }

  private find(origin: string): Tracked | undefined {
    return this.upstreams.find((u) => u.origin === origin);
  }

  private isUsable(u: Tracked, now: number): boolean {
    return u.breaker.state(now) !== 'open' && !u.lagging && u.limitedUntil <= now;
  }

  private lagOf(upstream: Tracked, now: number): number | undefined {
    if (upstream.tipHeight === undefined) return undefined;
    // Best tip among upstreams that are not failing: a dead leader must not make the rest "lag".
    const heights = this.upstreams.filter((u) => u.breaker.state(now) !== 'open' && u.tipHeight !== undefined).map((u) => u.tipHeight as number);
    return heights.length === 0 ? 0 : Math.max(...heights) - upstream.tipHeight;
  }
}
