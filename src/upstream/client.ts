/**
 * The upstream client: one undici Pool per upstream, with connect, headers and body
 * timeouts, a body size cap and a bounded request queue. Which upstream to try, and what an
 * attempt says about its health, is the health owner's business (health.ts): the client
 * asks it and reports to it. The only module that imports undici.
 *
 * A read is an `UpstreamAsk`: a GET, or a POST read (a read-only contract call, a map entry, a
 * fee estimate: reads the upstream answers without changing anything) with its body and
 * content-type. Both are retried and failed over alike, and carry the operator's headers.
 *
 * The retry budget: a client request costs the upstreams at most two requests
 * (`upstream.maxAttempts` <= 2, revalidation included: it is the same request). An attempt
 * that fails (transport failure, timeout, 429, 502/503/504, a body that is not what it
 * claims, an unsolicited 304) is tried once more, on another usable upstream when there is
 * one, else on the same one, unless it rate-limited the request. An answer, including a
 * handler's refusal of this one input (a JSON 4xx or 500), is yielded to the caller, who
 * judges it (`attempts`): one it rejects as invalid for what it asked (a malformed body, another
 * resource) is a failure of that upstream, tried once
 * more like the others; any other is the answer, not retried. When every attempt failed, the
 * last gateway 5xx answer is yielded if there was one (passed on, unless a stale copy can be
 * served), else the failure is thrown. The client never calls back into the cache.
 */
import { currentOwnPurpose, type OwnPurpose } from './own-purpose.js';
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import type { Clock } from '../clock.js';
import { abortAt } from './abort-at.js';
import { judgeAnswer, type AnswerVerdict } from './answer-verdict.js';
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

/** A tip poll or chain check sent to one named upstream (getFrom): a plain GET. */
export interface UpstreamRequest {
  path: string;
  /** Route id, for metrics labels and logs only. */
  route: string;
  headers?: Record<string, string>;
  /** Why the proxy sends it (own-purpose.ts): counted in stacks_proxy_own_upstream_requests_total. */
  purpose?: OwnPurpose;
}

/**
 * The one upstream request a read makes, as the upstream reads it. POST reads (a read-only
 * contract call, a map entry, a fee estimate) are reads: retried and failed over like a GET.
 */
export interface UpstreamAsk {
  method: 'GET' | 'POST';
  /** Path and query, as forwarded. */
  path: string;
  /** POST reads only: the body exactly as forwarded. */
  body?: Buffer;
  /** Request headers the upstream reads for this request (a POST body's content-type; If-None-Match; X-Request-Id). */
  headers?: Readonly<Record<string, string>>;
}

/**
 * One upstream's answer to an ask, for the caller to judge (attempts()). The caller that finds
 * it invalid for what it asked (a malformed body, an answer about another resource) rejects it: that counts against the upstream, and the ask goes on to the
 * next attempt. Anything else stands as the answer once the caller moves on or stops.
 */
export interface UpstreamAttempt {
  readonly response: UpstreamResponse;
  reject(error: UpstreamError): void;
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

/** One request sent: its answer, what the answer says, and the failure it is, when it is one. */
interface Sent {
  response: UpstreamResponse;
  verdict: AnswerVerdict['kind'];
  seconds: number;
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

  /**
   * The attempts at one ask, with failover and at most one retry (see the module comment). Each
   * answer is yielded for the caller to judge: one it rejects counts against its upstream and
   * the ask goes on to the next attempt (another upstream when there is one); one it does not
   * reject is the answer, and ends the attempts. Failures (transport, 429, gateway 5xx) are
   * retried here and never yielded, except that when every attempt failed the last gateway 5xx
   * answer is yielded as the last resort (to pass on, unless a stale copy can be served).
   * Throws the last failure when there is nothing to yield.
   *
   * The caller asks, admits and decides; the client never calls back into the cache.
   */
  async *attempts(ask: UpstreamAsk, route: string): AsyncGenerator<UpstreamAttempt, void, undefined> {
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
        this.telemetry.upstreamRetried(upstream.origin, route, lastError?.kind ?? '5xx');
        await sleep(pause);
      }
      tried.add(upstream.origin);
      let sent: Sent;
      try {
        sent = await this.send(upstream, ask, route, deadline);
      } catch (error) {
        lastError = classifyTransportError(error, upstream.origin);
        continue;
      }
      if (sent.failure) {
        lastError = sent.failure;
        if (sent.failure.kind === '5xx') lastServerError = sent.response;
        continue;
      }
      // The caller's verdict is awaited before the upstream's health is told how it answered:
      // an answer the caller rejects (invalid for what was asked) is that upstream's failure.
      let rejection: UpstreamError | undefined;
      let judged = false;
      try {
        yield { response: sent.response, reject: (error) => void (judged ? undefined : (rejection ??= error)) };
      } finally {
        judged = true;
        if (rejection) this.rejected(upstream.origin, route, rejection);
        else this.answered(upstream.origin, route, sent);
      }
      if (!rejection) return;
      lastError = rejection;
    }
    if (lastServerError) {
      yield { response: lastServerError, reject: () => undefined };
      return;
    }
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
    const ask: UpstreamAsk = { method: 'GET', path: request.path, headers: request.headers };
    const sent = await this.send(upstream, ask, request.route, this.clock() + this.settings.requestDeadlineMs, { healthCheck: true, purpose: request.purpose });
    if (!sent.failure) this.answered(origin, request.route, sent, { healthCheck: true });
    return sent.response;
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
   * One request to one upstream. Throws for transport failures (health and telemetry told
   * here); returns an HTTP answer that is a failure of the upstream (429, a gateway 5xx, ...)
   * with that failure, told here too. An answer or a refusal is told by the caller once it is
   * judged (answered/rejected). For the tip poll (`healthCheck`) a refusal is a failure too:
   * the poll asks for nothing an upstream in working order refuses.
   */
  private async send(
    upstream: Upstream,
    ask: UpstreamAsk,
    route: string,
    deadline: number,
    options: { healthCheck?: boolean; purpose?: OwnPurpose | undefined } = {},
  ): Promise<Sent> {
    // The proxy's own request (named, or the own work it runs in): counted once per request sent.
    const purpose = options.purpose ?? currentOwnPurpose();
    if (purpose !== undefined) this.telemetry.ownUpstreamRequest(purpose);
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
    const deadlineAbort = abortAt(deadline - this.clock());
    try {
      const response = await upstream.pool.request({
        method: ask.method,
        path: ask.path,
        // The ask's own headers (If-None-Match, a POST's content-type) last: the operator's cannot name them.
        headers: ask.headers ? { ...upstream.headers, ...ask.headers } : upstream.headers,
        body: ask.body,
        signal: deadlineAbort.signal,
      });
      const body = Buffer.from(await response.body.arrayBuffer());
      const seconds = (performance.now() - started) / 1000;
      const answer = { upstream: upstream.origin, status: response.statusCode, headers: flattenHeaders(response.headers), body };
      const verdict = judgeAnswer({ ...answer, conditional: ask.headers?.['if-none-match'] !== undefined, path: ask.path });
      if (verdict.kind === 'failure') {
        this.recordFailedAnswer(upstream.origin, route, verdict.error, answer, seconds);
        return { response: answer, verdict: verdict.kind, seconds, failure: this.withRetryAfter(verdict.error, answer) };
      }
      return { response: answer, verdict: verdict.kind, seconds };
    } catch (error) {
      const failure = classifyTransportError(error, upstream.origin);
      this.health.recordFailure(upstream.origin, { kind: failure.kind, route, message: failure.message });
      this.telemetry.upstreamFailed(upstream.origin, route, failure);
      throw failure;
    } finally {
      deadlineAbort.cancel();
      release();
    }
  }

  /** An answer (or a handler's refusal) that stands: counted, and the upstream's health told. */
  private answered(origin: string, route: string, sent: Sent, options: { healthCheck?: boolean } = {}): void {
    this.telemetry.upstreamAnswered(origin, route, sent.response.status, sent.seconds);
    if (sent.verdict === 'answer') this.health.recordSuccess(origin, options);
    // A refused poll is an answer that is not what it should be: `invalid`, as the tracker names it.
    else if (options.healthCheck)
      this.health.recordFailure(origin, { kind: 'invalid', route, message: `${origin} answered ${sent.response.status} to ${route}` });
    else this.health.release(origin);
  }

  /** An answer the caller found invalid for what it asked: a failure of that upstream. */
  private rejected(origin: string, route: string, error: UpstreamError): void {
    this.health.recordFailure(origin, { kind: error.kind, route, message: error.message });
    this.telemetry.upstreamFailed(origin, route, error);
  }

  /** An HTTP answer that is a failure of the upstream: counted, and a 429's pause started. */
  private recordFailedAnswer(origin: string, route: string, failure: UpstreamError, answer: UpstreamResponse, seconds: number): void {
    if (failure.kind === 'rate_limited') {
      this.health.rateLimited(origin, retryAfterMs(answer.headers['retry-after'], this.clock(), this.retryAfterSettings()));
    }
    this.health.recordFailure(origin, { kind: failure.kind, route, message: failure.message });
    this.telemetry.upstreamAnswered(origin, route, answer.status, seconds, failure);
  }

  private withRetryAfter(failure: UpstreamError, answer: UpstreamResponse): UpstreamError {
    if (failure.kind !== 'rate_limited') return failure;
    return new UpstreamError(failure.kind, failure.upstream, failure.message, { retryAfterMs: this.health.rateLimitRemaining(answer.upstream) });
  }

  private retryAfterSettings() {
    return { defaultMs: this.settings.retryAfterDefaultMs, maxMs: this.settings.retryAfterMaxMs };
  }
}
