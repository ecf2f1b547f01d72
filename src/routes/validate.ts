/**
 * Runs one route's declared checks over a request, in the upstream's order (path params,
 * then the query's required keys, then each query key in schema order, then the handler's
 * own checks), and produces either the upstream's error or the canonical request.
 */
import { parse as parseQueryString } from 'node:querystring';
import { validationError, type ErrorReply } from '../errors.js';
import { MAX_FREE_TEXT_LENGTH, exceedsLength, integerText, type ParamError, type RawValue } from './param-kinds.js';
import type { RequestFacts, RouteSpec, Values } from './route-spec.js';

export interface CanonicalRequest {
  /** Canonical path and query: the upstream URL and, with the route id, the cache key. */
  upstreamPath: string;
  /** Canonical query without the route's list parameter (tx/multiple item keys use it). */
  query: Map<string, string>;
  values: Values;
  facts: RequestFacts;
}

export type ValidationOutcome =
  | { kind: 'request'; request: CanonicalRequest }
  | { kind: 'error'; error: ErrorReply }
  | { kind: 'redirect'; location: string };

const formatErrors = (location: string, errors: ParamError[]): string =>
  errors.map((e) => `${location}${e.subpath} ${e.message}`).join(', ');

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

export function validateRequest(
  route: RouteSpec,
  rawParams: Record<string, string>,
  rawQuery: string,
): ValidationOutcome {
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
  for (const decl of route.query) {
    const raw = parsed[decl.name];
    if (raw === undefined) continue;
    const result = decl.check(raw);
    if (!result.ok) return { kind: 'error', error: validationError(formatErrors(`querystring/${decl.name}`, result.errors)) };
    values[decl.name] = result.value;
    const isDefault = result.value === decl.defaultValue || (decl.zeroMeansDefault === true && result.value === 0);
    if (!isDefault) query.set(decl.name, canonicalValue(result.value));
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

  const resolution = route.resolve(values, { rawQuery, query });
  if (resolution.kind !== 'request') return resolution;
  const search = serializeQuery(query);
  return {
    kind: 'request',
    request: {
      upstreamPath: search ? `${resolution.path}?${search}` : resolution.path,
      query,
      values,
      facts: resolution.facts,
    },
  };
}
