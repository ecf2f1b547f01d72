/**
 * The request pipeline: every HTTP request the proxy receives goes through these steps, in
 * this order, and the first that answers wins:
 *   1. a read route (the 13 cached routes: 400 for a bad URL, 405 for writes, else the read);
 *   2. an own endpoint (/health, /ready, /metrics);
 *   3. the passthrough to the upstream, when enabled (uncached, X-Cache: BYPASS);
 *   4. a local 404 in the upstream's own shape.
 * WebSocket upgrades do not come here: the server hands them to the passthrough directly.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { routeNotFound } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ProxyTelemetry } from '../telemetry/prometheus-telemetry.js';
import type { RouteSpec } from '../routes/route-spec.js';
import { createOwnEndpoints, type Readiness } from './own-endpoints.js';
import type { Passthrough } from './passthrough.js';
import { createReadDispatcher } from './read-dispatch.js';
import type { ReadHandlerDeps } from './read-handler.js';
import { observeRequest } from './request-log.js';
import { sendError } from './respond.js';

export interface PipelineDeps extends ReadHandlerDeps {
  routes: readonly RouteSpec[];
  logger: Logger;
  telemetry: ProxyTelemetry;
  readiness: () => Readiness;
  passthrough?: Passthrough;
}

export function createRequestPipeline(deps: PipelineDeps): RequestListener {
  const answerReadRoute = createReadDispatcher(deps.routes, deps);
  const answerOwnEndpoint = createOwnEndpoints(deps);
  const passthrough = deps.passthrough;

  return (req: IncomingMessage, res: ServerResponse): void => {
    if (answerReadRoute(req, res)) return;
    if (answerOwnEndpoint(req, res)) return;
    const record = observeRequest(req, res, deps);
    if (passthrough) {
      record.cache = 'BYPASS';
      // The passthrough copies the upstream's headers with setHeader; the request id joins them.
      res.setHeader('x-request-id', record.headers[1] as string);
      passthrough.forward(req, res);
    } else {
      record.status = sendError(res, routeNotFound(req.method ?? 'GET', req.url ?? ''), 'NONE', record.headers);
    }
  };
}
