/**
 * Reads a purge request's JSON body into what to purge: exactly one of `url`, `route`,
 * `tx_id`, `principal`, `block` or `all`. A URL is decided, matched and validated as the
 * public port would (request-target.ts, the route table, validate.ts), so it names the very
 * keys that request is cached under. Pure: a block's other identifiers are looked up by the
 * caller (admin-api.ts).
 */
import { entryKey, listMemberKey, routeKey, transactionKey } from '../../cache/key.js';
import type { PurgeSelector } from '../../cache/purge.js';
import { createRouteMatcher } from '../../routes/route-matcher.js';
import { isValidPrincipal } from '../../routes/handler-checks.js';
import { ROUTE_BY_ID, ROUTES } from '../../routes/route-table.js';
import { caches, FAMILIES, FAMILY_BY_ID } from '../../surface/families.js';
import { serializeQuery, validateRequest } from '../../routes/validate.js';
import { decideTarget } from '../request-target.js';

export type PurgeRequest =
  | { kind: 'selector'; selector: PurgeSelector }
  /** A block by one identifier: `ref` is a height's digits or a lower-case 0x hash. */
  | { kind: 'block'; ref: string }
  | { kind: 'invalid'; message: string };

const FIELDS = ['url', 'route', 'tx_id', 'principal', 'block', 'all'] as const;
const TX_ID = /^(0x)?[0-9a-fA-F]{64}$/;
const HEIGHT = /^\d{1,15}$/;
const invalid = (message: string): PurgeRequest => ({ kind: 'invalid', message });
const CACHED_FAMILY_IDS = FAMILIES.filter(caches).map((family) => family.id);
const isCachedFamily = (id: string): boolean => {
  const family = FAMILY_BY_ID.get(id);
  return family !== undefined && caches(family);
};
const matchRoute = createRouteMatcher(ROUTES);

export function parsePurgeRequest(body: string, keyPrefix: string): PurgeRequest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return invalid('body must be a JSON object');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return invalid('body must be a JSON object');
  const given = Object.keys(parsed);
  const fields = given.filter((name): name is (typeof FIELDS)[number] => (FIELDS as readonly string[]).includes(name));
  if (fields.length !== 1 || given.length !== 1) return invalid(`body must have exactly one of ${FIELDS.join(', ')}`);
  const field = fields[0]!;
  const value = (parsed as Record<string, unknown>)[field];
  switch (field) {
    case 'all':
      return value === true ? { kind: 'selector', selector: { kind: 'all' } } : invalid('all must be true');
    case 'route':
      // A route id of the 13 routes, or a surface family id (the two never coincide): both are metric labels.
      return typeof value === 'string' && (ROUTE_BY_ID.has(value as never) || isCachedFamily(value))
        ? { kind: 'selector', selector: { kind: 'route', route: value } }
        : invalid(`route must be one of ${[...ROUTES.map((route) => route.id), ...CACHED_FAMILY_IDS].join(', ')}`);
    case 'tx_id':
      if (typeof value !== 'string' || !TX_ID.test(value)) return invalid('tx_id must be a transaction id: 64 hex digits, 0x optional');
      return { kind: 'selector', selector: { kind: 'tx', txId: (value.startsWith('0x') ? value : `0x${value}`).toLowerCase() } };
    case 'principal':
      return typeof value === 'string' && isValidPrincipal(value)
        ? { kind: 'selector', selector: { kind: 'principal', principal: value } }
        : invalid('principal must be a Stacks address or contract id');
    case 'block':
      return blockRef(value);
    case 'url':
      return typeof value === 'string' ? keysOfUrl(value, keyPrefix) : invalid('url must be a string: a path and query as a client sends it');
  }
}

function blockRef(value: unknown): PurgeRequest {
  const text = typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? String(value) : value;
  if (typeof text === 'string' && HEIGHT.test(text)) return { kind: 'block', ref: String(Number(text)) };
  if (typeof text === 'string' && TX_ID.test(text)) return { kind: 'block', ref: (text.startsWith('0x') ? text : `0x${text}`).toLowerCase() };
  return invalid('block must be a block height or a block hash (64 hex digits, 0x optional)');
}

/** The keys a request for `url` is cached under; a URL that is not one of the read routes is refused. */
function keysOfUrl(url: string, prefix: string): PurgeRequest {
  const target = decideTarget(url);
  if (target.kind === 'refused') return invalid(`url '${target.path}' is not a valid request target`);
  const match = matchRoute(target.path);
  if (match.kind !== 'match') return invalid(`url ${target.path} is not one of the cached routes`);
  const outcome = validateRequest(match.route, match.params, target.query);
  if (outcome.kind === 'redirect') return invalid(`url is redirected to ${outcome.location}: purge that url`);
  if (outcome.kind === 'passthrough') return invalid(`url ${target.path} is not cached: it goes to the upstream as sent`);
  if (outcome.kind === 'error') return invalid(`url is not a valid request for ${match.route.id}: ${JSON.parse(outcome.error.body).message as string}`);
  const { request } = outcome;
  const route = match.route;
  if (route.reader !== 'tx-list') return { kind: 'selector', selector: { kind: 'keys', keys: [entryKey(prefix, route, request)] } };
  // tx/multiple: each member where tx-list.ts keeps it, and the whole list (kept whole when an id is mixed-case).
  const itemQuery = new Map(request.query);
  itemQuery.delete('tx_id');
  const queryText = serializeQuery(itemQuery);
  const ids = [...new Set(request.values.tx_id as string[])];
  const keys = [
    routeKey(prefix, route.id, request.canonicalPath),
    ...ids.flatMap((id) => [transactionKey(prefix, id, queryText), listMemberKey(prefix, id, queryText)]),
  ];
  return { kind: 'selector', selector: { kind: 'keys', keys } };
}
