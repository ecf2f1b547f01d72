/** The shape of one declarative route entry; see route-table.ts for the 13 of them. */
import type { ErrorReply } from '../errors.js';
import type { Check } from './param-kinds.js';
import type { UntilBlock } from './handler-checks.js';

export type RouteId =
  | 'address_stx_balance'
  | 'mempool_fees'
  | 'address_balances'
  | 'tx_by_id'
  | 'block'
  | 'tx_multiple'
  | 'mempool_stats'
  | 'tx_events'
  | 'contract_events'
  | 'address_transactions'
  | 'address_transactions_v2'
  | 'block_by_burn_height'
  | 'tx_with_transfers';

/** How a route's responses are classified (src/cache/policy.ts holds the rules). */
export type PolicyKind =
  | 'principal_balance'
  | 'mempool'
  | 'transaction'
  | 'block'
  | 'tx_multiple'
  | 'tx_events'
  | 'chain_history'
  | 'address_history'
  | 'burn_block'
  | 'tx_with_transfers';

export interface ParamDecl {
  name: string;
  check: Check<unknown>;
  /** Dropped from the canonical request when equal to this (the upstream fills it in). */
  defaultValue?: unknown;
  /** The upstream treats a falsy value as the default (`getPagingQueryLimit`). */
  zeroMeansDefault?: boolean;
}

/** What the cache policy needs to know about the request itself. */
export interface RequestFacts {
  unanchored?: boolean;
  untilBlock?: UntilBlock;
  /** `height` filter of the v1 address transactions route (0 is ignored upstream). */
  atHeight?: number;
  /** `/extended/v2/blocks/latest`. */
  latest?: boolean;
  /** tx/events by tx id: its finality follows the transaction's. */
  eventsOfTx?: string;
}

export type Resolution =
  | { kind: 'request'; path: string; facts: RequestFacts }
  | { kind: 'error'; error: ErrorReply }
  /** The upstream answers some inputs with a redirect; the proxy gives the same one. */
  | { kind: 'redirect'; location: string };

export type Values = Record<string, unknown>;

export interface ResolveContext {
  /** The client's query string as sent (for redirects that must repeat it). */
  rawQuery: string;
  /** Canonical query values (defaults dropped), which resolve may rewrite. */
  query: Map<string, string>;
}

export interface RouteSpec {
  id: RouteId;
  /** Express path; registration order matters (static segments before parameters). */
  path: string;
  /** Upstream marks it deprecated: it sends a `Warning` header the proxy forwards. */
  deprecated: boolean;
  policy: PolicyKind;
  params: ParamDecl[];
  query: ParamDecl[];
  requiredQuery?: string[];
  /** Query keys the upstream reads although its schema does not declare them. */
  undeclaredQuery?: string[];
  /** The handler-level checks and the canonical upstream path, from validated values. */
  resolve(values: Values, ctx: ResolveContext): Resolution;
}
