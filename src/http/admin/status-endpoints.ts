/**
 * The operator's status page on the admin listener, without a token (it shows nothing secret,
 * like /metrics): GET / (the page), /status.css, /status.js and /favicon.svg (its parts), /status.json (what
 * it shows, status-report.ts). GET and HEAD only; other methods go on down the admin listener.
 * The page's files are sent with a Content-Security-Policy that lets it load nothing but its own
 * script, stylesheet and status.json.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { internalError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { requestIdOf } from '../request-log.js';
import { sendError } from '../respond.js';
import { STATUS_CSS, STATUS_HTML, STATUS_ICON, STATUS_JS } from './status-page.js';
import { CounterRates } from './status-rates.js';
import { statusReport, type StatusSources } from './status-report.js';

/** What the composition root reads for each /status.json (everything but the time and the rates). */
export type StatusReading = Omit<StatusSources, 'now' | 'rates' | 'rateWindowSeconds'>;

export interface StatusEndpointDeps {
  logger: Logger;
  clock: () => number;
  readStatus: () => Promise<StatusReading>;
}

/** Rates look this far back: long enough to smooth a burst, short enough to show a change within seconds. */
export const RATE_WINDOW_MS = 10_000;

export const STATUS_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

interface Asset {
  contentType: string;
  body: string;
}

const ASSETS = new Map<string, Asset>([
  ['/', { contentType: 'text/html; charset=utf-8', body: STATUS_HTML }],
  ['/status.css', { contentType: 'text/css; charset=utf-8', body: STATUS_CSS }],
  ['/status.js', { contentType: 'text/javascript; charset=utf-8', body: STATUS_JS }],
  ['/favicon.svg', { contentType: 'image/svg+xml', body: STATUS_ICON }],
]);

/** A status page file or report, with the page's headers (the primary of worker mode sends its combined report with it). */
export function sendStatusFile(res: ServerResponse, contentType: string, body: string, requestId: string): void {
  res.writeHead(200, [
    'content-type',
    contentType,
    'content-length',
    String(Buffer.byteLength(body)),
    'cache-control',
    'no-store',
    'content-security-policy',
    STATUS_PAGE_CSP,
    'x-content-type-options',
    'nosniff',
    'referrer-policy',
    'no-referrer',
    'x-request-id',
    requestId,
  ]);
  res.end(body);
}

/** Returns a handler that answers the status page's paths and returns false for anything else. */
export function createStatusEndpoints(deps: StatusEndpointDeps) {
  const rates = new CounterRates({ windowMs: RATE_WINDOW_MS });

  const report = async (): Promise<string> => {
    const reading = await deps.readStatus();
    const now = deps.clock();
    const requests = reading.counts.requests.reduce((sum, r) => sum + r.count, 0);
    const sampled = rates.sample(now, { requests, upstreamRequests: reading.counts.upstreamRequests });
    return JSON.stringify(
      statusReport({
        ...reading,
        now,
        rates: { requests: sampled.requests ?? null, upstreamRequests: sampled.upstreamRequests ?? null },
        rateWindowSeconds: RATE_WINDOW_MS / 1000,
      }),
    );
  };

  /** `path` is the request's decided path (request-target.ts). */
  return (req: IncomingMessage, res: ServerResponse, path: string): boolean => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const requestId = requestIdOf(req);
    const asset = ASSETS.get(path);
    if (asset) {
      sendStatusFile(res, asset.contentType, asset.body, requestId);
      return true;
    }
    if (path !== '/status.json') return false;
    report().then(
      (body) => sendStatusFile(res, 'application/json; charset=utf-8', body, requestId),
      (error: unknown) => {
        deps.logger.error({ err: error, path }, 'status report failed');
        if (!res.headersSent) sendError(res, internalError('the status report failed'), 'NONE', ['x-request-id', requestId]);
      },
    );
    return true;
  };
}
