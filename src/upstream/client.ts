/**
 * The upstream client: one undici Pool per upstream, with connect, headers and body
 * timeouts, a body size cap, a circuit breaker, a bounded request queue, and lag awareness.
 * The only module that imports undici. `get` retries an idempotent request on the next
 * usable upstream with backoff, within a total deadline. Statuses are returned, not
 * thrown (a 5xx counts as a failure for retries and the breaker); when every attempt
 * answered 5xx the last such answer is returned.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { CircuitBreaker, type BreakerState } from './breaker.js';
import { classifyTransportError, UpstreamError } from './errors.js';
import { QueueFullError, Semaphore } from './semaphore.js';

export interface UpstreamSettings {
  urls: string[];
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  maxBodyBytes: number;
  connectionsPerUpstream: number;
  failureThreshold: number;
  cooldownMs: number;
  maxAttempts: number;
  retryBackoffMs: number;
  requestDeadlineMs: number;
  maxConcurrent: number;
  maxQueue: number;
  maxLagBlocks: number;
}

export interface UpstreamResponse {
  upstream: string;
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface UpstreamObserver {
  onResponse?(upstream: string, route: string, status: number, seconds: number): void;
  onError?(upstream: string, route: string, error: UpstreamError, seconds: number): void;
  onRetry?(route: string, upstream: string, reason: string): void;
  onBreaker?(upstream: string, state: BreakerState): void;
  onLag?(upstream: string, lagging: boolean, lagBlocks: number): void;
}

export interface UpstreamRequest {
  path: string;
  /** Route id, for metrics labels and logs only. */
  route: string;
  headers?: Record<string, string>;
  /** Throws (an UpstreamError 'invalid') for a body that is not what it claims: retried like a failure. */
  validate?: (response: UpstreamResponse) => void;
}

export interface UpstreamStatus {
  origin: string;
  breaker: BreakerState;
  tipHeight?: number;
  lagBlocks?: number;
  usable: boolean;
  inFlight: number;
  queued: number;
}

interface Upstream {
  origin: string;
  pool: Pool;
  breaker: CircuitBreaker;
  gate: Semaphore;
  tipHeight?: number;
  lagging: boolean;
}

function flattenHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/** Exponential backoff with ±50% jitter, so retries from many requests do not line up. */
const backoffMs = (base: number, retry: number): number => base * 2 ** (retry - 1) * (0.5 + Math.random());

export class UpstreamClient {
  private readonly upstreams: Upstream[];

  constructor(
    private readonly settings: UpstreamSettings,
    private readonly observer: UpstreamObserver = {},
    private readonly now: () => number = Date.now,
  ) {
    this.upstreams = settings.urls.map((url) => {
      const origin = new URL(url).origin;
      const pool = new Pool(origin, {
        connections: settings.connectionsPerUpstream,
        connectTimeout: settings.connectTimeoutMs,
        headersTimeout: settings.headersTimeoutMs,
        bodyTimeout: settings.bodyTimeoutMs,
        maxResponseSize: settings.maxBodyBytes,
      });
      return {
        origin,
        pool,
        breaker: new CircuitBreaker(settings),
        gate: new Semaphore(settings.maxConcurrent, settings.maxQueue),
        lagging: false,
      };
    });
  }

  get origins(): string[] {
    return this.upstreams.map((u) => u.origin);
  }

  /** Per-upstream health, for /ready, metrics and logs. */
  status(): UpstreamStatus[] {
    const now = this.now();
    return this.upstreams.map((u) => ({
      origin: u.origin,
      breaker: u.breaker.state(now),
      tipHeight: u.tipHeight,
      lagBlocks: this.lagOf(u),
      usable: u.breaker.state(now) !== 'open' && !u.lagging,
      inFlight: u.gate.inFlight,
      queued: u.gate.queued,
    }));
  }

  /** The upstream a passthrough request should use: the first usable one, else the first. */
  preferredOrigin(): string {
    const now = this.now();
    const usable = this.upstreams.find((u) => u.breaker.state(now) !== 'open' && !u.lagging) ?? this.upstreams[0];
    if (!usable) throw new Error('no upstream configured');
    return usable.origin;
  }

  /** The tracker reports each upstream's tip height; an upstream too far behind is not read from. */
  reportTip(origin: string, height: number): void {
    const upstream = this.upstreams.find((u) => u.origin === origin);
    if (!upstream) return;
    upstream.tipHeight = height;
    for (const u of this.upstreams) {
      const lag = this.lagOf(u);
      const lagging = lag !== undefined && lag > this.settings.maxLagBlocks;
      if (lagging !== u.lagging) {
        u.lagging = lagging;
        this.observer.onLag?.(u.origin, lagging, lag ?? 0);
      }
    }
  }

  /** An idempotent GET with failover and retries (see the module comment). */
  async get(request: UpstreamRequest): Promise<UpstreamResponse> {
    const deadline = this.now() + this.settings.requestDeadlineMs;
    const tried = new Set<Upstream>();
    let lastError: UpstreamError | undefined;
    let lastServerError: UpstreamResponse | undefined;
    for (let attempt = 0; attempt < this.settings.maxAttempts; attempt++) {
      const upstream = this.pick(tried);
      if (!upstream) break;
      if (attempt > 0) {
        const pause = backoffMs(this.settings.retryBackoffMs, attempt);
        if (this.now() + pause >= deadline) {
          upstream.breaker.release();
          break;
        }
        this.observer.onRetry?.(request.route, upstream.origin, lastError?.kind ?? '5xx');
        await sleep(pause);
      }
      tried.add(upstream);
      try {
        const response = await this.send(upstream, request, deadline);
        if (response.status < 500) return response;
        lastServerError = response;
      } catch (error) {
        lastError = classifyTransportError(error, upstream.origin);
      }
    }
    if (lastServerError) return lastServerError;
    throw lastError ?? new UpstreamError('connect', 'none', 'no usable upstream (every circuit breaker is open)');
  }

  /**
   * One attempt against one named upstream: the chain-tip poll, which is also the health
   * check. It skips the request queue (the tip must move even under load), and while a
   * breaker is open its success does not close it: only after the cool-down does a good
   * poll count as the half-open trial.
   */
  async getFrom(origin: string, request: UpstreamRequest): Promise<UpstreamResponse> {
    const upstream = this.upstreams.find((u) => u.origin === origin);
    if (!upstream) throw new UpstreamError('connect', origin, `unknown upstream ${origin}`);
    return this.send(upstream, request, this.now() + this.settings.requestDeadlineMs, { healthCheck: true });
  }

  async close(): Promise<void> {
    await Promise.all(this.upstreams.map((u) => u.pool.close().catch(() => u.pool.destroy())));
  }

  private lagOf(upstream: Upstream): number | undefined {
    if (upstream.tipHeight === undefined) return undefined;
    const now = this.now();
    // Best tip among upstreams that are not failing: a dead leader must not make the rest "lag".
    const heights = this.upstreams
      .filter((u) => u.breaker.state(now) !== 'open' && u.tipHeight !== undefined)
      .map((u) => u.tipHeight as number);
    return heights.length === 0 ? 0 : Math.max(...heights) - upstream.tipHeight;
  }

  /**
   * The usable upstream to try next: ones not tried yet first, then those at the best tip
   * (an answer from one a block behind would be stored as current), then configured order.
   * Lagging upstreams only when nothing else is left: old data beats none.
   */
  private pick(tried: Set<Upstream>): Upstream | undefined {
    const now = this.now();
    const rank = (u: Upstream): number => (tried.has(u) ? 2 : 0) + (u.lagging ? 4 : 0) + ((this.lagOf(u) ?? 0) > 0 ? 1 : 0);
    const order = this.upstreams.map((u, index) => ({ u, index })).sort((a, b) => rank(a.u) - rank(b.u) || a.index - b.index);
    for (const { u } of order) {
      if (u.breaker.tryAcquire(now)) return u;
    }
    return undefined;
  }

  private async send(
    upstream: Upstream,
    request: UpstreamRequest,
    deadline: number,
    options: { healthCheck?: boolean } = {},
  ): Promise<UpstreamResponse> {
    let release: () => void = () => undefined;
    if (!options.healthCheck) {
      try {
        release = await upstream.gate.acquire(deadline - this.now());
      } catch (error) {
        upstream.breaker.release(); // a full queue says nothing about the upstream's health
        if (error instanceof QueueFullError) throw new UpstreamError('overloaded', upstream.origin, `${error.message} (${upstream.origin})`);
        throw error;
      }
    }
    const started = process.hrtime.bigint();
    const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
    try {
      const response = await upstream.pool.request({
        method: 'GET',
        path: request.path,
        headers: { accept: 'application/json', ...request.headers },
        signal: AbortSignal.timeout(Math.max(1, deadline - this.now())),
      });
      const body = Buffer.from(await response.body.arrayBuffer());
      const answer = { upstream: upstream.origin, status: response.statusCode, headers: flattenHeaders(response.headers), body };
      request.validate?.(answer);
      this.observer.onResponse?.(upstream.origin, request.route, response.statusCode, seconds());
      if (response.statusCode >= 500) this.recordFailure(upstream);
      else if (!options.healthCheck || upstream.breaker.state(this.now()) !== 'open') this.recordSuccess(upstream);
      return answer;
    } catch (error) {
      const failure = classifyTransportError(error, upstream.origin);
      this.recordFailure(upstream);
      this.observer.onError?.(upstream.origin, request.route, failure, seconds());
      throw failure;
    } finally {
      release();
    }
  }

  private recordSuccess(upstream: Upstream): void {
    if (upstream.breaker.onSuccess()) this.observer.onBreaker?.(upstream.origin, 'closed');
  }

  private recordFailure(upstream: Upstream): void {
    if (upstream.breaker.onFailure(this.now())) this.observer.onBreaker?.(upstream.origin, 'open');
  }
}
