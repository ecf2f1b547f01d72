/**
 * The proxy's own endpoints: /health (the process answers), /ready (it can serve: a chain
 * tip is known and an upstream is usable; 503 otherwise, and while shutting down) and
 * /metrics (Prometheus). GET and HEAD only; other methods go on down the pipeline.
 * The admin listener serves all three, /ready with its details (upstreams, breakers, tip);
 * the public port serves /ready without them (a load balancer needs the status only) and
 * /metrics only when configured (metrics.onPublicPort).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { internalError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ProxyTelemetry } from '../telemetry/prometheus-telemetry.js';
import { requestIdOf } from './request-log.js';
import { sendError } from './respond.js';

export interface Readiness {
  ready: boolean;
  reason?: string;
  details?: Record<string, unknown>;
}

export interface OwnEndpointDeps {
  logger: Logger;
  telemetry: ProxyTelemetry;
  readiness: () => Readiness;
}

export interface OwnEndpointOptions {
  /** /ready tells why and shows upstreams, breakers and the tip (the admin listener). */
  details: boolean;
  metrics: boolean;
}

interface Answer {
  status: number;
  contentType: string;
  body: string;
}

/** Every path an own endpoint may answer (/metrics only where configured). */
export const OWN_ENDPOINT_PATHS: readonly string[] = ['/health', '/ready', '/metrics'];

const JSON_TYPE = 'application/json; charset=utf-8';
const HEALTHY: Answer = { status: 200, contentType: JSON_TYPE, body: JSON.stringify({ status: 'ok' }) };

function write(res: ServerResponse, answer: Answer, requestId: string): void {
  res.writeHead(answer.status, ['content-type', answer.contentType, 'content-length', String(Buffer.byteLength(answer.body)), 'x-request-id', requestId]);
  res.end(answer.body);
}

/** Returns a handler that answers own-endpoint requests and returns false for anything else. */
export function createOwnEndpoints(deps: OwnEndpointDeps, options: OwnEndpointOptions) {
  const endpoints = new Map<string, () => Answer | Promise<Answer>>([
    ['/health', () => HEALTHY],
    [
      '/ready',
      () => {
        const readiness = deps.readiness();
        const status = readiness.ready ? 'ready' : 'not_ready';
        const body = JSON.stringify(options.details ? { status, ...readiness } : { status });
        return { status: readiness.ready ? 200 : 503, contentType: JSON_TYPE, body };
      },
    ],
  ]);
  if (options.metrics) {
    endpoints.set('/metrics', async () => ({ status: 200, contentType: deps.telemetry.contentType, body: await deps.telemetry.scrape() }));
  }

  /** `path` is the request's decided path (request-target.ts). */
  return (req: IncomingMessage, res: ServerResponse, path: string): boolean => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const endpoint = endpoints.get(path);
    if (!endpoint) return false;
    const requestId = requestIdOf(req);
    // Health probes and scrapes are neither logged nor counted as client requests.
    Promise.resolve()
      .then(endpoint)
      .then(
        (answer) => write(res, answer, requestId),
        (error: unknown) => {
          deps.logger.error({ err: error, path: req.url }, 'own endpoint failed');
          if (!res.headersSent) sendError(res, internalError('proxy error'), 'NONE', ['x-request-id', requestId]);
        },
      );
    return true;
  };
}
