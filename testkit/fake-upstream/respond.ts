/** Writes a Reply with the upstream's common headers, and the conditional 304. */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { unquote } from './primitives.js';
import { errorBody, JSON_TYPE, type Reply } from './replies.js';

export const API_VERSION = 'v8.13.6 (fake)';
const DEPRECATION_WARNING = '299 - "Deprecated: See https://docs.hiro.so/stacks/api for more information"';
const MUST_REVALIDATE = 'public, no-cache, must-revalidate';

/** Adds the common headers, and answers 304 when If-None-Match holds the ETag (§3, §1.4). */
export function send(req: IncomingMessage, res: ServerResponse, reply: Reply, deprecated = false): void {
  // Validation fails before the global preHandler, which sets X-API-Version and Cache-Control.
  const isValidationError = reply.status === 400 && reply.body.includes('"code":"FST_ERR_VALIDATION"');
  const headers: OutgoingHttpHeaders = {};
  if (!isValidationError) headers['x-api-version'] = API_VERSION;
  if (deprecated) headers.warning = DEPRECATION_WARNING;
  if (reply.etag !== undefined) {
    headers['cache-control'] = MUST_REVALIDATE;
    if (ifNoneMatchHolds(req.headers['if-none-match'], reply.etag)) return write(res, 304, headers);
    headers.etag = `"${reply.etag}"`;
  } else if (!isValidationError) {
    headers['cache-control'] = 'no-store';
  }
  if (reply.contentType) headers['content-type'] = reply.contentType;
  if (reply.location) headers.location = reply.location;
  write(res, reply.status, headers, reply.body);
}

/** `parseIfNoneMatchHeader` (§3): a comma list, `W/` and quotes stripped, `*` not special. */
export function ifNoneMatchHolds(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header
    .split(',')
    .map((tag) => unquote(tag.trim().replace(/^W\//, '')))
    .includes(etag);
}

export function write(res: ServerResponse, status: number, headers: OutgoingHttpHeaders, body = ''): void {
  if (status === 304) {
    res.writeHead(304, headers).end();
    return;
  }
  res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) }).end(body);
}

/** A bug in the fake shows up as a 500 that names it, not as a dropped connection. */
export function crashed(res: ServerResponse, error: unknown): void {
  if (res.headersSent) res.destroy();
  else write(res, 500, { 'content-type': JSON_TYPE }, errorBody(500, `fake upstream: ${String(error)}`));
}
