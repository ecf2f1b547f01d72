/**
 * The upstream client: one undici Pool per upstream, with connect, headers and body
 * timeouts and a body size cap. The only module that imports undici. A request goes to the
 * first upstream that is not cooling down after failures; a transport failure moves on
 * to the next one. Statuses (also 5xx) are returned, not thrown: callers decide.
 */
import { Pool } from 'undici';
import { classifyTransportError, UpstreamError } from './errors.js';

export interface UpstreamSettings {
  urls: string[];
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  maxBodyBytes: number;
  connectionsPerUpstream: number;
  /** Consecutive transport failures after which an upstream is skipped for `cooldownMs`. */
  failureThreshold: number;
  cooldownMs: number;
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
}

export interface UpstreamRequest {
  path: string;
  /** Route id, for metrics labels only. */
  route: string;
  headers?: Record<string, string>;
}

interface Upstream {
  origin: string;
  pool: Pool;
  consecutiveFailures: number;
  coolUntil: number;
}

function flattenHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

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
      return { origin, pool, consecutiveFailures: 0, coolUntil: 0 };
    });
  }

  /** Origins in the order a request would try them now. */
  candidates(): string[] {
    return this.ordered().map((u) => u.origin);
  }

  /** The first upstream a passthrough request should use. */
  preferredOrigin(): string {
    const first = this.ordered()[0] ?? this.upstreams[0];
    if (!first) throw new Error('no upstream configured');
    return first.origin;
  }

  isHealthy(origin: string): boolean {
    const upstream = this.upstreams.find((u) => u.origin === origin);
    return upstream !== undefined && upstream.coolUntil <= this.now();
  }

  async get(request: UpstreamRequest): Promise<UpstreamResponse> {
    let lastError: UpstreamError | undefined;
    for (const upstream of this.ordered()) {
      try {
        return await this.send(upstream, request);
      } catch (error) {
        lastError = classifyTransportError(error, upstream.origin);
      }
    }
    throw lastError ?? new UpstreamError('connect', 'none', 'no upstream configured');
  }

  /** GET against one named upstream (the chain-tip poll checks each upstream). */
  async getFrom(origin: string, request: UpstreamRequest): Promise<UpstreamResponse> {
    const upstream = this.upstreams.find((u) => u.origin === origin);
    if (!upstream) throw new UpstreamError('connect', origin, `unknown upstream ${origin}`);
    try {
      return await this.send(upstream, request);
    } catch (error) {
      throw classifyTransportError(error, origin);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.upstreams.map((u) => u.pool.close().catch(() => u.pool.destroy())));
  }

  /** Healthy upstreams first, in configured order; cooling ones last, so something is always tried. */
  private ordered(): Upstream[] {
    const now = this.now();
    return [...this.upstreams.filter((u) => u.coolUntil <= now), ...this.upstreams.filter((u) => u.coolUntil > now)];
  }

  private async send(upstream: Upstream, request: UpstreamRequest): Promise<UpstreamResponse> {
    const started = process.hrtime.bigint();
    const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
    try {
      const response = await upstream.pool.request({
        method: 'GET',
        path: request.path,
        headers: { accept: 'application/json', ...request.headers },
      });
      const body = Buffer.from(await response.body.arrayBuffer());
      this.recordSuccess(upstream);
      this.observer.onResponse?.(upstream.origin, request.route, response.statusCode, seconds());
      return { upstream: upstream.origin, status: response.statusCode, headers: flattenHeaders(response.headers), body };
    } catch (error) {
      const failure = classifyTransportError(error, upstream.origin);
      this.recordFailure(upstream);
      this.observer.onError?.(upstream.origin, request.route, failure, seconds());
      throw failure;
    }
  }

  private recordSuccess(upstream: Upstream): void {
    upstream.consecutiveFailures = 0;
    upstream.coolUntil = 0;
  }

  private recordFailure(upstream: Upstream): void {
    upstream.consecutiveFailures += 1;
    if (upstream.consecutiveFailures >= this.settings.failureThreshold) {
      upstream.coolUntil = this.now() + this.settings.cooldownMs;
    }
  }
}
