/**
 * Error bodies in the upstream's own shape (Fastify's default serializer: keys
 * `statusCode, code?, error, message` in that order), so that a client cannot tell
 * whether the proxy or the upstream answered. See upstream-contract §1.3. And the one
 * table from a failure to reach the upstream to the answer a client gets.
 */
import type { UpstreamErrorKind } from './upstream/errors.js';

const REASON: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  405: 'Method Not Allowed',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** The reason phrase an error body's `error` carries for `status`. */
export const reasonOf = (status: number): string => REASON[status] ?? 'Error';

export interface ErrorReply {
  status: number;
  body: string;
}

function reply(status: number, message: string, code?: string): ErrorReply {
  const error = reasonOf(status);
  const payload = code === undefined ? { statusCode: status, error, message } : { statusCode: status, code, error, message };
  return { status, body: JSON.stringify(payload) };
}

/** Ajv schema-validation failure (carries `code`). */
export const validationError = (message: string): ErrorReply => reply(400, message, 'FST_ERR_VALIDATION');

/** `InvalidRequestError` thrown by an upstream handler (no `code`). */
export const badRequest = (message: string): ErrorReply => reply(400, message);

/** The admin API without its bearer token, or with a wrong one. */
export const unauthorized = (message: string): ErrorReply => reply(401, message);

/** A proxy component the request needs did not answer (the admin API's Redis purge). */
export const unavailable = (message: string): ErrorReply => reply(503, message);

/** A deterministic upstream handler failure (for example a negative block height). */
export const internalError = (message: string): ErrorReply => reply(500, message);

/** The URL could not be decoded; Fastify answers this before routing. */
export const badUrl = (path: string): ErrorReply => reply(400, `'${path}' is not a valid url component`, 'FST_ERR_BAD_URL');

export const methodNotAllowed = (method: string, path: string, allowed = 'GET and HEAD'): ErrorReply =>
  reply(405, `Method ${method} is not allowed on ${path}; this route answers ${allowed}`);

/**
 * Fastify's own unknown-route answer, which has its own key order (`message` first). `url`
 * is the request target as sent, query included, the way Fastify quotes it.
 */
export const routeNotFound = (method: string, url: string): ErrorReply => ({
  status: 404,
  body: JSON.stringify({ message: `Route ${method}:${url} not found`, error: 'Not Found', statusCode: 404 }),
});

/** Why the proxy could not get an answer from the upstream: a read's failure, or a passthrough's. */
export type FailureKind = UpstreamErrorKind | 'passthrough';

export interface FailureReply extends ErrorReply {
  /** Extra response headers, as name/value pairs for writeHead. */
  headers: readonly string[];
}

// Clients should come back soon: upstream queues drain within seconds.
const OVERLOAD_RETRY_AFTER_SECONDS = '1';

const failure = (status: number, message: string, headers: readonly string[] = []): FailureReply => ({ ...reply(status, message), headers });
const UNAVAILABLE = failure(502, 'The upstream API is unavailable');

/** The one table from failure kind to answer; bodies are built once. */
const FAILURE_REPLIES: Readonly<Record<FailureKind, FailureReply>> = {
  timeout: failure(504, 'The upstream API did not answer in time'),
  overloaded: failure(503, 'The upstream API is overloaded; retry shortly', ['retry-after', OVERLOAD_RETRY_AFTER_SECONDS]),
  connect: UNAVAILABLE,
  reset: UNAVAILABLE,
  '5xx': UNAVAILABLE,
  invalid: UNAVAILABLE,
  passthrough: UNAVAILABLE,
  // Retry-After is added per answer: the wait the upstreams asked for.
  rate_limited: failure(503, 'The upstream API is rate limiting this proxy; retry after the time in Retry-After'),
};

/**
 * The answer for a failure kind. `retryAfterMs` (a rate limit's remaining pause) becomes a
 * Retry-After in whole seconds, at least 1, so that clients wait out what the upstream asked.
 */
export function failureReply(kind: FailureKind, retryAfterMs?: number): FailureReply {
  const reply = FAILURE_REPLIES[kind];
  if (kind !== 'rate_limited') return reply;
  const seconds = Math.max(1, Math.ceil((retryAfterMs ?? 0) / 1000));
  return { ...reply, headers: ['retry-after', String(seconds)] };
}

// --- Rate limits and client API keys (issue 9): the same shape, built here without REASON. ---

/** Over the client's budget: `retryAfterSeconds` until its window resets (at least 1). */
export const tooManyRequests = (message: string, retryAfterSeconds: number): FailureReply => ({
  status: 429,
  body: JSON.stringify({ statusCode: 429, error: 'Too Many Requests', message }),
  headers: ['retry-after', String(Math.max(1, retryAfterSeconds))],
});

/** An X-API-Key that is not in API_KEYS_FILE. */
export const UNKNOWN_API_KEY: ErrorReply = {
  status: 401,
  body: JSON.stringify({ statusCode: 401, error: 'Unauthorized', message: 'Unknown API key: the X-API-Key header does not name a key this proxy knows' }),
};
