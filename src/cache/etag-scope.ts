/**
 * Which upstream answers share one ETag. The upstream computes a route's ETag from the resource
 * its path names, never from the query (shared/spec/upstream-contract.md §3): every page, limit or
 * `until_block` of one principal's history gets the same ETag, and the v1 and v2 history routes
 * compute it alike (`principal`), as do `/stx` and `/balances` (`principal_mempool`). So when the
 * upstream confirms an ETag for one URL of a scope, it would answer 304 to every other URL of that
 * scope holding the same ETag at that moment (see resource-validations.ts). Pure.
 */
import type { RouteSpec } from '../routes/route-spec.js';
import type { CanonicalRequest } from '../routes/validate.js';

/** The upstream's ETag type of each route whose ETag names a resource shared across its URLs. */
const SCOPED: Readonly<Record<string, { type: string; param: string }>> = {
  address_transactions: { type: 'principal', param: 'principal' },
  address_transactions_v2: { type: 'principal', param: 'address' },
  address_stx_balance: { type: 'principal_mempool', param: 'principal' },
  address_balances: { type: 'principal_mempool', param: 'principal' },
};

/** The scope a request's upstream ETag belongs to, or undefined where it is not shared. */
export function etagScope(route: RouteSpec, request: CanonicalRequest): string | undefined {
  const scoped = SCOPED[route.id];
  if (!scoped) return undefined;
  const resource = request.values[scoped.param];
  return typeof resource === 'string' ? `${scoped.type}:${resource}` : undefined;
}
