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
import { BoundedMemo } from './bounded-memo.js';
import { createReadHandler, type ReadHandler, type ReadHandlerDeps, type ServedRead } from './read-handler.js';
import { observeRequest } from './request-log.js';
import { sendError } from './respond.js';
import type { DecidedTarget } from './request-target.js';

// OPTIONS (CORS preflight) is not refused: it goes on to the upstream.
const REFUSED_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export interface ReadDispatchDeps extends ReadHandlerDeps {
  telemetry: Telemetry;
  logger: Logger;
}

/** What a decided target comes to among the read routes; a pure function of the target. */
type ReadPlan =
  | { kind: 'none' }
  | { kind: 'bad-url' }
  | { kind: 'route'; route: RouteSpec; handler: ReadHandler; prepared: ServedRead };

// Enough for every URL a busy explorer repeats; keys up to 1 KiB (longer ones, such as a long
// tx/multiple list, are prepared per request). Worst case a few MB.
const PLAN_MEMO_ENTRIES = 4096;
const PLAN_MEMO_KEY_LENGTH = 1024;

/** Returns a handler that answers read-route requests and returns false for anything else. */
export function createReadDispatcher(routes: readonly RouteSpec[], deps: ReadDispatchDeps) {
  const matchRoute = createRouteMatcher(routes);
  const handlers = new Map(routes.map((route) => [route.id, createReadHandler(route, deps)]));
  const plans = new BoundedMemo<ReadPlan>(PLAN_MEMO_ENTRIES, PLAN_MEMO_KEY_LENGTH);
  const none: ReadPlan = { kind: 'none' };
  const badUrlPlan: ReadPlan = { kind: 'bad-url' };

  function planFor(target: DecidedTarget): ReadPlan {
    const match = matchRoute(target.path);
    if (match.kind === 'none') return none;
    if (match.kind === 'bad-url') return badUrlPlan;
    const handler = handlers.get(match.route.id) as ReadHandler;
    const prepared = handler.prepare(match.params, target.query);
    // Input the route does not cache (route 11's address with a suffix): the passthrough's, as sent.
    if (prepared.kind === 'passthrough') return none;
    return { kind: 'route', route: match.route, handler, prepared };
  }

  /** `target` is the request's decided target (request-target.ts); `limit`, its rate-limit grant. */
  return (req: IncomingMessage, res: ServerResponse, target: DecidedTarget, limit?: LimitGrant): boolean => {
    const plan = plans.get(target.url, () => planFor(target));
    if (plan.kind === 'none') return false;
    const method = req.method ?? 'GET';
    const isRead = method === 'GET' || method === 'HEAD';
    if (!isRead && !REFUSED_METHODS.has(method)) return false;

    const record = observeRequest(req, res, deps, limit);
    if (plan.kind === 'bad-url') {
      record.answered(sendError(res, badUrl(target.path), 'NONE', record.headers));
    } else if (!isRead) {
      record.route = plan.route.id;
      record.answered(sendError(res, methodNotAllowed(method, target.path), 'NONE', ['allow', 'GET, HEAD', ...record.headers]));
    } else {
      plan.handler.serve(req, res, plan.prepared, record);
    }
    return true;
  };
}
