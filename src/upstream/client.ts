/**
 * The upstream client: one undici Pool per upstream, with connect, headers and body
 * timeouts, a body size cap and a bounded request queue. Which upstream to try, and what an
 * attempt says about its health, is the health owner's business (health.ts): the client
 * asks it and reports to it. The only module that imports undici.
 *
 * The retry budget: a client request costs the upstreams at most two requests
 * (`upstream.maxAttempts` <= 2, revalidation included: it is the same request). An attempt
 * that fails (transport failure, timeout, 429, 502/503/504, a body that is not what it
 * claims, an unsolicited 304) is tried once more, on another usable upstream when there is
 * one, else on the same one, unless it rate-limited the request. An answer, including a
 * handler's refusal of this one input (a JSON 4xx or 500), is returned at once and not retried.
 * When every attempt failed, the last gateway 5xx answer is returned if there was one
 * (passed on, unless a stale copy can be served), else the failure is thrown.
 */
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import type { Clock } from '../clock.js';
import { abortAt } from './abort-at.js';
import { judgeAnswer } from './answer-verdict.js';
import { classifyTransportError, UpstreamError } from './errors.js';
import type { HealthStatus, UpstreamHealth } from './health.js';
import { upstreamHeadersFor, type OutgoingHeaderSettings } from './outgoing-headers.js';
import { retryAfterMs } from './retry-after.js';
import { QueueFullError, Semaphore } from './semaphore.js';

export interface UpstreamSettings extends OutgoingHeaderSettings {
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
  /** A 429 without a usable Retry-After leaves the upstream alone this long. */
  retryAfterDefaultMs: number;
  /** The longest one 429 leaves an upstream alone. */
  retryAfterMaxMs: number;
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
  /**
   * Throws or rejects (an UpstreamError 'invalid') for a body that is not what it claims: retried
   * like a failure. Called for answers and refusals, never for failures. May wait (a check of the
   * chain the answer names) within the request's deadline.
   */
  validate?: (response: UpstreamResponse) => void | Promise<void>;
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
  /** What every request to this upstream carries: Accept, then the operator's headers (outgoing-headers.ts); decided once. */
  headers: Record<string, string>;
}

/** One request sent: its answer, and the failure that answer is, when it is one. */
interface Attempt {
  response: UpstreamResponse;
  failure?: UpstreamError;
}

function flattenHeaders(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name in raw) {
    const value = raw[name];
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return headers;
}

/** The retry budget's ceiling, whatever `maxAttempts` says (the schema refuses more, too). */
const MAX_SENDS_PER_REQUEST = 2;

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
      const headers = { accept: 'application/json', ...upstreamHeadersFor(origin, settings) };
      this.upstreams.set(origin, { origin, pool, gate: new Semaphore(settings.maxConcurrent, settings.maxQueue), headers });
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

  /** An idempotent GET with failover and at most one retry (see the module comment). */
  async get(request: UpstreamRequest): Promise<UpstreamResponse> {
    const deadline = this.clock() + this.settings.requestDeadlineMs;
    const tried = new Set<string>();
    let lastError: UpstreamError | undefined;
    let lastServerError: UpstreamResponse | undefined;
    for (let attempt = 0; attempt < Math.min(this.settings.maxAttempts, MAX_SENDS_PER_REQUEST); attempt++) {
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
        const { response, failure } = await this.send(upstream, request, deadline);
        if (!failure) return response;
        lastError = failure;
        if (failure.kind === '5xx') lastServerError = response;
      } catch (error) {
        lastError = classifyTransportError(error, upstream.origin);
      }
    }
    if (lastServerError) return lastServerError;
    throw lastError ?? this.noUsableUpstream();
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
    // Polls respect a Retry-After too: they draw on the same quota, and a poll sent into the
    // limit would most likely be refused and prolong it. The tip stays where it was meanwhile.
    const limitedMs = this.health.rateLimitRemaining(origin);
    if (limitedMs > 0) throw new UpstreamError('rate_limited', origin, `${origin} is rate limited for ${limitedMs} ms more`, { retryAfterMs: limitedMs });
    const { response } = await this.send(upstream, request, this.clock() + this.settings.requestDeadlineMs, { healthCheck: true });
    return response;
  }

  async close(): Promise<void> {
    await Promise.all([...this.upstreams.values()].map((u) => u.pool.close().catch(() => u.pool.destroy())));
  }

  /** Nothing could be sent: every upstream is rate limited, or every breaker is open. */
  private noUsableUpstream(): UpstreamError {
    const limitedMs = this.health.rateLimitedForAll();
    if (limitedMs !== undefined) {
      return new UpstreamError('rate_limited', 'none', `every usable upstream is rate limited for ${limitedMs} ms more`, { retryAfterMs: limitedMs });
    }
    return new UpstreamError('connect', 'none', 'no usable upstream (every circuit breaker is open)');
  }

  /**
   * One request to one upstream, and what its answer says about that upstream (health and
   * telemetry are told here). Throws for transport failures and bodies `validate` refuses;
   * returns a failure that is an HTTP answer (429, a gateway 5xx, ...) alongside that answer.
   * For the tip poll (`healthCheck`) a refusal is a failure too: the poll asks for nothing an
   * upstream in working order refuses.
   */
  private async send(
    upstream: Upstream,
    request: UpstreamRequest,
    deadline: number,
    options: { healthCheck?: boolean } = {},
  ): Promise<Attempt> {
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
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    const deadlineAbort = abortAt(deadline - this.clock());
    try {
      const response = await upstream.pool.request({
        method: 'GET',
        path: request.path,
        // The request's own headers (If-None-Match) last: the operator's cannot name them.
        headers: request.headers ? { ...upstream.headers, ...request.headers } : upstream.headers,
        signal: deadlineAbort.signal,
      });
      const body = Buffer.from(await response.body.arrayBuffer());
      const answer = { upstream: upstream.origin, status: response.statusCode, headers: flattenHeaders(response.headers), body };
      const verdict = judgeAnswer({ ...answer, conditional: request.headers?.['if-none-match'] !== undefined });
      if (verdict.kind === 'failure') {
        this.recordFailedAnswer(upstream.origin, request, verdict.error, answer, seconds());
        return { response: answer, failure: this.withRetryAfter(verdict.error, answer) };
      }
      await request.validate?.(answer);
      this.telemetry.upstreamAnswered(upstream.origin, request.route, response.statusCode, seconds());
      if (verdict.kind === 'answer') this.health.recordSuccess(upstream.origin, options);
      else if (options.healthCheck) this.health.recordFailure(upstream.origin);
      else this.health.release(upstream.origin);
      return { response: answer };
    } catch (error) {
      const failure = classifyTransportError(error, upstream.origin);
      this.health.recordFailure(upstream.origin);
      this.telemetry.upstreamFailed(upstream.origin, request.route, failure);
      throw failure;
    } finally {
      deadlineAbort.cancel();
      release();
    }
  }

  /** An HTTP answer that is a failure of the upstream: counted, and a 429's pause started. */
  private recordFailedAnswer(origin: string, request: UpstreamRequest, failure: UpstreamError, answer: UpstreamResponse, seconds: number): void {
    if (failure.kind === 'rate_limited') {
      this.health.rateLimited(origin, retryAfterMs(answer.headers['retry-after'], this.clock(), this.retryAfterSettings()));
    }
    this.health.recordFailure(origin);
    this.telemetry.upstreamAnswered(origin, request.route, answer.status, seconds, failure);
  }

  private withRetryAfter(failure: UpstreamError, answer: UpstreamResponse): UpstreamError {
    if (failure.kind !== 'rate_limited') return failure;
    return new UpstreamError(failure.kind, failure.upstream, failure.message, { retryAfterMs: this.health.rateLimitRemaining(answer.upstream) });
  }

  private retryAfterSettings() {
    return { defaultMs: this.settings.retryAfterDefaultMs, maxMs: this.settings.retryAfterMaxMs };
  }
}
