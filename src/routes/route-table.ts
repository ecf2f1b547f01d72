/**
 * The 13 read routes, each as a declarative entry: path, parameters exactly as the upstream
 * declares them (upstream-contract §4, schema order, which decides which error Ajv reports
 * first), the handler-level checks, and how it is cached: its freshness rules (src/cache/policy.ts), its
 * reader, and whether its entries are per request or per transaction (shared by /tx/{id} and
 * tx/multiple).
 */
import { badRequest, internalError } from '../errors.js';
import {
  MAX_FREE_TEXT_LENGTH,
  arrayOf,
  boolean,
  boundedString,
  eventType,
  forwardedInteger,
  heightOrHash,
  integer,
  integerText,
  principal,
  string,
  txId,
  type EventType,
  type HeightOrHash,
} from './param-kinds.js';
import { hexInputError, invalidPrincipalMessage, isExactPrincipal, isValidPrincipal, parseUntilBlock, untilBlockQueryValue } from './handler-checks.js';
import { MAX_PARAM_LENGTH } from './route-matcher.js';
import type { ParamDecl, RequestFacts, ResolveContext, Resolution, RouteSpec, Values } from './route-spec.js';

// Paging limits of the upstream (src/api/pagination.ts, v8+): default 20 everywhere.
const DEFAULT_LIMIT = 20;
const TX_MAX_LIMIT = 50;
const EVENT_MAX_LIMIT = 100;
const CONTRACT_MAX_LIMIT = 50;

const limit = (max: number, zeroMeansDefault = true): ParamDecl => ({
  name: 'limit',
  check: integer({ min: 0, max }),
  defaultValue: DEFAULT_LIMIT,
  zeroMeansDefault,
});
const offset: ParamDecl = { name: 'offset', check: integer({ min: 0 }), defaultValue: 0 };
const eventLimit: ParamDecl = { name: 'event_limit', check: integer({ min: 0, max: EVENT_MAX_LIMIT }), defaultValue: DEFAULT_LIMIT, zeroMeansDefault: true };
const eventOffset: ParamDecl = { name: 'event_offset', check: integer({ min: 0 }), defaultValue: 0 };
const unanchored: ParamDecl = { name: 'unanchored', check: boolean, defaultValue: false };
const excludeFunctionArgs: ParamDecl = { name: 'exclude_function_args', check: boolean, defaultValue: false };
// No length in the upstream's schema: the proxy's bound (param-kinds MAX_FREE_TEXT_LENGTH). The
// handler parses the text itself (parseInt), so it goes as sent; the parsed height keys it.
const untilBlock: ParamDecl = { name: 'until_block', check: boundedString(MAX_FREE_TEXT_LENGTH), forwardAsSent: true };
/**
 * The most ids in one tx/multiple request. The upstream sets no count, but its 16 KiB request
 * head (Node's default) cannot carry more than about 240 ids; this bounds the proxy's work per
 * request and its keys whatever the proxy's own header limit.
 */
export const MAX_TX_IDS = 250;
const principalParam = (name: string): ParamDecl => ({ name, check: principal });

/** Path segments are percent-encoded, so no value can add a `/`, `?` or `#` to the upstream path. */
export const encodeSegment = (value: string): string => encodeURIComponent(value);

/**
 * `.` and `..` as a whole parameter would be resolved away by any URL normaliser between
 * here and the upstream (also when percent-encoded), turning the request into another path.
 */
const DOT_SEGMENT = /^\.{1,2}$/;
const dotSegmentError = (name: string): Resolution => reject(`params/${name} must not be "." or ".."`);

/**
 * An integer path segment in its canonical form: its digits (integerText), unless they would pass
 * the 100 characters the upstream's router takes in a parameter (only past 1e100): then the
 * exponent form, which Ajv reads as the same number, so the request reaches the same handler
 * with the same value.
 */
const integerSegment = (n: number): string => {
  const digits = integerText(n);
  return digits.length <= MAX_PARAM_LENGTH ? digits : String(n);
};

/** The path only: the validator appends the canonical query (sorted, defaults dropped). */
const request = (path: string, facts: RequestFacts = {}): Resolution => ({ kind: 'request', path, facts });

/**
 * A request whose last path segment is an integer: keyed by its canonical form, forwarded with
 * the client's digits (param-kinds forwardedInteger; at most 100 characters, as every parameter).
 */
function integerRequest(prefix: string, n: number, sent: string, facts: RequestFacts): Resolution {
  const canonical = integerSegment(n);
  return { kind: 'request', path: `${prefix}${canonical}`, forwardPath: `${prefix}${forwardedInteger(sent, canonical)}`, facts };
}
const reject = (message: string): Resolution => ({ kind: 'error', error: badRequest(message) });

/** Routes 1 and 3: principal check, then until_block (upstream handler order). */
function resolveBalance(suffix: string) {
  return (v: Values, { query }: ResolveContext): Resolution => {
    const p = v.principal as string;
    if (!isValidPrincipal(p)) return reject(invalidPrincipalMessage(p));
    const isUnanchored = v.unanchored === true;
    const until = parseUntilBlock(v.until_block as string | undefined, isUnanchored);
    if (typeof until === 'string') return reject(until);
    setOrDelete(query, 'until_block', untilBlockQueryValue(until));
    return request(`/extended/v1/address/${encodeSegment(p)}/${suffix}`, { unanchored: isUnanchored, untilBlock: until, ...aboutPrincipal(p) });
  };
}

/** Rewrites one canonical query value (where the handler re-parses what the schema let through). */
function setOrDelete(query: Map<string, string>, name: string, value: string | undefined): void {
  if (value === undefined) query.delete(name);
  else query.set(name, value);
}

const lowerHex = (id: string): string => id.toLowerCase();

/**
 * The principal an address route's answer is about (RequestFacts.principal), for exactly one
 * principal only: text after a second "." names no principal a broadcast or block could name,
 * so such an entry stays untagged (decided by tip and TTL alone, as before issue 15).
 */
const aboutPrincipal = (p: string): Pick<RequestFacts, 'principal'> => (isExactPrincipal(p) ? { principal: p } : {});

export const ROUTES: readonly RouteSpec[] = [
  {
    id: 'address_stx_balance',
    path: '/extended/v1/address/:principal/stx',
    deprecated: true,
    freshness: 'principal_balance',
    reader: 'single',
    entries: 'request',
    params: [principalParam('principal')],
    query: [unanchored, untilBlock],
    resolve: resolveBalance('stx'),
  },
  {
    id: 'mempool_fees',
    path: '/extended/v2/mempool/fees',
    deprecated: false,
    freshness: 'mempool',
    reader: 'single',
    entries: 'request',
    params: [],
    query: [],
    resolve: () => request('/extended/v2/mempool/fees'),
    // Percentiles of the fee rates of the whole pending set, which the upstream recomputes as it
    // changes (a broadcast, a block): a sample-based estimate the issue allows to lag by 5 s.
    lagsMempool: true,
  },
  {
    id: 'address_balances',
    path: '/extended/v1/address/:principal/balances',
    deprecated: true,
    freshness: 'principal_balance',
    reader: 'single',
    entries: 'request',
    params: [principalParam('principal')],
    query: [unanchored, untilBlock],
    resolve: resolveBalance('balances'),
  },
  {
    id: 'tx_multiple',
    path: '/extended/v1/tx/multiple',
    deprecated: false,
    freshness: 'transaction_list',
    reader: 'tx-list',
    entries: 'transaction',
    params: [],
    query: [{ name: 'tx_id', check: arrayOf(txId, { splitCommas: true, maxItems: MAX_TX_IDS }) }, eventLimit, eventOffset, unanchored, excludeFunctionArgs],
    requiredQuery: ['tx_id'],
    resolve: (v) => {
      const ids = v.tx_id as string[];
      for (const id of ids) {
        const message = hexInputError(id);
        if (message) return reject(message);
      }
      return request('/extended/v1/tx/multiple', { unanchored: v.unanchored === true, identity: { kind: 'transaction_list', txIds: ids } });
    },
  },
  {
    id: 'mempool_stats',
    path: '/extended/v1/tx/mempool/stats',
    deprecated: false,
    freshness: 'mempool',
    reader: 'single',
    entries: 'request',
    params: [],
    query: [],
    resolve: () => request('/extended/v1/tx/mempool/stats'),
  },
  {
    id: 'tx_events',
    path: '/extended/v1/tx/events',
    deprecated: true,
    freshness: 'tx_events',
    reader: 'single',
    entries: 'request',
    params: [],
    query: [
      { name: 'tx_id', check: txId },
      principalParam('address'),
      { name: 'type', check: arrayOf(eventType, { splitCommas: true }) },
      offset,
      limit(EVENT_MAX_LIMIT),
    ],
    resolve: (v, { query }) => {
      const address = v.address as string | undefined;
      const rawTx = v.tx_id as string | undefined;
      if (!address && !rawTx) return reject("can not find 'address' or 'tx_id' in the request");
      if (address && rawTx) return reject("can't handle both 'address' and 'tx_id' in the same request");
      if (address && !isValidPrincipal(address)) return reject(invalidPrincipalMessage(address));
      let eventsOfTx: string | undefined;
      if (rawTx) {
        eventsOfTx = lowerHex(rawTx.startsWith('0x') ? rawTx : `0x${rawTx}`);
        query.set('tx_id', eventsOfTx);
      }
      // The upstream filters with SQL IN: order and repeats of `type` do not change the answer.
      const types = v.type as EventType[] | undefined;
      if (types) query.set('type', [...new Set(types)].sort().join(','));
      return request('/extended/v1/tx/events', { eventsOfTx });
    },
  },
  {
    id: 'tx_by_id',
    path: '/extended/v1/tx/:tx_id',
    deprecated: true,
    freshness: 'transaction',
    reader: 'single',
    entries: 'transaction',
    params: [{ name: 'tx_id', check: txId }],
    query: [eventLimit, eventOffset, unanchored, excludeFunctionArgs],
    resolve: (v, { rawQuery }) => {
      const id = v.tx_id as string;
      if (!id.startsWith('0x')) return { kind: 'redirect', location: `/extended/v1/tx/0x${id}${rawQuery ? `?${rawQuery}` : ''}` };
      const tx = lowerHex(id);
      return request(`/extended/v1/tx/${tx}`, { unanchored: v.unanchored === true, txId: tx, identity: { kind: 'transaction', txId: tx } });
    },
  },
  {
    id: 'block',
    path: '/extended/v2/blocks/:height_or_hash',
    deprecated: false,
    freshness: 'block',
    reader: 'single',
    entries: 'request',
    params: [{ name: 'height_or_hash', check: heightOrHash }],
    query: [],
    resolve: (v, { params }) => {
      const h = v.height_or_hash as HeightOrHash;
      if (h.kind === 'latest') return request('/extended/v2/blocks/latest', { latest: true, identity: { kind: 'block', ref: 'latest' } });
      if (h.kind === 'height') {
        // The schema lets negative heights through; the handler then throws a plain Error.
        if (h.height < 0) return { kind: 'error', error: internalError('Invalid block height or hash') };
        return integerRequest('/extended/v2/blocks/', h.height, params.height_or_hash ?? '', { identity: { kind: 'block', ref: { height: h.height } } });
      }
      const hash = lowerHex(h.hash.startsWith('0x') ? h.hash : `0x${h.hash}`);
      return request(`/extended/v2/blocks/${hash}`, { identity: { kind: 'block', ref: { hash } } });
    },
  },
  {
    id: 'contract_events',
    path: '/extended/v1/contract/:contract_id/events',
    deprecated: true,
    freshness: 'chain_history',
    reader: 'single',
    entries: 'request',
    params: [{ name: 'contract_id', check: string }],
    query: [limit(CONTRACT_MAX_LIMIT), offset],
    resolve: (v) => {
      const contractId = v.contract_id as string;
      if (DOT_SEGMENT.test(contractId)) return dotSegmentError('contract_id');
      return request(`/extended/v1/contract/${encodeSegment(contractId)}/events`);
    },
  },
  {
    id: 'address_transactions',
    path: '/extended/v1/address/:principal/transactions',
    deprecated: true,
    freshness: 'address_history',
    reader: 'single',
    entries: 'request',
    params: [principalParam('principal')],
    query: [
      limit(TX_MAX_LIMIT),
      offset,
      // height=0 is falsy upstream and ignored, so it canonicalises to absent.
      { name: 'height', check: integer(), defaultValue: 0 },
      unanchored,
      untilBlock,
      excludeFunctionArgs,
    ],
    resolve: (v, { query }) => {
      const p = v.principal as string;
      if (!isValidPrincipal(p)) return reject(invalidPrincipalMessage(p));
      const isUnanchored = v.unanchored === true;
      const until = parseUntilBlock(v.until_block as string | undefined, isUnanchored);
      if (typeof until === 'string') return reject(until);
      const height = v.height as number | undefined;
      // height=0 is falsy upstream and ignored; until_block counts only when it parsed to a block.
      const atHeight = height ? height : undefined;
      if (atHeight !== undefined && (until.kind === 'height' || until.kind === 'hash')) {
        return reject("can't handle until_block and block_height in the same request");
      }
      setOrDelete(query, 'until_block', untilBlockQueryValue(until));
      return request(`/extended/v1/address/${encodeSegment(p)}/transactions`, {
        unanchored: isUnanchored,
        untilBlock: until,
        atHeight,
        ...aboutPrincipal(p),
      });
    },
  },
  {
    id: 'address_transactions_v2',
    path: '/extended/v2/addresses/:address/transactions',
    deprecated: true,
    freshness: 'chain_history',
    reader: 'single',
    entries: 'request',
    params: [principalParam('address')],
    // limit=0 really means zero rows on this route.
    query: [limit(TX_MAX_LIMIT, false), offset, excludeFunctionArgs],
    undeclaredQuery: ['cursor'],
    resolve: (v) => {
      const address = v.address as string;
      // The upstream checks this address only against its schema, whose pattern has no end
      // anchor: any text after 28 c32 characters passes (`SP…%2F..%2Fx`), names no principal, and
      // gets an empty page. Only a real principal is cached; anything else goes to the upstream
      // as sent, uncached, so no key is made from such a suffix.
      if (!isExactPrincipal(address)) return { kind: 'passthrough' };
      return request(`/extended/v2/addresses/${encodeSegment(address)}/transactions`, aboutPrincipal(address));
    },
  },
  {
    id: 'block_by_burn_height',
    path: '/extended/v1/block/by_burn_block_height/:burn_block_height',
    deprecated: true,
    freshness: 'burn_block',
    reader: 'single',
    entries: 'request',
    params: [{ name: 'burn_block_height', check: integer({ min: 0 }) }],
    query: [],
    resolve: (v, { params }) => {
      const burnHeight = v.burn_block_height as number;
      return integerRequest('/extended/v1/block/by_burn_block_height/', burnHeight, params.burn_block_height ?? '', {
        identity: { kind: 'burn_block', burnHeight },
      });
    },
  },
  {
    id: 'tx_with_transfers',
    path: '/extended/v1/address/:principal/:tx_id/with_transfers',
    deprecated: true,
    freshness: 'tx_with_transfers',
    reader: 'single',
    entries: 'request',
    params: [principalParam('principal'), { name: 'tx_id', check: string }],
    query: [],
    resolve: (v) => {
      const p = v.principal as string;
      if (!isValidPrincipal(p)) return reject(invalidPrincipalMessage(p));
      const raw = v.tx_id as string;
      // The 0x prefix the handler adds means this segment is never "." or "..".
      const prefixed = raw.startsWith('0x') ? raw : `0x${raw}`;
      // Only a well-formed id is case-folded; anything else goes as given (the upstream answers 500).
      const wellFormed = /^0x[0-9a-fA-F]{64}$/.test(prefixed);
      const id = wellFormed ? lowerHex(prefixed) : prefixed;
      // The principal is exempt: the body names the tx, and the principal only as one of its parties.
      const identity = wellFormed ? ({ kind: 'tx_with_transfers', txId: id } as const) : undefined;
      return request(`/extended/v1/address/${encodeSegment(p)}/${encodeSegment(id)}/with_transfers`, { identity, ...aboutPrincipal(p) });
    },
  },
];

export const ROUTE_BY_ID = new Map(ROUTES.map((route) => [route.id, route]));
