/**
 * Step 1 of the request pipeline: the 13 read routes. Tried first, with nothing in front of
 * it, so a cache hit stays short: match, validate, look up, write prebuilt bytes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { badUrl, methodNotAllowed } from '../errors.js';
import type { Logger } from '../logger.js';
import type { LimitGrant } from '../limits/rate-limiter.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import { createRouteMatcher } from '../routes/route-matcher.js';
import type { RouteSpec } from '../routes/route-spec.js';
import { createReadHandler, type ReadHandlerDeps } from './read-handler.js';
import { observeRequest } from './request-log.js';
import { sendError } from './respond.js';

// OPTIONS (CORS preflight) is not refused: it goes on to the upstream.
const REFUSED_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export interface ReadDispatchDeps extends ReadHandlerDeps {
  telemetry: Telemetry;
  logger: Logger;
}

/** Returns a handler that answers read-route requests and returns false for anything else. */
export function createReadDispatcher(routes: readonly RouteSpec[], deps: ReadDispatchDeps) {
  const matchRoute = createRouteMatcher(routes);
  const handlers = new Map(routes.map((route) => [route.id, createReadHandler(route, deps)]));
  /** `path` and `query` are the request's decided target (request-target.ts); `limit`, its rate-limit grant. */
  return (req: IncomingMessage, res: ServerResponse, path: string, query: string, limit?: LimitGrant): boolean => {
    const match = matchRoute(path);
    if (match.kind === 'none') return false;
    const method = req.method ?? 'GET';
    const isRead = method === 'GET' || method === 'HEAD';
    if (!isRead && !REFUSED_METHODS.has(method)) return false;

    const record = observeRequest(req, res, deps, limit);
    if (match.kind === 'bad-url') {
      record.status = sendError(res, badUrl(path), 'NONE', record.headers);
    } else if (!isRead) {
      record.route = match.route.id;
      record.status = sendError(res, methodNotAllowed(method, path), 'NONE', ['allow', 'GET, HEAD', ...record.headers]);
    } else {
      const handler = handlers.get(match.route.id);
      handler?.(req, res, match.params, query, record);
    }
    return true;
  };
}
