/**
 * The request pipeline: every HTTP request the proxy receives goes through these steps, in
 * this order, and the first that answers wins:
 *   0. the request target is decided once (request-target.ts): rewritten into its one form,
 *      or refused with the upstream's 400; every later step sees only the decided target;
 *   1. a read route (the 13 cached routes: 400 for a bad URL, 405 for writes, else the read);
 *   2. an own endpoint (/health, /ready without details, /metrics when metrics.onPublicPort;
 *      the admin listener, admin/admin-listener.ts, serves them all with details);
 *   2b. a read of the wider read surface (issue 15: a route family that caches, on a path the
 *      passthrough may forward; surface-dispatch.ts), served through the one read path;
 *   2c. with live.fanout.enabled, the Socket.IO fan-out's polling transport (engine.io requests
 *      under /socket.io/; live/socket-io-fanout.ts), answered by the proxy itself;
 *   3. the passthrough to the upstream, when enabled and the path is on its allow-list
 *      (uncached, X-Cache: BYPASS);
 *   4. a local 404 in the upstream's own shape, without asking the upstream.
 * With rate limiting on (issue 9), own endpoints are answered right after step 0 and never
 * limited; every other request, a refused target too, is admitted by the limiter first (401 for
 * an unknown API key, 429 over budget, never reaching the cache or the upstream), and its answer
 * carries the ratelimit-* headers: a client sending refused targets meets its budget as any other.
 * Passthrough requests always reach the upstream, so they pay a miss. Refusals (step 0's 400,
 * 401, 429) are marked as such on their record: the access log samples them.
 * WebSocket upgrades do not come here: the server hands them to the passthrough directly,
 * which admits them against the same budgets (client-admission.ts).
 *
 * Mounted as a middleware (index.ts), the pipeline gets a `next`: a request it would answer
 * with step 0's refusal or step 4's local 404 goes on to `next()` instead, with its URL as it
 * came, before the limiter sees it: the app's own routes are neither limited nor logged here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { badUrl, routeNotFound } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Admission, LimitGrant, MissCharge, RateLimiter } from '../limits/rate-limiter.js';
import type { ProxyTelemetry } from '../telemetry/prometheus-telemetry.js';
import type { RouteSpec } from '../routes/route-spec.js';
import { createOwnEndpoints, OWN_ENDPOINT_PATHS, type Readiness } from './own-endpoints.js';
import { createRouteMatcher } from '../routes/route-matcher.js';
import type { Passthrough } from './passthrough.js';
import { createReadDispatcher } from './read-dispatch.js';
import type { ReadHandlerDeps } from './read-handler.js';
import { observeRequest, type RequestRecord, type ServedReadSink } from './request-log.js';
import { BoundedMemo } from './bounded-memo.js';
import { admitClient } from './client-admission.js';
import { decideTarget, type DecidedTarget, type TargetDecision } from './request-target.js';
import { sendError } from './respond.js';

export interface PipelineDeps extends ReadHandlerDeps {
  routes: readonly RouteSpec[];
  logger: Logger;
  telemetry: ProxyTelemetry;
  readiness: () => Readiness;
  passthrough?: Passthrough;
  /** Serve /metrics on this (public) port too (config metrics.onPublicPort). */
  metricsOnPublicPort: boolean;
  /** Absent when rate limiting is off. */
  rateLimiter?: RateLimiter;
  /** Step 2b (surface.enabled): answers a surface read and returns true, or returns false. */
  surface?: SurfaceDispatch;
  /** Step 2c (live.fanout.enabled): the Socket.IO fan-out's polling transport under /socket.io/. */
  socketIo?: { handleRequest(req: IncomingMessage, res: ServerResponse): boolean };
  /** Told of each read answered 200 from a tip-class entry (the warm-up's hot URLs, src/live/hot-urls.ts). */
  servedRead?: ServedReadSink;
}

/** A Connect/Express `next`: the request is not the proxy's. */
export type NextHandler = (error?: unknown) => void;

/** The pipeline: a node:http request listener, and a Connect/Express middleware when given `next`. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse, next?: NextHandler) => void;

export type SurfaceDispatch = (req: IncomingMessage, res: ServerResponse, target: DecidedTarget, limit?: LimitGrant) => boolean;

/** Hands a request to the middleware's `next`, its URL restored. */
type PassOn = () => void;

const TARGET_MEMO_ENTRIES = 4096;
const TARGET_MEMO_KEY_LENGTH = 1024;

export function createRequestPipeline(deps: PipelineDeps): RequestHandler {
  const answerReadRoute = createReadDispatcher(deps.routes, deps);
  const answerOwnEndpoint = createOwnEndpoints(deps, { details: false, metrics: deps.metricsOnPublicPort });
  const passthrough = deps.passthrough;
  const answerSurfaceRead = deps.surface;
  const limiter = deps.rateLimiter;
  // decideTarget is a pure function of the raw target, and clients repeat their URLs.
  const targets = new BoundedMemo<TargetDecision>(TARGET_MEMO_ENTRIES, TARGET_MEMO_KEY_LENGTH);
  const claims = middlewareClaims(deps);

  return (req: IncomingMessage, res: ServerResponse, next?: NextHandler): void => {
    const target = targets.get(req.url ?? '', decideTarget);
    let passOn: PassOn | undefined;
    if (next) {
      if (!claims(req, target)) {
        next();
        return;
      }
      const url = req.url;
      passOn = () => {
        req.url = url;
        next();
      };
    }
    // What the passthrough forwards is req.url: from here on it is the decided target.
    if (target.kind === 'target') req.url = target.url;
    if (!limiter) {
      answer(req, res, target, undefined, passOn);
      return;
    }
    // Rate limits (issue 9): own endpoints first, never limited; then the limiter's admission,
    // refused targets included: they are local answers, charged like a local 404.
    if (target.kind === 'target' && answerOwnEndpoint(req, res, target.path)) return;
    const admission = admitClient(limiter, req);
    if (admission instanceof Promise) admission.then((admitted) => afterAdmission(req, res, target, admitted, passOn));
    else afterAdmission(req, res, target, admission, passOn);
  };

  function afterAdmission(req: IncomingMessage, res: ServerResponse, target: TargetDecision, admission: Admission, passOn: PassOn | undefined): void {
    const { grant, refusal } = admission;
    if (!refusal) {
      answer(req, res, target, grant, passOn);
      return;
    }
    const record = observeRequest(req, res, deps, grant);
    record.refused = true;
    record.answered(sendError(res, refusal, 'NONE', [...(refusal.headers ?? []), ...record.headers]));
  }

  /** Step 0's refusal, or steps 1 to 4; `limit` is the request's rate-limit grant when limiting is on. */
  function answer(req: IncomingMessage, res: ServerResponse, target: TargetDecision, limit: LimitGrant | undefined, passOn: PassOn | undefined): void {
    if (target.kind === 'target') {
      route(req, res, target, limit, passOn);
      return;
    }
    const record = observeRequest(req, res, deps, limit);
    record.refused = true;
    record.answered(sendError(res, badUrl(target.path), 'NONE', record.headers));
  }

  /**
   * Steps 1 to 4; `limit` is the request's rate-limit grant when limiting is on (own endpoints
   * already tried); `passOn`, as a middleware, takes step 4's requests instead of the local 404.
   */
  function route(req: IncomingMessage, res: ServerResponse, target: DecidedTarget, limit: LimitGrant | undefined, passOn: PassOn | undefined): void {
    const path = target.path;
    if (answerReadRoute(req, res, target, limit)) return;
    if (!limit && answerOwnEndpoint(req, res, path)) return;
    if (answerSurfaceRead?.(req, res, target, limit)) return;
    if (deps.socketIo?.handleRequest(req, res)) {
      const record = observeRequest(req, res, deps, limit);
      record.route = 'socket_io';
      record.reportOnFinish();
      return;
    }
    const forwards = passthrough?.allows(path) === true;
    if (!forwards && passOn) {
      passOn();
      return;
    }
    const record = observeRequest(req, res, deps, limit);
    if (forwards && passthrough) {
      record.cache = 'BYPASS';
      record.reportOnFinish();
      // Read when the request goes on: a miss charge first rewrites ratelimit-remaining in them.
      const forward = () => passthrough.forward(req, res, record.requestId, record.headers);
      const charge = limit?.chargeMiss?.(record.headers);
      if (charge === undefined) forward();
      else if (charge instanceof Promise) charge.then((refusal) => passOrRefuse(res, record, refusal, forward));
      else passOrRefuse(res, record, charge, forward);
    } else {
      record.answered(sendError(res, routeNotFound(req.method ?? 'GET', req.url ?? path), 'NONE', record.headers));
    }
  }

  function passOrRefuse(res: ServerResponse, record: RequestRecord, refusal: MissCharge, forward: () => void): void {
    if (!refusal) {
      forward();
      return;
    }
    record.refused = true;
    record.answered(sendError(res, refusal, 'NONE', [...refusal.headers, ...record.headers]));
  }
}

/**
 * Whether a request mounted as a middleware is the proxy's to answer: a target it can read
 * (the 13 read routes, a bad URL on one of them), an own endpoint, the Socket.IO fan-out's
 * transport, or a path the passthrough forwards (surface reads are on those too). Anything else
 * is the app's: the standalone server would answer it with a refusal or a local 404.
 */
function middlewareClaims(deps: PipelineDeps): (req: IncomingMessage, target: TargetDecision) => boolean {
  const matchRoute = createRouteMatcher(deps.routes);
  const ownPaths = new Set(OWN_ENDPOINT_PATHS.filter((path) => path !== '/metrics' || deps.metricsOnPublicPort));
  return (req, target) => {
    if (target.kind !== 'target') return false;
    const path = target.path;
    if (deps.passthrough?.allows(path)) return true;
    if (deps.socketIo && path.startsWith('/socket.io/')) return true;
    if (ownPaths.has(path) && (req.method === 'GET' || req.method === 'HEAD')) return true;
    return matchRoute(path).kind !== 'none';
  };
}
