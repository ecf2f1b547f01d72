/**
 * Turning an upstream answer into what the cache does with it, as one pure step: an entry to
 * store, an answer to pass on unstored, or a failure (a body that is not what it claims, or an
 * answer about another resource than the one asked for: retried elsewhere, never stored). An
 * answer about what was asked that does not fit the proxy's picture of the chain (a
 * disagreement: chain-position.ts) is passed on as the upstream sent it and never stored; it
 * says nothing against the upstream, whose view of the chain may well be the right one. The
 * body is parsed once, here; the same parse serves the well-formedness check, the identity
 * check (identity.ts) and the freshness class.
 */
import { createHash } from 'node:crypto';
import type { BlockRef, ChainView } from '../chain/view.js';
import type { RequestFacts, FreshnessRules } from '../routes/route-spec.js';
import type { UpstreamResponse } from '../upstream/client.js';
import { UpstreamError } from '../upstream/errors.js';
import type { CacheEntry } from './entry.js';
import { identityMismatch } from './identity.js';
import { scanObjectMembers } from './json-object-scan.js';
import type { DisagreementReason } from './chain-position.js';
import { classifyListMember, classifyParsed, isContradiction, parseJson, type Classification, type Contradiction } from './policy.js';
import { FOUND_MEMBER_PREFIX, FOUND_MEMBER_SUFFIX } from './tx-member.js';

/** The chain and the time at which a request left for the upstream. */
export interface Snapshot {
  chain: ChainView;
  at: number;
}

/** An upstream answer passed on without being stored (5xx, upstream 4xx other than 404). */
export interface PassedOn {
  status: number;
  body: Buffer;
  /** The upstream's own headers worth keeping, cache-control and etag included. */
  headers: Record<string, string>;
}

/** Why an answer was passed on unstored although it is about what was asked: it does not fit the chain the proxy verified. */
export interface Disagreement {
  reason: DisagreementReason;
  why: string;
}

/** An answer passed on unstored; `disagreement` when the reason is the chain model (counted and logged by the reader). */
export interface PassOn {
  kind: 'pass-on';
  passed: PassedOn;
  disagreement?: Disagreement;
}

/**
 * `unverified`: the entry would be final were the block it names checked as the canonical one
 * at its height: worth one check (the tracker's) and a second admission.
 */
export type Admission = { kind: 'entry'; entry: CacheEntry; unverified?: BlockRef } | PassOn | { kind: 'failure'; error: UpstreamError };

export interface AdmitInput {
  freshness: FreshnessRules;
  facts: RequestFacts;
  response: UpstreamResponse;
  /**
   * The chain and time from before the request was sent: a block that lands meanwhile must
   * make the answer stale, not make it look current.
   */
  asked: Snapshot;
  /** Height of the transaction a tx/events request names, when the cache holds it as final. */
  finalTxHeight?: number;
}

/** Upstream headers a client should still see on a cached answer. */
const FORWARDED_HEADERS = ['content-type', 'warning', 'x-api-version'] as const;

export function forwardedHeaders(response: UpstreamResponse, extra: readonly string[] = []): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of [...FORWARDED_HEADERS, ...extra]) {
    const value = response.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  return headers;
}

/** A strong validator for bodies the upstream sent without one (computed once, at store time). */
export function bodyEtag(body: Buffer): string {
  return `"${createHash('sha1').update(body).digest('base64url')}"`;
}

const isStrongEtag = (etag: string | undefined): etag is string => etag !== undefined && etag.startsWith('"');

export function passOn(response: UpstreamResponse): PassOn {
  return {
    kind: 'pass-on',
    passed: { status: response.status, body: response.body, headers: forwardedHeaders(response, ['cache-control', 'location', 'etag']) },
  };
}

/** An answer that disagrees with the chain model: the client gets it as the upstream sent it; nothing is stored. */
export function disagreeing(response: UpstreamResponse, judged: Contradiction, where?: string): PassOn {
  const why = where === undefined ? judged.contradiction : `${where}: ${judged.contradiction}`;
  return { ...passOn(response), disagreement: { reason: judged.reason, why } };
}

/** Class, validation time and the tip it was validated under. */
export function stamp(classification: Classification, asked: Snapshot): Pick<CacheEntry, 'cls' | 'height' | 'validatedAt' | 'tipHash' | 'tipHeight'> {
  const final = classification.cls === 'final';
  return {
    cls: classification.cls,
    height: classification.height,
    validatedAt: asked.at,
    tipHash: final ? undefined : asked.chain.tipHash,
    tipHeight: final ? undefined : asked.chain.tipHeight,
  };
}

/**
 * The upstream answers these routes in JSON. A 200 or 404 (the statuses the cache keeps) that
 * is not JSON, or does not parse (an error page from something in between, a cut body), is
 * an upstream fault, retried elsewhere and never cached. Returns the parsed body.
 */
function parseKept(response: UpstreamResponse): { json: unknown } | { error: UpstreamError } {
  const invalid = (why: string) => ({ error: new UpstreamError('invalid', response.upstream, `${why} from ${response.upstream} (status ${response.status})`) });
  if (!(response.headers['content-type'] ?? '').includes('json')) return invalid('a body that is not JSON');
  const json = parseJson(response.body);
  return json === undefined ? invalid('invalid JSON') : { json };
}

/** An answer about another resource than the one asked for: that upstream failed this request. */
function wrongResource(response: UpstreamResponse, why: string): UpstreamError {
  return new UpstreamError('invalid', response.upstream, `an answer about another resource from ${response.upstream}: ${why}`);
}

/** Stored bytes the chain verified now disagrees with: not confirmed by a 304 (fetched again in full). */
function storedDisagreeing(upstream: string, why: string): UpstreamError {
  return new UpstreamError('invalid', upstream, `stored bytes disagree with the verified chain (${upstream}'s 304 does not confirm them): ${why}`);
}

/** Where a found transaction sits in a tx/multiple answer (mined ones by height, then mempool). */
function minedHeightOf(classification: Classification, tx: unknown): number | undefined {
  if (classification.cls === 'mempool') return undefined;
  const height = (tx as { block_height?: unknown } | undefined)?.block_height;
  return typeof height === 'number' ? height : undefined;
}

/**
 * An answer kept as an entry: its status, body bytes and the headers clients still see, the
 * upstream's strong ETag (or one of the body), its class stamped with the chain it was asked
 * under, and the principal it is about (what broadcasts and blocks make stale).
 */
export function entryFromAnswer(response: UpstreamResponse, classification: Classification, asked: Snapshot, principal?: string): CacheEntry {
  const upstreamEtag = isStrongEtag(response.headers.etag) ? response.headers.etag : undefined;
  const entry: CacheEntry = {
    status: response.status,
    body: response.body,
    headers: forwardedHeaders(response),
    upstreamEtag,
    etag: upstreamEtag ?? bodyEtag(response.body),
    ...stamp(classification, asked),
  };
  if (principal !== undefined) entry.principal = principal;
  return entry;
}

/** Entry, pass-on or failure for one answer of a single-reader route. */
export function admit(input: AdmitInput): Admission {
  const { response } = input;
  if (response.status !== 200 && response.status !== 404) return passOn(response);
  const parsed = parseKept(response);
  if ('error' in parsed) return { kind: 'failure', error: parsed.error };
  // A 404's error body names nothing; a 200 must be about what was asked.
  const mismatch = response.status === 200 ? identityMismatch(input.facts.identity, parsed.json) : undefined;
  if (mismatch) return { kind: 'failure', error: wrongResource(response, mismatch) };
  const classification = classifyParsed({ ...input, status: response.status, chain: input.asked.chain, json: parsed.json });
  if (!classification) return passOn(response);
  if (isContradiction(classification)) return disagreeing(response, classification);
  const entry = entryFromAnswer(response, classification, input.asked, input.facts.principal);
  // A transaction is stored once for /tx/{id} and tx/multiple: the list needs its place.
  if (input.freshness === 'transaction' && response.status === 200) {
    entry.listItem = { found: true, minedHeight: minedHeightOf(classification, parsed.json), unwrapped: true };
  }
  return withCheck(entry, classification);
}

/** What a 304 comes to: the stored entry confirmed, or a failure. */
export type Confirmation = Exclude<Admission, { kind: 'pass-on' }>;

const withCheck = (entry: CacheEntry, classification: Classification): Admission & { kind: 'entry' } =>
  classification.unverified === undefined ? { kind: 'entry', entry } : { kind: 'entry', entry, unverified: classification.unverified };

/**
 * A 304 confirms the stored bytes (its ETag stays: the upstream's 304 carries none). The class
 * is decided again, so a confirmed transaction that is now deep enough becomes final. Bytes that
 * disagree with the chain verified now are not confirmed by it: a failure of the confirmation
 * only (the reader fetches them again in full; the upstream is not blamed).
 */
export function confirm(entry: CacheEntry, input: Omit<AdmitInput, 'response'>, upstream = 'cache'): Confirmation {
  const json = entry.status === 200 ? parseJson(entry.body) : undefined;
  const classification = classifyParsed({ ...input, status: entry.status, chain: input.asked.chain, json }) ?? { cls: entry.cls, height: entry.height };
  if (isContradiction(classification)) return { kind: 'failure', error: storedDisagreeing(upstream, classification.contradiction) };
  return withCheck({ ...entry, ...stamp(classification, input.asked) }, classification);
}

/** A tx/multiple answer split into one entry per transaction. */
export type ListAdmission =
  /** `unverified`: the blocks whose check may make members final, by block hash. */
  { kind: 'members'; members: Map<string, CacheEntry>; unverified: Map<string, BlockRef> } | PassOn | { kind: 'failure'; error: UpstreamError };

export interface ListAdmitInput {
  response: UpstreamResponse;
  /** The ids this request asked for (lower case): the answer must hold exactly these. */
  askedIds: readonly string[];
  asked: Snapshot;
  /**
   * Headers a /tx/{id} answer carries that a tx/multiple answer does not (the deprecation
   * Warning), for found members, which /tx/{id} serves too.
   */
  transactionHeaders: Record<string, string>;
}

/**
 * Splits a tx/multiple answer into its members without re-serializing them. A found member is
 * `{"found":true,"result":<the /tx/{id} body>}`, so it is stored as that body, one entry per
 * transaction that /tx/{id} serves as well. A member in any other form, and every not-found
 * member, is stored as the bytes the list sent, for lists only (see tx-member.ts for why).
 */
export function admitList(input: ListAdmitInput): ListAdmission {
  const { response, asked } = input;
  if (response.status !== 200 && response.status !== 404) return passOn(response);
  const parsed = parseKept(response);
  if ('error' in parsed) return { kind: 'failure', error: parsed.error };
  if (response.status === 404) return passOn(response);
  const mismatch = identityMismatch({ kind: 'transaction_list', txIds: input.askedIds }, parsed.json);
  if (mismatch) return { kind: 'failure', error: wrongResource(response, mismatch) };
  const text = response.body.toString('utf8');
  const raw = scanObjectMembers(text);
  const list = parsed.json as Record<string, unknown> | null;
  const notAnObject = () => ({ kind: 'failure' as const, error: new UpstreamError('invalid', response.upstream, 'tx/multiple answer is not an object') });
  if (!raw || list === null || typeof list !== 'object' || Array.isArray(list)) return notAnObject();
  const members = new Map<string, CacheEntry>();
  const unverified = new Map<string, BlockRef>();
  for (const { key, raw: memberText } of raw) {
    const member = list[key] as { found?: unknown; result?: unknown } | undefined;
    const classification = classifyListMember(member, asked.chain);
    if (!member || !classification) return notAnObject();
    if (isContradiction(classification)) return disagreeing(response, classification, `member ${key}`);
    if (classification.unverified) unverified.set(classification.unverified.blockHash, classification.unverified);
    const found = member.found === true;
    const minedHeight = found ? minedHeightOf(classification, member.result) : undefined;
    const unwrapped = found && memberText.startsWith(FOUND_MEMBER_PREFIX) && memberText.endsWith(FOUND_MEMBER_SUFFIX);
    const body = Buffer.from(unwrapped ? memberText.slice(FOUND_MEMBER_PREFIX.length, -FOUND_MEMBER_SUFFIX.length) : memberText, 'utf8');
    members.set(key, {
      status: 200,
      body,
      headers: unwrapped ? { ...forwardedHeaders(response), ...input.transactionHeaders } : {},
      etag: unwrapped ? bodyEtag(body) : '',
      ...stamp(classification, asked),
      listItem: { found, minedHeight, ...(unwrapped ? { unwrapped: true } : {}) },
    });
  }
  return { kind: 'members', members, unverified };
}
