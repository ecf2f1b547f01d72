/** What a route returns (a Reply, written later by respond.ts) and the upstream's standard answers. */
import { STATUS_CODES } from 'node:http';
import type { FakeChain } from './chain.js';

export const JSON_TYPE = 'application/json; charset=utf-8';

export interface RequestContext {
  chain: FakeChain;
  method: string;
  url: string;
  /** Without the query and without a trailing slash (`ignoreTrailingSlash`, §1.1). */
  path: string;
  query: string;
  /** The route pattern's captures. */
  params: string[];
}

export interface Reply {
  status: number;
  body: string;
  contentType?: string;
  location?: string;
  /** The unquoted ETag the upstream would compute; undefined means none (and `no-store`). */
  etag?: string;
}

export function routeNotFound(method: string, url: string): Reply {
  // Fastify's default 404 handler, with its own key order.
  const body = { message: `Route ${method}:${url} not found`, error: 'Not Found', statusCode: 404 };
  return jsonReply(404, JSON.stringify(body));
}

export function jsonReply(status: number, body: string, etag?: string): Reply {
  return { status, body, contentType: JSON_TYPE, etag };
}

/** Fastify's default error serialization: `{statusCode, error, message}` (§1.3). */
export function errorBody(status: number, message: string): string {
  return JSON.stringify({ statusCode: status, error: STATUS_CODES[status] ?? 'Error', message });
}

export function validationError(message: string): Reply {
  const body = { statusCode: 400, code: 'FST_ERR_VALIDATION', error: 'Bad Request', message };
  return jsonReply(400, JSON.stringify(body));
}
