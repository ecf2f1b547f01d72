/**
 * Builds the Express app from its parts. No I/O at import time; main.ts owns start-up.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { ROUTES } from './routes/route-table.js';
import { createRouteMatcher } from './routes/route-matcher.js';
import { createReadHandler, type ReadHandler, type ReadHandlerDeps } from './http/read-handler.js';
import { requestLog, type RequestRecord } from './http/request-log.js';
import { sendError } from './http/respond.js';
import { badUrl, methodNotAllowed } from './errors.js';
import type { Logger } from './logger.js';
import type { Metrics } from './metrics.js';
import type { Passthrough } from './proxy/passthrough.js';

export interface Readiness {
  ready: boolean;
  reason?: string;
  details?: Record<string, unknown>;
}

export interface AppDeps extends ReadHandlerDeps {
  logger: Logger;
  metrics: Metrics;
  readiness: () => Readiness;
  passthrough?: Passthrough;
}

// Methods the read routes do not serve; OPTIONS goes on to the upstream (CORS preflight).
const REFUSED_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag'); // bodies carry their own ETag, computed once at store time
  app.set('query parser', false); // validation parses the raw query exactly as the upstream does

  app.get('/health', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/ready', (_req, res) => {
    const readiness = deps.readiness();
    res.status(readiness.ready ? 200 : 503).json({ status: readiness.ready ? 'ready' : 'not_ready', ...readiness });
  });
  app.get('/metrics', async (_req, res) => {
    res.setHeader('content-type', deps.metrics.registry.contentType);
    res.end(await deps.metrics.registry.metrics());
  });

  app.use(requestLog(deps.logger, deps.metrics));
  // One middleware for the 13 routes: a single table lookup instead of a router layer per
  // route and method keeps the hit path short.
  const matchRoute = createRouteMatcher(ROUTES);
  const handlers = new Map(ROUTES.map((route) => [route.id, createReadHandler(route, deps)]));
  app.use((req: Request, res: Response, next: NextFunction) => {
    const match = matchRoute(req.path);
    if (match.kind === 'none') return next();
    if (match.kind === 'bad-url') return void sendError(res, badUrl(req.path), 'NONE');
    (res.locals as RequestRecord).route = match.route.id;
    if (req.method === 'GET' || req.method === 'HEAD') {
      return (handlers.get(match.route.id) as ReadHandler)(req, res, next, match.params);
    }
    if (!REFUSED_METHODS.has(req.method)) return next();
    res.setHeader('allow', 'GET, HEAD');
    sendError(res, methodNotAllowed(req.method, req.path), 'NONE');
  });

  if (deps.passthrough) {
    const passthrough = deps.passthrough;
    app.use((req: Request, res: Response, next: NextFunction) => {
      (res.locals as RequestRecord).cache = 'BYPASS';
      void passthrough(req, res, next);
    });
  } else {
    // The upstream's own unknown-route answer (Fastify's shape and key order).
    app.use((req: Request, res: Response) => {
      const body = JSON.stringify({ message: `Route ${req.method}:${req.originalUrl} not found`, error: 'Not Found', statusCode: 404 });
      sendError(res, { status: 404, body }, 'NONE');
    });
  }

  app.use((err: unknown, req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(err);
    const status = (err as { status?: number }).status;
    if (status === 400) return void sendError(res, badUrl(req.path), 'NONE');
    deps.logger.error({ err }, 'unhandled error');
    sendError(res, { status: 500, body: JSON.stringify({ statusCode: 500, error: 'Internal Server Error', message: 'proxy error' }) }, 'NONE');
  });
  return app;
}
