/**
 * The upstream client: one undici Pool per upstream, with connect, headers and body
 * timeouts, a body size cap and a bounded request queue. Which upstream to try, and what an
 * attempt says about its health, is the health owner's business (health.ts): the client
 * asks it and reports to it. The only module that imports undici. `get` retries an idempotent request on the next
 * usable upstream with backoff, within a total deadline. Statuses are returned, not
 * thrown (a 5xx counts as a failure for retries and the breaker); when every attempt
 * answered 5xx the last such answer is returned.
 */
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import type { Clock } from '../clock.js';
import { classifyTransportError, UpstreamError } from './errors.js';
import type { HealthStatus, UpstreamHealth } from './health.js';
import { QueueFullError, Semaphore } from './semaphore.js';

export interface UpstreamSettings {
  urls: string[];
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  maxBodyBytes: number;
  connectionsPerUpstream: number;
  maxAttempts: number;
  retryBackoffMs: number;
  requestDeadlineMs: number;
  maxConcurrent: number;
  maxQueue: number;
}

export interface UpstreamResponse {
  upstream: string;
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface UpstreamRequest {
  path: string;
  /** Route id, for metrics labels and logs only. */
  route: string;
  headers?: Record<string, string>;
  /** Throws (an UpstreamError 'invalid') for a body that is not what it claims: retried like a failure. */
  validate?: (response: UpstreamResponse) => void;
}

/** Health (from the health owner) and load (from the client's queues) of one upstream. */
export interface UpstreamStatus extends HealthStatus {
  inFlight: number;
  queued: number;
}

interface Upstream {
  origin: string;
  pool: Pool;
  gate: Semaphore;
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
  private readonly upstreams = new Map<string, Upstream>();

  constructor(
    private readonly settings: UpstreamSettings,
    private readonly health: UpstreamHealth,
    private readonly clock: Clock,
    private readonly telemetry: Telemetry = noopTelemetry,
  ) {
    for (const url of settings.urls) {
      const origin = new URL(url).origin;
      const pool = new Pool(origin, {
        connections: settings.connectionsPerUpstream,
        connectTimeout: settings.connectTimeoutMs,
        headersTimeout: settings.headersTimeoutMs,
        bodyTimeout: settings.bodyTimeoutMs,
        maxResponseSize: settings.maxBodyBytes,
      });
      this.upstreams.set(origin, { origin, pool, gate: new Semaphore(settings.maxConcurrent, settings.maxQueue) });
    }
  }

  get origins(): string[] {
    return [...this.upstreams.keys()];
  }

  /** Per-upstream health and load, for /ready, metrics and logs. */
  status(): UpstreamStatus[] {
    return this.health.status().map((h) => {
      const gate = this.upstreams.get(h.origin)?.gate;
      return { ...h, inFlight: gate?.inFlight ?? 0, queued: gate?.queued ?? 0 };
    });
  }

  /** An idempotent GET with failover and retries (see the module comment). */
  async get(request: UpstreamRequest): Promise<UpstreamResponse> {
    const deadline = this.clock() + this.settings.requestDeadlineMs;
    const tried = new Set<string>();
    let lastError: UpstreamError | undefined;
    let lastServerError: UpstreamResponse | undefined;
    for (let attempt = 0; attempt < this.settings.maxAttempts; attempt++) {
      const origin = this.health.acquire(tried);
      const upstream = origin === undefined ? undefined : this.upstreams.get(origin);
      if (!upstream) break;
      if (attempt > 0) {
        const pause = backoffMs(this.settings.retryBackoffMs, attempt);
        if (this.clock() + pause >= deadline) {
          this.health.release(upstream.origin);
          break;
        }
        this.telemetry.upstreamRetried(upstream.origin, request.route, lastError?.kind ?? '5xx');
        await sleep(pause);
      }
      tried.add(upstream.origin);
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
    const upstream = this.upstreams.get(origin);
    if (!upstream) throw new UpstreamError('connect', origin, `unknown upstream ${origin}`);
    return this.send(upstream, request, this.clock() + this.settings.requestDeadlineMs, { healthCheck: true });
  }

  async close(): Promise<void> {
    await Promise.all([...this.upstreams.values()].map((u) => u.pool.close().catch(() => u.pool.destroy())));
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
        release = await upstream.gate.acquire(deadline - this.clock());
      } catch (error) {
        this.health.release(upstream.origin); // a full queue says nothing about the upstream's health
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
        signal: AbortSignal.timeout(Math.max(1, deadline - this.clock())),
      });
      const body = Buffer.from(await response.body.arrayBuffer());
      const answer = { upstream: upstream.origin, status: response.statusCode, headers: flattenHeaders(response.headers), body };
      request.validate?.(answer);
      this.telemetry.upstreamAnswered(upstream.origin, request.route, response.statusCode, seconds());
      if (response.statusCode >= 500) this.health.recordFailure(upstream.origin);
      else this.health.recordSuccess(upstream.origin, options);
      return answer;
    } catch (error) {
      const failure = classifyTransportError(error, upstream.origin);
      this.health.recordFailure(upstream.origin);
      this.telemetry.upstreamFailed(upstream.origin, request.route, failure);
      throw failure;
    } finally {
      release();
    }
  }
}
