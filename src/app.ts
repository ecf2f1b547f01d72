/**
 * The Express app for everything but the 13 read routes (served by http/read-dispatch.ts
 * ahead of it): own endpoints, and the passthrough to the upstream. No I/O at import time.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { requestLog, type RequestRecord } from './http/request-log.js';
import { sendError } from './http/respond.js';
import { badUrl } from './errors.js';
import type { Logger } from './logger.js';
import type { Metrics } from './metrics.js';
import type { Passthrough } from './proxy/passthrough.js';

export interface Readiness {
  ready: boolean;
  reason?: string;
  details?: Record<string, unknown>;
}

export interface AppDeps {
  logger: Logger;
  metrics: Metrics;
  readiness: () => Readiness;
  passthrough?: Passthrough;
}

export function createApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag'); // bodies carry their own ETag, computed once at store time
  app.set('query parser', false); // nothing here reads req.query; the passthrough forwards it raw

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
