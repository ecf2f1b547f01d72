/**
 * Gauges that describe state (store sizes, upstream health, tip age) are read from their owners
 * when the registry is read, not kept up to date by events. Every such metric's collect hook
 * calls `read()`, and one read is shared by all the hooks of one registry read: prom-client
 * starts every metric's `get()` in one synchronous loop, so they all join the read the first one
 * started, and each source (Redis INFO included) is asked once per scrape.
 */
import type { Counter, Gauge } from 'prom-client';

export interface CacheState {
  memory: { entries: number; bytes: number };
  /** Absent without Redis, or when Redis did not answer (its gauges keep their last values). */
  redis?: { keys: number; bytes: number; evictedKeys: number };
}

export interface UpstreamState {
  origin: string;
  usable: boolean;
  breaker: string;
  lagBlocks?: number;
  inFlight: number;
  queued: number;
}

export interface StateSources {
  cache?: () => Promise<CacheState> | CacheState;
  upstreams?: () => readonly UpstreamState[];
}

export interface StateGauges {
  cacheEntries: Gauge<'tier'>;
  cacheBytes: Gauge<'tier'>;
  cacheEvictions: Counter<'tier'>;
  upstreamUp: Gauge<'upstream'>;
  upstreamBreakerOpen: Gauge<'upstream'>;
  upstreamLagBlocks: Gauge<'upstream'>;
  upstreamInFlight: Gauge<'upstream' | 'state'>;
  chainTipAge: Gauge;
}

export class StateReader {
  private sources: StateSources = {};
  private reading: Promise<void> | undefined;
  private redisEvictionsSeen: number | undefined;

  constructor(
    private readonly gauges: StateGauges,
    /** Seconds since the chain tip last changed, computed on read. */
    private readonly tipAgeSeconds: () => number,
    private readonly onSourceError: (error: unknown) => void,
  ) {}

  watch(sources: StateSources): void {
    this.sources = { ...this.sources, ...sources };
  }

  /** Never rejects: a failing source leaves its gauges as they were and the scrape goes on. */
  read(): Promise<void> {
    this.reading ??= this.readAll().finally(() => (this.reading = undefined));
    return this.reading;
  }

  private async readAll(): Promise<void> {
    this.gauges.chainTipAge.set(this.tipAgeSeconds());
    const { upstreams, cache } = this.sources;
    try {
      if (upstreams) this.setUpstreams(upstreams());
    } catch (error) {
      this.onSourceError(error);
    }
    try {
      if (cache) this.setCache(await cache());
    } catch (error) {
      this.onSourceError(error);
    }
  }

  private setUpstreams(upstreams: readonly UpstreamState[]): void {
    const g = this.gauges;
    for (const u of upstreams) {
      g.upstreamUp.set({ upstream: u.origin }, u.usable ? 1 : 0);
      g.upstreamBreakerOpen.set({ upstream: u.origin }, u.breaker === 'open' ? 1 : 0);
      g.upstreamLagBlocks.set({ upstream: u.origin }, u.lagBlocks ?? 0);
      g.upstreamInFlight.set({ upstream: u.origin, state: 'active' }, u.inFlight);
      g.upstreamInFlight.set({ upstream: u.origin, state: 'queued' }, u.queued);
    }
  }

  private setCache(state: CacheState): void {
    const g = this.gauges;
    g.cacheEntries.set({ tier: 'memory' }, state.memory.entries);
    g.cacheBytes.set({ tier: 'memory' }, state.memory.bytes);
    const shared = state.redis;
    if (!shared) return;
    g.cacheEntries.set({ tier: 'redis' }, shared.keys);
    // INFO fields can be missing (a managed Redis that hides them): NaN, and the gauge is left alone.
    if (Number.isFinite(shared.bytes)) g.cacheBytes.set({ tier: 'redis' }, shared.bytes);
    if (Number.isFinite(shared.evictedKeys)) this.followRedisEvictions(shared.evictedKeys);
  }

  /**
   * Redis counts its own evictions (maxmemory policy); the counter follows its total. The first
   * reading is a baseline; a Redis restart resets its counter (a negative delta adds nothing).
   */
  private followRedisEvictions(total: number): void {
    const delta = this.redisEvictionsSeen === undefined ? 0 : total - this.redisEvictionsSeen;
    this.gauges.cacheEvictions.inc({ tier: 'redis' }, Math.max(0, delta));
    this.redisEvictionsSeen = total;
  }
}
