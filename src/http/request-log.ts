/**
 * One served-request event per request (telemetry writes its log line and metrics samples).
 * Handlers fill the request's RequestRecord and say when they have answered: an answer written
 * synchronously (a hit, a refusal, a validation error) reports at once, so the hit path adds no
 * `finish` listener, closure or hrtime BigInt; an answer streamed by someone else (the
 * passthrough) reports on the response's `finish`. Ids come from X-Request-Id when sent.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { LimitGrant } from '../limits/rate-limiter.js';
import { joinedHeader } from './raw-header.js';

// Echoed ids are bounded so a client cannot make log lines arbitrarily large.
const MAX_REQUEST_ID_LENGTH = 128;

/**
 * New ids are a per-process random prefix plus a counter, in the 8-4-4-4-12 shape of a version 4
 * UUID: unique across processes and restarts like randomUUID(), without asking the CSPRNG on
 * every request. The prefix carries the version and variant bits; the last 12 hex digits count
 * (2^48 requests before they wrap, decades at any rate a process can serve).
 */
function idPrefix(): string {
  const bytes = randomBytes(10);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40; // version 4
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80; // RFC 9562 variant
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-`;
}
const ID_PREFIX = idPrefix();
let idCounter = 0;

export function newRequestId(): string {
  idCounter = (idCounter + 1) % 0x1000000000000;
  return ID_PREFIX + idCounter.toString(16).padStart(12, '0');
}

/** The client's X-Request-Id when it sent a usable one, else a new id. */
export function requestIdOf(req: IncomingMessage): string {
  const incoming = joinedHeader(req, 'x-request-id');
  return incoming !== undefined && incoming.length > 0 && incoming.length <= MAX_REQUEST_ID_LENGTH ? incoming : newRequestId();
}

/**
 * Told of each read answered 200 from a tip-class (or tip-keyed) entry, with its request: what
 * the warm-up of the next block refreshes (src/live/hot-urls.ts decides what it keeps).
 */
export type ServedReadSink = (req: IncomingMessage) => void;

export interface RequestSinks {
  telemetry: Telemetry;
  servedRead?: ServedReadSink;
}

/** What a handler learns about one request while answering it; reported once. */
export class RequestRecord {
  /** The client's X-Request-Id, or a new one: it goes upstream with the request too. */
  readonly requestId: string;
  /**
   * Headers every answer to this request carries (the request id, ratelimit-*), for writeHead
   * (res.setHeader would push every later writeHead onto Node's slower merging path).
   */
  readonly headers: string[];
  route: string | undefined = undefined;
  status: number | undefined = undefined;
  cache: string | undefined = undefined;
  cls: string | undefined = undefined;
  upstreamSeconds: number | undefined = undefined;
  upstreamError: string | undefined = undefined;
  /** A surface read keyed by the tip (its entry is the tip's whatever its class). */
  tipKeyed = false;
  /** Answered with a refusal before any cache or upstream work (a refused target, 401, 429): sampled in the access log. */
  refused = false;
  private reported = false;
  private readonly started = performance.now();

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly sinks: RequestSinks,
    /** With rate limiting on: what the request was granted (its ratelimit-* headers are in `headers`). */
    readonly limit?: LimitGrant,
  ) {
    this.requestId = requestIdOf(req);
    this.headers = limit ? ['x-request-id', this.requestId, ...limit.headers] : ['x-request-id', this.requestId];
  }

  /** The handler has written its answer (`status`); reports the request. */
  answered(status: number): void {
    this.status = status;
    this.report();
  }

  /** Someone else streams the answer: report when the response finishes. */
  reportOnFinish(): void {
    this.res.once('finish', () => this.report());
  }

  private report(): void {
    if (this.reported) return;
    this.reported = true;
    const { limit, sinks } = this;
    if (limit) sinks.telemetry.rateLimitDecided(limit.tier, limit.result);
    if (sinks.servedRead && this.status === 200 && (this.cls === 'tip' || (this.tipKeyed && this.cls !== undefined))) sinks.servedRead(this.req);
    sinks.telemetry.requestServed({
      requestId: this.requestId,
      method: this.req.method ?? 'GET',
      route: this.route ?? 'passthrough',
      status: this.status ?? this.res.statusCode,
      cache: this.cache ?? 'NONE',
      cls: this.cls,
      seconds: (performance.now() - this.started) / 1000,
      upstreamSeconds: this.upstreamSeconds,
      upstreamError: this.upstreamError,
      refused: this.refused,
    });
  }
}

/** Starts observing one request; the handler reports it with `answered` or `reportOnFinish`. */
export function observeRequest(req: IncomingMessage, res: ServerResponse, sinks: RequestSinks, limit?: LimitGrant): RequestRecord {
  return new RequestRecord(req, res, sinks, limit);
}
