/**
 * One log line and one metrics sample per request, written when the response finishes.
 * Handlers fill the request's RequestRecord; ids come from X-Request-Id when sent.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';

export interface RequestRecord {
  route?: string;
  status?: number;
  cache?: string;
  cls?: string;
  upstreamSeconds?: number;
  upstreamError?: string;
}

// Echoed ids are bounded so a client cannot make log lines arbitrarily large.
const MAX_REQUEST_ID_LENGTH = 128;

/** Starts observing one request; the returned record is read when the response finishes. */
export function observeRequest(
  req: IncomingMessage,
  res: ServerResponse,
  sinks: { logger: Logger; metrics: Metrics },
  record: RequestRecord = {},
): RequestRecord {
  const started = process.hrtime.bigint();
  const incoming = req.headers['x-request-id'];
  const requestId = typeof incoming === 'string' && incoming.length > 0 && incoming.length <= MAX_REQUEST_ID_LENGTH ? incoming : randomUUID();
  res.setHeader('x-request-id', requestId);
  res.once('finish', () => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const route = record.route ?? 'passthrough';
    const cache = record.cache ?? 'NONE';
    const status = record.status ?? res.statusCode;
    sinks.metrics.httpRequests.inc({ route, method: req.method ?? 'GET', status: String(status), cache });
    sinks.metrics.httpDuration.observe({ route, cache }, seconds);
    if (record.upstreamError === 'overloaded') sinks.metrics.overloadRejections.inc({ route });
    sinks.logger.info({
      reqId: requestId,
      method: req.method,
      route,
      status,
      cache,
      class: record.cls,
      ms: Math.round(seconds * 1e6) / 1e3,
      upstreamMs: record.upstreamSeconds === undefined ? undefined : Math.round(record.upstreamSeconds * 1e6) / 1e3,
      upstreamError: record.upstreamError,
    });
  });
  return record;
}

/** The same, as Express middleware: handlers write into `res.locals`. */
export function requestLog(logger: Logger, metrics: Metrics) {
  return (req: Request, res: Response, next: NextFunction): void => {
    observeRequest(req, res, { logger, metrics }, res.locals as RequestRecord);
    next();
  };
}
