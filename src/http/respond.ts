/**
 * Writes answers. A cached entry's headers are built once per entry and reused, so a hit
 * only adds X-Cache and Age before writing the stored bytes.
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { ErrorReply } from '../errors.js';
import type { CacheEntry } from '../cache/entry.js';
import { cacheControlFor } from '../cache/policy.js';
import type { CacheStatus, PassedOn, ReadResult } from '../cache/read-path.js';
import { joinedHeader } from './raw-header.js';

// The upstream allows any origin (@fastify/cors defaults); browsers must also be able to read ours.
const CORS = [
  'access-control-allow-origin',
  '*',
  'access-control-expose-headers',
  'X-API-Version, X-Cache, X-Cache-Class, Age, ETag, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After',
];
const JSON_TYPE = 'application/json; charset=utf-8';
const STALE_WARNING = '110 - "Response is Stale"';

/**
 * An entry's prebuilt headers ride on the entry under a symbol (JSON and Redis encoding skip
 * symbol keys, and so does a spread, the property being non-enumerable). Not a WeakMap: every Redis-tier hit decodes a new entry object, and a WeakMap
 * entry per hit made each garbage collection trace ephemerons (GC was 10% of a Redis hit).
 */
const PREBUILT = Symbol('prebuilt headers');
type WithPrebuilt = CacheEntry & { [PREBUILT]?: string[] };

function storedHeaders(entry: WithPrebuilt): string[] {
  let headers = entry[PREBUILT];
  if (!headers) {
    headers = [
      'content-type',
      entry.headers['content-type'] ?? JSON_TYPE,
      'content-length',
      String(entry.body.length),
      'etag',
      entry.etag,
      'cache-control',
      cacheControlFor(entry.cls),
      'x-cache-class',
      entry.cls,
      ...CORS,
    ];
    for (const name of ['warning', 'x-api-version']) {
      const value = entry.headers[name];
      if (value !== undefined) headers.push(name, value);
    }
    // Not enumerable: an entry derived with a spread (a 304's confirmation, a new class) builds its own.
    Object.defineProperty(entry, PREBUILT, { value: headers });
  }
  return headers;
}

const ageOf = (entry: CacheEntry, now: number): string => String(Math.max(0, Math.floor((now - entry.validatedAt) / 1000)));

/** If-None-Match as the upstream reads it: a comma list, W/ and quotes ignored, `*` not special. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header || !etag) return false;
  const wanted = etag.replace(/^W\//, '').replace(/"/g, '');
  return header.split(',').some((candidate) => candidate.trim().replace(/^W\//, '').replace(/"/g, '') === wanted);
}

/**
 * The one writer of a cached entry, for hits and for every other answer from the cache (miss,
 * stale, revalidated): the entry's prebuilt headers, then X-Cache, Age, and the request's own.
 * `requestHeaders`: headers every answer to this request carries (its request id).
 */
export function sendResult(req: IncomingMessage, res: ServerResponse, result: ReadResult, now: number, requestHeaders: string[] = []): number {
  if (result.cacheStatus === 'BYPASS') return sendPassedOn(res, result.passed, requestHeaders);
  const { entry, cacheStatus } = result;
  const conditional = joinedHeader(req, 'if-none-match');
  if (conditional !== undefined && matchesIfNoneMatch(conditional, entry.etag)) {
    const headers = ['etag', entry.etag, 'cache-control', cacheControlFor(entry.cls), 'x-cache-class', entry.cls, ...CORS];
    appendAnswerHeaders(headers, entry, cacheStatus, now, requestHeaders);
    res.writeHead(304, headers);
    res.end();
    return 304;
  }
  const headers = storedHeaders(entry).slice();
  appendAnswerHeaders(headers, entry, cacheStatus, now, requestHeaders);
  res.writeHead(entry.status, headers);
  res.end(entry.body);
  return entry.status;
}

function appendAnswerHeaders(headers: string[], entry: CacheEntry, cacheStatus: CacheStatus, now: number, requestHeaders: string[]): void {
  headers.push('x-cache', cacheStatus, 'age', ageOf(entry, now));
  for (let i = 0; i < requestHeaders.length; i++) headers.push(requestHeaders[i] as string);
  if (cacheStatus === 'STALE') headers.push('warning', STALE_WARNING);
}

/** Not stored: the upstream's status, body and own cache headers, as it sent them. */
function sendPassedOn(res: ServerResponse, passed: PassedOn, requestHeaders: string[]): number {
  const headers = ['content-length', String(passed.body.length), 'x-cache', 'BYPASS', ...CORS, ...requestHeaders];
  for (const [name, value] of Object.entries(passed.headers)) headers.push(name, value);
  res.writeHead(passed.status, headers);
  res.end(passed.body);
  return passed.status;
}

/** An answer the proxy gives itself (validation errors): upstream shape, never cached. */
export function sendError(res: ServerResponse, error: ErrorReply, status: CacheStatus | 'NONE' = 'BYPASS', extra: readonly string[] = []): number {
  const body = Buffer.from(error.body, 'utf8');
  const headers = ['content-type', JSON_TYPE, 'content-length', String(body.length), 'cache-control', 'no-store', ...CORS, ...extra];
  if (status !== 'NONE') headers.push('x-cache', status);
  res.writeHead(error.status, headers);
  res.end(body);
  return error.status;
}

export function sendRedirect(res: ServerResponse, location: string, extra: string[] = []): number {
  res.writeHead(302, ['location', location, 'content-length', '0', 'x-cache', 'BYPASS', ...CORS, ...extra]);
  res.end();
  return 302;
}

/**
 * An answer on a raw socket (an upgrade the proxy does not tunnel): the upstream's error
 * shape, then the connection closes, since the client's next bytes would be WebSocket frames.
 */
export function sendSocketError(socket: Socket, error: ErrorReply, extra: readonly string[] = []): void {
  const body = Buffer.from(error.body, 'utf8');
  const head = [
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}`,
    `content-type: ${JSON_TYPE}`,
    `content-length: ${body.length}`,
    'cache-control: no-store',
    'connection: close',
  ];
  // Our own name/value pairs (retry-after, ratelimit-*): no client text reaches this head.
  for (let i = 0; i + 1 < extra.length; i += 2) head.push(`${extra[i]}: ${extra[i + 1]}`);
  socket.end(Buffer.concat([Buffer.from(`${head.join('\r\n')}\r\n\r\n`, 'latin1'), body]));
}
