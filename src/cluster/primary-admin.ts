/**
 * The admin port of worker mode, served by the primary. What concerns the whole host is asked of
 * every ready worker and answered as one (the shapes of a single process):
 *
 * - /metrics: every worker's metrics over IPC, added up (the primary's own, worker-metrics.ts);
 * - /ready: ready only when every worker is (combine-readiness.ts);
 * - /status.json: the workers' reports combined (combine-status-reports.ts), so the status page
 *   (which renders that JSON in the browser) shows the host;
 * - GET /admin/cache: every worker's stats combined (combine-cache-stats.ts): memory tiers,
 *   lookups and purges added up, with a line per worker; a refusal (401, the API off) is the
 *   workers' own, and a worker that fails or does not answer makes the whole call fail as a
 *   purge does (combine-admin-answers.ts), naming it;
 * - every state-changing admin API call (any method but GET and HEAD on /admin/purge and
 *   /admin/cache; today only POST /admin/purge changes anything, the rest are refused alike by
 *   every worker): its body read once, sent to every worker, the answers combined
 *   (combine-admin-answers.ts). Each worker has its own memory tier, so a purge that reaches one
 *   worker leaves the others serving what it purged.
 *
 *   With Redis too: the purge channel (redis-purge-channel.ts) would reach the other workers, but
 *   pub/sub is at most once and after the fact: the 200 would come before the other workers'
 *   memory tiers are purged, and a worker whose subscriber is reconnecting would never be. Sent to
 *   every worker, the 200 means every worker's memory tier was purged. The price is idempotent:
 *   the Redis tier is purged once per worker (after the first, nothing is left to delete) and
 *   each worker announces it on the channel (each peer purges again, finding nothing).
 *
 * Anything else (/health, the page's files, unknown paths) goes to one worker, as it is the same on each.
 * The workers check ADMIN_TOKEN: the client's Authorization header reaches each as it came.
 */
import { request, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import type { Logger } from '../logger.js';
import { badRequest, unavailable } from '../errors.js';
import { ADMIN_API_PATHS, BodyError, readBody } from '../http/admin/admin-api.js';
import { sendStatusFile } from '../http/admin/status-endpoints.js';
import type { StatusReport } from '../http/admin/status-report.js';
import { requestIdOf } from '../http/request-log.js';
import { decideTarget } from '../http/request-target.js';
import { sendError } from '../http/respond.js';
import { combineAdminAnswers, type WorkerAnswer } from './combine-admin-answers.js';
import { combineCacheStats } from './combine-cache-stats.js';
import { combineReadiness } from './combine-readiness.js';
import { combineStatusReports, type WorkerReport, type WorkerRef } from './combine-status-reports.js';
import { askWorker } from './worker-admin-request.js';

/** A ready worker's private admin listener. */
export interface AdminTarget extends WorkerRef {
  adminUrl: string;
}

export interface PrimaryAdminDeps {
  logger: Logger;
  /** The workers that are ready (have opened their listeners), oldest first. */
  workers: () => AdminTarget[];
  answerMetrics: (req: IncomingMessage, res: ServerResponse) => void;
}

/** A purge waits for the worker's coalescing window and its Redis purge (a SCAN for broad selectors): generous. */
const FANOUT_WAIT_MS = 30_000;
/** /ready and /status.json: a worker that has not answered within this is reported as not answering. */
const READ_WAIT_MS = 5_000;

/** Hop-by-hop and framing headers: they describe the client's connection, not the request the primary sends on. */
const NOT_FORWARDED = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'host',
  'expect',
  'upgrade',
  'te',
  'trailer',
  'proxy-connection',
]);

const JSON_TYPE = 'application/json; charset=utf-8';
const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

function forwardedHeaders(req: IncomingMessage, requestId: string): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) if (!NOT_FORWARDED.has(name) && value !== undefined) headers[name] = value;
  // One id for the client's answer and every worker's log line about it.
  headers['x-request-id'] = requestId;
  return headers;
}

export function createPrimaryAdmin(deps: PrimaryAdminDeps) {
  /** Every ready worker asked at once; each answer or why there is none. */
  const askAll = (method: string, path: string, headers: OutgoingHttpHeaders, timeoutMs: number, body?: Buffer): Promise<WorkerAnswer[]> =>
    Promise.all(
      deps.workers().map(async ({ adminUrl, ...ref }): Promise<WorkerAnswer> => {
        try {
          return { ...ref, answer: await askWorker(adminUrl, { method, path, headers, body, timeoutMs }) };
        } catch (error) {
          return { ...ref, error: messageOf(error) };
        }
      }),
    );

  const fanOut = async (req: IncomingMessage, res: ServerResponse, path: string, requestId: string): Promise<void> => {
    let body: Buffer;
    try {
      // Bounded as the worker bounds it (MAX_PURGE_BODY_BYTES); read before any worker checks the token, so an oversized body is a 400 even without one.
      body = Buffer.from(await readBody(req), 'utf8');
    } catch (error) {
      if (!(error instanceof BodyError)) throw error;
      sendError(res, badRequest(error.message), 'NONE', ['x-request-id', requestId, 'connection', 'close']);
      return;
    }
    const method = req.method ?? 'POST';
    const answers = await askAll(method, req.url ?? '/', forwardedHeaders(req, requestId), FANOUT_WAIT_MS, body);
    const combined = combineAdminAnswers(`${method} ${path}`, answers, requestId);
    const failed = answers
      .filter((a) => !('answer' in a) || a.answer.status !== combined.status)
      .map((a) => ({ worker: a.id, pid: a.pid, ...('answer' in a ? { status: a.answer.status } : { error: a.error }) }));
    if (failed.length > 0 || combined.status >= 500)
      deps.logger.warn({ reqId: requestId, status: combined.status, path: req.url, failed }, 'admin call failed on a worker');
    res.writeHead(combined.status, combined.headers);
    res.end(combined.body);
  };

  /** GET (or HEAD) /admin/cache: every worker's stats as one; the workers check the token. */
  const cacheStats = async (req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> => {
    const answers = await askAll('GET', req.url ?? '/admin/cache', forwardedHeaders(req, requestId), READ_WAIT_MS);
    const combined = combineAdminAnswers('GET /admin/cache', answers, requestId, combineCacheStats);
    res.writeHead(combined.status, combined.headers);
    res.end(req.method === 'HEAD' ? undefined : combined.body);
  };

  const ready = async (req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> => {
    const { status, body } = combineReadiness(await askAll('GET', '/ready', { 'x-request-id': requestId }, READ_WAIT_MS));
    const text = JSON.stringify(body);
    res.writeHead(status, ['content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(text)), 'x-request-id', requestId]);
    res.end(text);
  };

  const status = async (req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> => {
    const answers = await askAll('GET', '/status.json', { 'x-request-id': requestId }, READ_WAIT_MS);
    const reports = answers.map((a): WorkerReport => {
      const ref = { id: a.id, pid: a.pid };
      if ('error' in a) return { ...ref, error: a.error };
      if (a.answer.status !== 200) return { ...ref, error: `answered ${a.answer.status}` };
      try {
        return { ...ref, report: JSON.parse(a.answer.body.toString('utf8')) as StatusReport };
      } catch {
        return { ...ref, error: 'answered a report that is not JSON' };
      }
    });
    const combined = combineStatusReports(reports);
    if (!combined) {
      const reasons = reports.map((r) => `worker ${r.id}: ${'error' in r ? r.error : 'ok'}`).join('; ');
      sendError(res, unavailable(`no worker gave a status report${reasons ? ` (${reasons})` : ''}`), 'NONE', ['x-request-id', requestId]);
      return;
    }
    sendStatusFile(res, JSON_TYPE, JSON.stringify(combined), requestId);
  };

  /** Forwarded to one worker as it came, its answer streamed back. */
  const forwardToOne = (req: IncomingMessage, res: ServerResponse, path: string): void => {
    const target = deps.workers()[0];
    if (!target) {
      answerText(res, 503, 'no worker is ready');
      return;
    }
    const forwarded = request(new URL(path, target.adminUrl), { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
      answer.pipe(res);
    });
    forwarded.on('error', () => (res.headersSent ? res.destroy() : answerText(res, 502, 'the worker did not answer')));
    req.pipe(forwarded);
  };

  return (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url ?? '';
    // Origin-form only: an absolute URL here must not pick where the primary connects.
    if (!url.startsWith('/')) {
      answerText(res, 400, 'bad request target');
      return;
    }
    // The path as the worker's admin listener will decide it (admin-listener.ts), so both route a request alike; a refused one is the worker's to answer.
    const target = decideTarget(url);
    const path = target.kind === 'target' ? target.path : undefined;
    const read = req.method === 'GET' || req.method === 'HEAD';
    const requestId = requestIdOf(req);
    const fail = (error: unknown) => {
      deps.logger.error({ err: error, path: url }, 'admin request failed in the primary');
      if (!res.headersSent) answerText(res, 500, 'the primary could not answer');
    };
    if (read && path === '/metrics') deps.answerMetrics(req, res);
    else if (read && path === '/ready') ready(req, res, requestId).catch(fail);
    else if (read && path === '/status.json') status(req, res, requestId).catch(fail);
    else if (read && path === '/admin/cache') cacheStats(req, res, requestId).catch(fail);
    else if (!read && path !== undefined && ADMIN_API_PATHS.has(path)) fanOut(req, res, path, requestId).catch(fail);
    else forwardToOne(req, res, url);
  };
}

export function answerText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) + 1 });
  res.end(`${text}\n`);
}
