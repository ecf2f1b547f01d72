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
import { createReadHandler, type Prefetch, type ReadHandler, type ReadHandlerDeps, type ServedRead } from './read-handler.js';
import { observeRequest, type ServedReadSink } from './request-log.js';
import { sendError } from './respond.js';
import type { DecidedTarget } from './request-target.js';

// OPTIONS (CORS preflight) is not refused: it goes on to the upstream.
const REFUSED_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export interface ReadDispatchDeps extends ReadHandlerDeps {
  telemetry: Telemetry;
  logger: Logger;
  /** Told of each GET answered 200 from a tip-class entry (the warm-up's hot URLs). */
  servedRead?: ServedReadSink;
}

/** Answers a read-route request (true) or leaves it to the next step (false). */
export type ReadDispatch = (req: IncomingMessage, res: ServerResponse, target: DecidedTarget, limit?: LimitGrant) => boolean;

export interface ReadDispatcher extends ReadDispatch {
  /**
   * The proxy's own GET of `target` (the warm-up), planned exactly as a client's request: the
   * same key, admission, single-flight and evidence; no response, no rate-limit charge.
   * 'uncached': one of the 13 routes, answered without the cache (a bad URL, a redirect);
   * undefined: not one of the 13 routes (the next step's).
   */
  prefetch(target: DecidedTarget): Prefetch | 'uncached' | undefined;
}

/** What a decided target comes to among the read routes; a pure function of the target. */
type ReadPlan = { kind: 'none' } | { kind: 'bad-url' } | { kind: 'route'; route: RouteSpec; handler: ReadHandler; prepared: ServedRead };

// Enough for every URL a busy explorer repeats; keys up to 1 KiB (longer ones, such as a long
// tx/multiple list, are prepared per request). Worst case a few MB.
const PLAN_MEMO_ENTRIES = 4096;
const PLAN_MEMO_KEY_LENGTH = 1024;

/** Returns a handler that answers read-route requests and returns false for anything else. */
export function createReadDispatcher(routes: readonly RouteSpec[], deps: ReadDispatchDeps): ReadDispatcher {
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

  const prefetch = (target: DecidedTarget): Prefetch | 'uncached' | undefined => {
    const plan = plans.get(target.url, () => planFor(target));
    if (plan.kind === 'none') return undefined;
    return (plan.kind === 'route' ? plan.handler.prefetch(plan.prepared) : undefined) ?? 'uncached';
  };

  /** `target` is the request's decided target (request-target.ts); `limit`, its rate-limit grant. */
  const dispatch = (req: IncomingMessage, res: ServerResponse, target: DecidedTarget, limit?: LimitGrant): boolean => {
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
  return Object.assign(dispatch, { prefetch });
}
