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

/** Which freshness rules classify a route's answers (src/cache/policy.ts holds the rules). */
export type FreshnessRules =
  | 'principal_balance'
  | 'mempool'
  | 'transaction'
  | 'block'
  /** A tx/multiple answer: as fresh as its least fresh member. */
  | 'transaction_list'
  | 'tx_events'
  | 'chain_history'
  | 'address_history'
  | 'burn_block'
  | 'tx_with_transfers';

/**
 * Which reader serves the route: `single` looks up one entry per request (cache/read-path.ts);
 * `tx-list` builds tx/multiple from one entry per transaction (cache/tx-list.ts).
 */
export type ReaderKind = 'single' | 'tx-list';

/**
 * Where the route's answers are stored: one entry per canonical request, or one per
 * transaction and query, shared by /tx/{id} and the members of tx/multiple (cache/key.ts).
 */
export type EntryScope = 'request' | 'transaction';

/**
 * The Warning the upstream sends on routes it marks deprecated (upstream-contract "Deprecated
 * routes get `Warning: 299 ...`"). The proxy forwards the upstream's own header; it needs this
 * text only for a /tx/{id} entry built from a tx/multiple answer, which carries no Warning.
 */
export const UPSTREAM_DEPRECATION_WARNING = '299 - "Deprecated: See https://docs.hiro.so/stacks/api for more information"';

export interface ParamDecl {
  name: string;
  check: Check<unknown>;
  /** Dropped from the canonical request when equal to this (the upstream fills it in). */
  defaultValue?: unknown;
  /** The upstream treats a falsy value as the default (`getPagingQueryLimit`). */
  zeroMeansDefault?: boolean;
  /**
   * The upstream's handler reads the text itself (until_block: `parseInt`), so the client's text
   * is forwarded as sent; the canonical form the route sets in the query only keys the request.
   */
  forwardAsSent?: boolean;
}

/**
 * The resource a request names, which the upstream's answer must be about (cache/identity.ts):
 * a transaction (/tx/{id}: the body's tx_id; with_transfers: its tx.tx_id), the ids of a
 * tx/multiple request, a block by height, hash or index hash (`latest`: any block), a burn block.
 */
export type AnswerIdentity =
  | { kind: 'transaction'; txId: string }
  | { kind: 'tx_with_transfers'; txId: string }
  | { kind: 'transaction_list'; txIds: readonly string[] }
  | { kind: 'block'; ref: { height: number } | { hash: string } | 'latest' }
  | { kind: 'burn_block'; burnHeight: number };

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
  /** /tx/{id}: the lower-case id its per-transaction entry is stored under. */
  txId?: string;
  /** What the answer must be about; absent where the body carries nothing checkable. */
  identity?: AnswerIdentity;
  /**
   * The principal the answer is about (address routes, only an exact principal): its entry is
   * tagged with it, so a broadcast or block that touched it makes the entry stale.
   */
  principal?: string;
}

export type Resolution =
  /** `path`: the canonical path (the cache key's); `forwardPath`: what is forwarded, when it differs. */
  | { kind: 'request'; path: string; forwardPath?: string; facts: RequestFacts }
  | { kind: 'error'; error: ErrorReply }
  /** The upstream answers some inputs with a redirect; the proxy gives the same one. */
  | { kind: 'redirect'; location: string }
  /**
   * Input the upstream accepts but no bounded canonical form can key: not cached, the
   * passthrough forwards it as sent and the client gets the upstream's own answer.
   */
  | { kind: 'passthrough' };

export type Values = Record<string, unknown>;

export interface ResolveContext {
  /** The client's query string as sent (for redirects that must repeat it). */
  rawQuery: string;
  /** Canonical query values (defaults dropped), which resolve may rewrite. */
  query: Map<string, string>;
  /** The path parameters as sent (percent-decoded). */
  params: Record<string, string>;
}

export interface RouteSpec {
  id: RouteId;
  /**
   * The upstream's path for it (`:name` parameters). Which path reaches it is decided as the
   * upstream's router decides, among all the upstream's routes (route-matcher.ts), in any order.
   */
  path: string;
  /** Upstream marks it deprecated: it sends a `Warning` header the proxy forwards. */
  deprecated: boolean;
  /** How the route is cached: its freshness rules, its reader, and the scope of its entries. */
  freshness: FreshnessRules;
  reader: ReaderKind;
  entries: EntryScope;
  params: ParamDecl[];
  query: ParamDecl[];
  requiredQuery?: string[];
  /** Query keys the upstream reads although its schema does not declare them. */
  undeclaredQuery?: string[];
  /** The handler-level checks and the canonical upstream path, from validated values. */
  resolve(values: Values, ctx: ResolveContext): Resolution;
  /**
   * A mempool-wide estimate that may lag the mempool (and the tip) by up to
   * `cache.ttl.mempoolFeesMaxAgeMs`: its entries are marked `lagsMempool` (policy.ts `evaluate`).
   */
  lagsMempool?: true;
}
