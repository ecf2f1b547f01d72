/**
 * The request pipeline: every HTTP request the proxy receives goes through these steps, in
 * this order, and the first that answers wins:
 *   0. the request target is decided once (request-target.ts): rewritten into its one form,
 *      or refused with the upstream's 400; every later step sees only the decided target;
 *   1. a read route (the 13 cached routes: 400 for a bad URL, 405 for writes, else the read);
 *   2. an own endpoint (/health, /ready without details, /metrics when metrics.onPublicPort;
 *      the admin listener, admin/admin-listener.ts, serves them all with details);
 *   3. the passthrough to the upstream, when enabled and the path is on its allow-list
 *      (uncached, X-Cache: BYPASS);
 *   4. a local 404 in the upstream's own shape, without asking the upstream.
 * WebSocket upgrades do not come here: the server hands them to the passthrough directly.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { badUrl, routeNotFound } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ProxyTelemetry } from '../telemetry/prometheus-telemetry.js';
import type { RouteSpec } from '../routes/route-spec.js';
import { createOwnEndpoints, type Readiness } from './own-endpoints.js';
import type { Passthrough } from './passthrough.js';
import { createReadDispatcher } from './read-dispatch.js';
import type { ReadHandlerDeps } from './read-handler.js';
import { observeRequest } from './request-log.js';
import { decideTarget } from './request-target.js';
import { sendError } from './respond.js';

export interface PipelineDeps extends ReadHandlerDeps {
  routes: readonly RouteSpec[];
  logger: Logger;
  telemetry: ProxyTelemetry;
  readiness: () => Readiness;
  passthrough?: Passthrough;
  /** Serve /metrics on this (public) port too (config metrics.onPublicPort). */
  metricsOnPublicPort: boolean;
}

export function createRequestPipeline(deps: PipelineDeps): RequestListener {
  const answerReadRoute = createReadDispatcher(deps.routes, deps);
  const answerOwnEndpoint = createOwnEndpoints(deps, { details: false, metrics: deps.metricsOnPublicPort });
  const passthrough = deps.passthrough;

  return (req: IncomingMessage, res: ServerResponse): void => {
    const target = decideTarget(req.url ?? '');
    if (target.kind === 'refused') {
      const record = observeRequest(req, res, deps);
      record.status = sendError(res, badUrl(target.path), 'NONE', record.headers);
      return;
    }
    // What the passthrough forwards is req.url: from here on it is the decided target.
    req.url = target.url;
    if (answerReadRoute(req, res, target.path, target.query)) return;
    if (answerOwnEndpoint(req, res, target.path)) return;
    const record = observeRequest(req, res, deps);
    if (passthrough?.allows(target.path)) {
      record.cache = 'BYPASS';
      // The passthrough copies the upstream's headers with setHeader; the request id joins them.
      res.setHeader('x-request-id', record.requestId);
      passthrough.forward(req, res, record.requestId);
    } else {
      record.status = sendError(res, routeNotFound(req.method ?? 'GET', target.url), 'NONE', record.headers);
    }
  };
}
