/**
 * Canonical cache keys: `<prefix>:v<schema>:<route-id>:<canonical path and query>`.
 * The canonical request (routes/validate.ts) already has lower-case hex ids, defaults
 * dropped, sorted params and one form for lists, so equal requests share one key.
 */
import type { RouteId } from '../routes/route-spec.js';

/** Bump when the stored entry format or the canonical form changes: old keys are then never read. */
export const KEY_SCHEMA_VERSION = 1;

export function routeKey(prefix: string, routeId: RouteId, upstreamPath: string): string {
  return `${prefix}:v${KEY_SCHEMA_VERSION}:${routeId}:${upstreamPath}`;
}

/**
 * One transaction of a tx/multiple answer, stored apart so that later lists can reuse it.
 * `itemQuery` is the canonical query minus `tx_id` (event paging changes the tx's body).
 */
export function txListItemKey(prefix: string, txId: string, itemQuery: string): string {
  return `${prefix}:v${KEY_SCHEMA_VERSION}:tx_multiple_item:${txId.toLowerCase()}${itemQuery ? `?${itemQuery}` : ''}`;
}
