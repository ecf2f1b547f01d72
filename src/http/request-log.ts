/**
 * One log line and one metrics sample per request, written when the response finishes.
 * Handlers fill the request's RequestRecord; ids come from X-Request-Id when sent.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';

export interface RequestRecord {
  /** Headers every answer to this request carries (the request id), for writeHead. */
  headers: string[];
  route?: string;
  status?: number;
  cache?: string;
  cls?: string;
  upstreamSeconds?: number;
  upstreamError?: string;
}

// Echoed ids are bounded so a client cannot make log lines arbitrarily large.
const MAX_REQUEST_ID_LENGTH = 128;

type RequestCounter = ReturnType<Metrics['httpRequests']['labels']>;
type DurationHistogram = ReturnType<Metrics['httpDuration']['labels']>;

/** Label children per label combination (bounded: route ids, methods, statuses, cache results). */
const children = new WeakMap<Metrics, { requests: Map<string, RequestCounter>; durations: Map<string, DurationHistogram> }>();

function childrenOf(metrics: Metrics) {
  let found = children.get(metrics);
  if (!found) {
    found = { requests: new Map(), durations: new Map() };
    children.set(metrics, found);
  }
  return found;
}

function countRequest(metrics: Metrics, route: string, method: string, status: string, cache: string, seconds: number): void {
  const cached = childrenOf(metrics);
  const requestKey = `${route} ${method} ${status} ${cache}`;
  let counter = cached.requests.get(requestKey);
  if (!counter) {
    counter = metrics.httpRequests.labels({ route, method, status, cache });
    cached.requests.set(requestKey, counter);
  }
  counter.inc();
  const durationKey = `${route} ${cache}`;
  let histogram = cached.durations.get(durationKey);
  if (!histogram) {
    histogram = metrics.httpDuration.labels({ route, cache });
    cached.durations.set(durationKey, histogram);
  }
  histogram.observe(seconds);
}

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
  sinks: { logger: Logger; metrics: Metrics },
): RequestRecord {
  const started = process.hrtime.bigint();
  const requestId = requestIdOf(req);
  const observed: RequestRecord = { headers: ['x-request-id', requestId] };
  res.once('finish', () => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const route = observed.route ?? 'passthrough';
    const cache = observed.cache ?? 'NONE';
    const status = observed.status ?? res.statusCode;
    countRequest(sinks.metrics, route, req.method ?? 'GET', String(status), cache, seconds);
    if (observed.upstreamError === 'overloaded') sinks.metrics.overloadRejections.inc({ route });
    sinks.logger.info({
      reqId: requestId,
      method: req.method,
      route,
      status,
      cache,
      class: observed.cls,
      ms: Math.round(seconds * 1e6) / 1e3,
      upstreamMs: observed.upstreamSeconds === undefined ? undefined : Math.round(observed.upstreamSeconds * 1e6) / 1e3,
      upstreamError: observed.upstreamError,
    });
  });
  return observed;
}
