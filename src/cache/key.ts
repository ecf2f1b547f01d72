/**
 * Canonical cache keys: `<prefix>:v<schema>:<route-id>:<canonical path and query>` for entries
 * per request, and `<prefix>:v<schema>:tx:<tx id>?<query>` for the one entry per transaction
 * that /tx/{id} and tx/multiple share. The canonical request (routes/validate.ts) already has
 * lower-case hex ids, defaults dropped, sorted params and one form for lists, so equal
 * requests share one key. Keys are bounded because their parts are (routes/): path parameters
 * at most 100 characters, free-text values 256, tx/multiple lists 250 ids, integers at most
 * 309 digits, only declared query keys.
 */
import type { RouteId, RouteSpec } from '../routes/route-spec.js';
import type { CanonicalRequest } from '../routes/validate.js';

/**
 * Bump when the stored entry format or the canonical form changes: old keys are then never read.
 * 2: one entry per transaction (`tx:`), whose body is the /tx/{id} body, replaced the
 * tx/multiple member entries (`tx_multiple_item:`) and /tx/{id}'s per-request entries;
 * members /tx/{id} cannot serve moved to `tx_list_member:`.
 */
export const KEY_SCHEMA_VERSION = 2;

export function routeKey(prefix: string, routeId: RouteId, canonicalPath: string): string {
  return `${prefix}:v${KEY_SCHEMA_VERSION}:${routeId}:${canonicalPath}`;
}

/**
 * One transaction under one query, whichever route fetched it. `query` is the canonical query
 * of /tx/{id}, which is tx/multiple's minus `tx_id`: both routes take the same four parameters
 * (event paging, unanchored, exclude_function_args) with the same defaults, and the upstream
 * answers a found member with the very bytes of /tx/{id} (checked against the recordings).
 * Not-found members keep the id as requested (they are only looked up for lower-case lists).
 */
export function transactionKey(prefix: string, txId: string, query: string): string {
  return `${prefix}:v${KEY_SCHEMA_VERSION}:tx:${txId.toLowerCase()}${query ? `?${query}` : ''}`;
}

/**
 * A tx/multiple member /tx/{id} cannot serve (not found, or a found one in an unexpected
 * form): kept apart from the transaction's key so neither route's answer displaces the
 * other's (see tx-member.ts). The id as requested: only lower-case lists are composed.
 */
export function listMemberKey(prefix: string, txId: string, query: string): string {
  return `${prefix}:v${KEY_SCHEMA_VERSION}:tx_list_member:${txId}${query ? `?${query}` : ''}`;
}

/** The key of a single-reader request: per transaction for /tx/{id}, per request otherwise. */
export function entryKey(prefix: string, route: RouteSpec, request: CanonicalRequest): string {
  const txId = request.facts.txId;
  if (route.entries !== 'transaction' || txId === undefined) return routeKey(prefix, route.id, request.canonicalPath);
  // The canonical path already ends in the serialized canonical query: no second serialization on the hit path.
  const mark = request.canonicalPath.indexOf('?');
  return transactionKey(prefix, txId, mark < 0 ? '' : request.canonicalPath.slice(mark + 1));
}
