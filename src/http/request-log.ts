/**
 * One served-request event per request (telemetry writes its log line and metrics samples),
 * when the response finishes. Handlers fill the request's RequestRecord; ids come from
 * X-Request-Id when sent.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { LimitGrant } from '../limits/rate-limiter.js';

export interface RequestRecord {
  /** The client's X-Request-Id, or a new one: it goes upstream with the request too. */
  requestId: string;
  /** Headers every answer to this request carries (the request id), for writeHead. */
  headers: string[];
  route?: string;
  status?: number;
  cache?: string;
  cls?: string;
  upstreamSeconds?: number;
  upstreamError?: string;
  /** With rate limiting on: what the request was granted (its ratelimit-* headers are in `headers`). */
  limit?: LimitGrant;
}

// Echoed ids are bounded so a client cannot make log lines arbitrarily large.
const MAX_REQUEST_ID_LENGTH = 128;

/** The client's X-Request-Id when it sent a usable one, else a new id. */
export function requestIdOf(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && incoming.length > 0 && incoming.length <= MAX_REQUEST_ID_LENGTH ? incoming : randomUUID();
}

/**
 * Starts observing one request; the returned record is read when the response finishes.
 * The request id goes into `record.headers` for the writer to include in its writeHead
 * (res.setHeader would push every later writeHead onto Node's slower merging path).
 */
export function observeRequest(
  req: IncomingMessage,
  res: ServerResponse,
  sinks: { telemetry: Telemetry },
  limit?: LimitGrant,
): RequestRecord {
  const started = process.hrtime.bigint();
  const requestId = requestIdOf(req);
  const observed: RequestRecord = limit
    ? { requestId, headers: ['x-request-id', requestId, ...limit.headers], limit }
    : { requestId, headers: ['x-request-id', requestId] };
  res.once('finish', () => {
    if (limit) sinks.telemetry.rateLimitDecided(limit.tier, limit.result);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    sinks.telemetry.requestServed({
      requestId,
      method: req.method ?? 'GET',
      route: observed.route ?? 'passthrough',
      status: observed.status ?? res.statusCode,
      cache: observed.cache ?? 'NONE',
      cls: observed.cls,
      seconds,
      upstreamSeconds: observed.upstreamSeconds,
      upstreamError: observed.upstreamError,
    });
  });
  return observed;
}
