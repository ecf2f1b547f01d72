/**
 * Runs one route's declared checks over a request, in the upstream's order (path params,
 * then the query's required keys, then each query key in schema order, then the handler's
 * own checks), and produces the upstream's error, its redirect, the request (its canonical form
 * for the key and the form forwarded), or, for input the route does not cache, the passthrough.
 */
import { parse as parseQueryString } from 'node:querystring';
import { validationError, type ErrorReply } from '../errors.js';
import { MAX_FREE_TEXT_LENGTH, exceedsLength, forwardedInteger, integerText, type ParamError, type RawValue } from './param-kinds.js';
import type { RequestFacts, RouteSpec, Values } from './route-spec.js';

export interface CanonicalRequest {
  /** Canonical path and query: with the route id, the cache key. */
  canonicalPath: string;
  /**
   * The path and query the upstream gets: the canonical ones, except that integers keep the
   * client's digits and until_block its text (the upstream reads them as the canonical form).
   */
  upstreamPath: string;
  /** Canonical query (tx/multiple item keys use it without the route's list parameter). */
  query: Map<string, string>;
  /** `query` as forwarded: the client's spellings where upstreamPath keeps them. */
  forwardedQuery: Map<string, string>;
  values: Values;
  facts: RequestFacts;
}

export type ValidationOutcome =
  { kind: 'request'; request: CanonicalRequest } | { kind: 'error'; error: ErrorReply } | { kind: 'redirect'; location: string } | { kind: 'passthrough' };

const formatErrors = (location: string, errors: ParamError[]): string => errors.map((e) => `${location}${e.subpath} ${e.message}`).join(', ');

/** Commas stay literal: the upstream splits list values on them after decoding either way. */
const encodeValue = (value: string): string => encodeURIComponent(value).replace(/%2C/gi, ',');

export function serializeQuery(query: Map<string, string>): string {
  return [...query.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, value]) => `${encodeURIComponent(key)}=${encodeValue(value)}`)
    .join('&');
}

/** Integers keep their digits (never `1e+21`); lists are one comma-joined value. */
function canonicalValue(value: unknown): string {
  if (typeof value === 'number') return integerText(value);
  return Array.isArray(value) ? value.join(',') : String(value);
}

function withQuery(path: string, query: Map<string, string>): string {
  const search = serializeQuery(query);
  return search ? `${path}?${search}` : path;
}

export function validateRequest(route: RouteSpec, rawParams: Record<string, string>, rawQuery: string): ValidationOutcome {
  const values: Values = {};
  for (const decl of route.params) {
    const result = decl.check(rawParams[decl.name] ?? '');
    if (!result.ok) return { kind: 'error', error: validationError(formatErrors(`params/${decl.name}`, result.errors)) };
    values[decl.name] = result.value;
  }

  // No key limit (node's default stops at 1000 and would drop what follows; Fastify does not).
  const parsed = parseQueryString(rawQuery, '&', '=', { maxKeys: 0 }) as Record<string, RawValue>;
  for (const name of route.requiredQuery ?? []) {
    if (parsed[name] === undefined) {
      return { kind: 'error', error: validationError(`querystring must have required property '${name}'`) };
    }
  }

  const query = new Map<string, string>();
  // The client's spelling of each value forwarded as sent (integers as digits, forwardAsSent text).
  const sent = new Map<string, string>();
  for (const decl of route.query) {
    const raw = parsed[decl.name];
    if (raw === undefined) continue;
    const result = decl.check(raw);
    if (!result.ok) return { kind: 'error', error: validationError(formatErrors(`querystring/${decl.name}`, result.errors)) };
    values[decl.name] = result.value;
    const isDefault = result.value === decl.defaultValue || (decl.zeroMeansDefault === true && result.value === 0);
    if (isDefault) continue;
    const canonical = canonicalValue(result.value);
    query.set(decl.name, canonical);
    // A value that passed its check is one text (an array only where the check takes lists).
    const text = typeof raw === 'string' ? raw : raw.join(',');
    if (typeof result.value === 'number') sent.set(decl.name, forwardedInteger(text, canonical));
    else if (decl.forwardAsSent) sent.set(decl.name, text);
  }
  for (const name of route.undeclaredQuery ?? []) {
    const raw = parsed[name];
    if (raw === undefined) continue;
    // One value only: a repeated undeclared key has no single form to forward faithfully.
    if (typeof raw !== 'string') return { kind: 'error', error: validationError(`querystring/${name} must be string`) };
    if (exceedsLength(raw, MAX_FREE_TEXT_LENGTH)) {
      return { kind: 'error', error: validationError(`querystring/${name} must NOT have more than ${MAX_FREE_TEXT_LENGTH} characters`) };
    }
    query.set(name, raw);
  }

  const resolution = route.resolve(values, { rawQuery, query, params: rawParams });
  if (resolution.kind !== 'request') return resolution;
  const forwardedQuery = new Map([...query].map(([name, value]) => [name, sent.get(name) ?? value]));
  return {
    kind: 'request',
    request: {
      canonicalPath: withQuery(resolution.path, query),
      upstreamPath: withQuery(resolution.forwardPath ?? resolution.path, forwardedQuery),
      query,
      forwardedQuery,
      values,
      facts: resolution.facts,
    },
  };
}
