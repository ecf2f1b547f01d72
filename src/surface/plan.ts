/**
 * Request planning for the wider read surface (pure): which family a decided request target
 * reaches (matched as the upstream's router would, after the 13 routes), what of the request
 * the answer can depend on, and the cache key. The proxy forwards these requests as sent and
 * lets the upstream validate them, so the key is the forwarded path and query as they are (no
 * normalisation: when in doubt the upstream may read two spellings differently), plus the
 * method, the family, the canonical JSON body of a POST read, and the tip for tip-keyed
 * families. Keys are bounded: a long request part is replaced by its SHA-256.
 */
import { createHash } from 'node:crypto';
import { KEY_SCHEMA_VERSION } from '../cache/key.js';
import { NO_SUBJECTS, subjectOf, subjectsSegment, type Subject, type SubjectKind } from '../cache/key-subjects.js';
import { createPathMatcher, type PathMatch } from '../routes/route-matcher.js';
import { UPSTREAM_GET_ROUTES } from '../routes/upstream-routes.js';
import { FAMILIES, FAMILY_BY_ID, NODE_RPC_GET_ROUTES, type Family } from './families.js';

/** What a request reaches on the surface: a family and its path parameters, or nothing (the passthrough's). */
export interface SurfaceMatch {
  family: Family;
  params: Record<string, string>;
}

/** Longest request part (path, query and canonical body) kept as it is in a key; longer ones are hashed. */
export const MAX_KEY_REQUEST_CHARS = 512;
/** Longest path and query a surface read takes at all; longer ones go to the passthrough, uncached. */
export const MAX_SURFACE_URL_CHARS = 8192;

/** The upstream's POST routes: everything under /v2 is proxied to the node, the rest is its own. */
const UPSTREAM_POST_ROUTES: readonly string[] = ['/v2/*'];

const entriesOf = (method: 'GET' | 'POST') => FAMILIES.filter((f) => f.method === method).flatMap((f) => f.routes.map((path) => ({ path, value: f })));

const matchGet = createPathMatcher(entriesOf('GET'), [...UPSTREAM_GET_ROUTES, ...NODE_RPC_GET_ROUTES]);
const matchPost = createPathMatcher(entriesOf('POST'), UPSTREAM_POST_ROUTES);

/**
 * The family a request reaches, for a path the 13 routes did not take. HEAD is read as GET (served
 * from the GET entry). Other methods, and paths outside every family, reach none.
 */
export function matchSurface(method: string, path: string, query: string): SurfaceMatch | undefined {
  const matcher = method === 'GET' || method === 'HEAD' ? matchGet : method === 'POST' ? matchPost : undefined;
  if (!matcher) return undefined;
  const found: PathMatch<Family> = matcher(path);
  if (found.kind !== 'match') return undefined;
  let family = found.value;
  if (family.variant && queryValues(query, family.variant.query).length > 0) family = FAMILY_BY_ID.get(family.variant.family) as Family;
  return { family, params: found.params };
}

/**
 * The values a query gives a parameter, in order. Names are compared raw and decoded alike (a
 * reader that decodes `t%69p` sees `tip`); values are the raw bytes sent, undecoded.
 */
export function queryValues(query: string, name: string): string[] {
  const values: string[] = [];
  if (query === '') return values;
  for (const pair of query.split('&')) {
    const eq = pair.indexOf('=');
    const rawName = eq < 0 ? pair : pair.slice(0, eq);
    if (rawName === name || (rawName.includes('%') && safeDecode(rawName) === name) || (rawName.includes('+') && rawName.replace(/\+/g, ' ') === name)) {
      values.push(eq < 0 ? '' : pair.slice(eq + 1));
    }
  }
  return values;
}

function safeDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

const INDEX_BLOCK_HASH = /^[0-9a-f]{64}$/;

/**
 * The block a node RPC read pins with `?tip=` (64 lower-case hex digits, the node's StacksBlockId),
 * when exactly one `tip` is given and nothing else could be read as one. Other tips (`latest`,
 * none, anything the node ignores as invalid) are reads at the current tip.
 */
export function pinnedTip(query: string): string | undefined {
  const tips = queryValues(query, 'tip');
  return tips.length === 1 && INDEX_BLOCK_HASH.test(tips[0] as string) ? tips[0] : undefined;
}

/**
 * Whether a node RPC answer carries no Merkle proof: `proof=0` given once (the node includes a
 * proof, which is per tip, unless told not to). Routes that never send a proof pass `proofByDefault`
 * false: then no `proof` parameter at all also counts.
 */
export function withoutProof(query: string, proofByDefault: boolean): boolean {
  const proofs = queryValues(query, 'proof');
  if (proofs.length === 0) return !proofByDefault;
  return proofs.length === 1 && proofs[0] === '0';
}

/** The principal an entry of this request is about, when its family names one. */
export function principalOf(match: SurfaceMatch, url: string, query: string): string | undefined {
  const source = match.family.principal;
  if (!source) return undefined;
  if ('param' in source) return match.params[source.param];
  if (source.under !== undefined && !url.startsWith(source.under)) return undefined;
  const values = queryValues(query, source.query);
  // Only a plain, single value: anything else would tag the entry with what the upstream may read otherwise.
  return values.length === 1 && /^[A-Za-z0-9.\-_]{1,200}$/.test(values[0] as string) ? values[0] : undefined;
}

/**
 * Path parameters that name what an entry is about, per family: principals (`p`), transactions
 * (`t`) and blocks (`b`), for admin purges (cache/key-subjects.ts). Only parameters that name a
 * Stacks principal, a Stacks transaction or a Stacks block: a Bitcoin address or a tenure height
 * is none of these.
 */
const SUBJECT_PARAMS: Readonly<Record<string, readonly (readonly [string, SubjectKind])[]>> = {
  principal_history: [['principal', 'p']],
  balances_ft: [['principal', 'p']],
  balances_stx: [['principal', 'p']],
  balances_stx_pending: [['principal', 'p']],
  address_nonces: [['principal', 'p']],
  address_mempool: [['principal', 'p']],
  v2_accounts: [['principal', 'p']],
  staking: [['principal', 'p']],
  transaction_detail: [
    ['address', 'p'],
    ['principal', 'p'],
    ['tx_id', 't'],
  ],
  tx_raw: [['tx_id', 't']],
  pox_events: [
    ['principal', 'p'],
    ['pool_principal', 'p'],
    ['tx_id', 't'],
  ],
  contract_info: [['contract_id', 'p']],
  smart_contracts: [['contract_id', 'p']],
  blocks: [
    ['height', 'b'],
    ['hash', 'b'],
  ],
  block_detail: [['height_or_hash', 'b']],
  block_transactions: [['height_or_hash', 'b']],
  tx_lists: [
    ['block_hash', 'b'],
    ['height', 'b'],
  ],
};

/** Families whose path names a contract as `{contract_address}/{contract_name}` (node RPC). */
const CONTRACT_PATH_FAMILIES = new Set(['contract_interface', 'contract_source', 'constant_val', 'data_var', 'call_read', 'map_entry']);

/**
 * What an entry of this request is about, as its key's subject segment: the principals,
 * transaction and block its path (or its `?address=` / `?principal=`) names, normalised.
 */
export function subjectsOf(match: SurfaceMatch, query: string): string {
  const { family, params } = match;
  const subjects: Subject[] = [];
  const add = (kind: SubjectKind, raw: string | undefined) => {
    const subject = raw === undefined ? undefined : subjectOf(kind, raw);
    if (subject) subjects.push(subject);
  };
  for (const [param, kind] of SUBJECT_PARAMS[family.id] ?? []) add(kind, params[param]);
  if (family.principal && 'query' in family.principal) {
    const values = queryValues(query, family.principal.query);
    // One value only: with two, which one the upstream reads is its business; the entry is about neither for sure.
    if (values.length === 1) add('p', values[0]);
  }
  if (CONTRACT_PATH_FAMILIES.has(family.id) && params.contract_address !== undefined && params.contract_name !== undefined) {
    add('p', `${params.contract_address}.${params.contract_name}`);
  }
  if (family.id === 'bns' && params.blockchain === 'stacks') add('p', params.address);
  return subjects.length === 0 ? NO_SUBJECTS : subjectsSegment(subjects);
}

/** The chain position a tip-keyed key carries. */
export interface KeyTip {
  hash: string;
  burnHeight?: number;
}

/**
 * Whether the family's answers depend on the tip with nothing in the request to say which: the
 * node RPC reads without an ETag, unless `?tip=` pins the block read.
 */
export function isTipKeyed(family: Family, query: string): boolean {
  if (family.change !== 'tip') return false;
  // A read about one principal (GET /v2/accounts/{p}) without `?tip=` is not: its entry records the tip it was
  // read at, so it is fresh under that tip, and under a later one only while the block learner
  // vouches that no block since touched the principal (policy.ts rule (c)); keyed by the tip, a
  // new block would make it a new key, and what was learned could never serve it.
  // With `?tip=` of any kind the node reads where it says: keyed by the tip as any node read.
  // With a proof (the node's default, stacks-core getaccount.rs; node versions differ on values
  // other than `0` and `1`, so only a single `proof=0` counts as none) the answer holds MARF proofs
  // against the tip's state root, which differs at every block even when the balance and nonce do
  // not: keyed by the tip too. stacks.js asks with `?proof=0`.
  if (family.principal !== undefined && 'param' in family.principal && queryValues(query, 'tip').length === 0 && withoutProof(query, true)) return false;
  return !(family.evidence === 'pinned_tip' && pinnedTip(query) !== undefined);
}

export interface KeyParts {
  prefix: string;
  method: 'GET' | 'POST';
  family: Family;
  /** Path and query as forwarded. */
  url: string;
  /** A POST read's canonical JSON body. */
  canonicalBody?: string;
  /** For tip-keyed requests. */
  tip?: KeyTip;
  /** What the entry is about (subjectsOf); absent: nothing. */
  subjects?: string;
}

/**
 * `<prefix>:v<schema>:s:<family>:<method>:<tip>:<subjects>:<request>`, where `<tip>` is `-`, the tip's
 * index block hash, or either followed by `@<burn height>` (burn-keyed families), `<subjects>` is
 * what the entry is about (`-` or `,p=…,t=…,b=…,`: cache/key-subjects.ts, for purges; a function
 * of the family and the URL, so it never splits or joins two requests' keys), and `<request>` is the URL, then `#` and the
 * canonical body for a POST (no URL holds a `#`: request-target.ts refuses one), or `~` and the
 * SHA-256 of that text (base64url) when it is longer than MAX_KEY_REQUEST_CHARS (no URL starts
 * with `~`). Every part before `<request>` is free of `:` after the prefix, so parts never run
 * into each other.
 */
export function surfaceKey(parts: KeyParts): string {
  const { tip } = parts;
  const tipPart = tip === undefined ? '-' : tip.burnHeight === undefined ? tip.hash : `${tip.hash}@${tip.burnHeight}`;
  let request = parts.canonicalBody === undefined ? parts.url : `${parts.url}#${parts.canonicalBody}`;
  if (request.length > MAX_KEY_REQUEST_CHARS) request = `~${createHash('sha256').update(request, 'utf8').digest('base64url')}`;
  return `${parts.prefix}:v${KEY_SCHEMA_VERSION}:s:${parts.family.id}:${parts.method}:${tipPart.replace(/:/g, '')}:${parts.subjects ?? NO_SUBJECTS}:${request}`;
}
