/**
 * Pure cache policy: which freshness class a response belongs to (DESIGN §3), and what to do
 * with a stored entry now: the decision record (`decide`) the read path acts on, in the
 * manner of http-cache-semantics' evaluateRequest. No I/O; time and chain state come in as
 * arguments.
 */
import type { ActivityView } from '../chain/activity-view.js';
import type { BlockRef, ChainView, ReorgRecord } from '../chain/view.js';
import type { FreshnessRules, RequestFacts } from '../routes/route-spec.js';
import { parseBoundedJson } from '../upstream/bounded-json.js';
import { judgePosition, type DisagreementReason } from './chain-position.js';
import type { CacheEntry, FreshnessClass } from './entry.js';

export type { ChainView, ReorgRecord } from '../chain/view.js';

export interface TtlSettings {
  tipSafetyMs: number;
  mempoolMs: number;
  /** After a mempool entry expires (same tip), how long it may be served while it is refreshed. */
  staleWhileRevalidateMs: number;
  /** How long an expired entry is kept for revalidation (and, later, stale-if-error). */
  retainExpiredMs: number;
  /**
   * How long past `tipSafetyMs` a `tip` entry validated at the believed tip is still served while
   * one revalidation runs behind it (issue 18): the longest a revalidation round trip may take
   * (the upstream client's deadline for one request). Absent or 0: off, such entries block on it.
   */
  revalidateBehindMs?: number;
  /**
   * Learned freshness (issue 15): a `tip` entry about a principal that no block since touched
   * (chain/activity.ts) stays fresh across new tips, up to this age. Absent: off.
   */
  learnedMaxMs?: number;
  /**
   * How old a `lagsMempool` entry (the mempool-wide fee estimate) may be served fresh, whatever
   * the mempool or the tip did since: the one answer allowed to lag the mempool. Absent: off.
   */
  mempoolFeesMaxAgeMs?: number;
}

export interface Classification {
  cls: FreshnessClass;
  height?: number;
  /**
   * Not final only because the block it names is not known yet as the canonical one at its
   * height: one request to check it (the tracker's) and a second classification may make it final.
   */
  unverified?: BlockRef;
}

/**
 * An answer whose position does not fit the proxy's picture of the chain: served as the upstream
 * sent it, never stored, counted by `reason` (cache/admit.ts). Not an upstream failure: the
 * picture may be what is wrong.
 */
export interface Contradiction {
  contradiction: string;
  reason: DisagreementReason;
}

export type Judgement = Classification | Contradiction;

export const isContradiction = (judgement: Judgement): judgement is Contradiction => 'contradiction' in judgement;

/** What classifying an answer needs besides its body. */
export interface AnswerFacts {
  freshness: FreshnessRules;
  facts: RequestFacts;
  status: number;
  chain: ChainView;
  /** Height of the transaction a tx/events request names, when the cache holds it as final. */
  finalTxHeight?: number;
}

export interface ClassifyInput extends AnswerFacts {
  body: Buffer;
}

/** An answer whose body was parsed once (undefined: it is not JSON). */
export interface ParsedAnswer extends AnswerFacts {
  json: unknown;
}

interface MinedFields {
  tx_status?: string;
  canonical?: boolean;
  microblock_canonical?: boolean;
  is_unanchored?: boolean;
  block_height?: number;
  burn_block_height?: number;
  height?: number;
  /** A transaction's block (block_hash), or a block's own hash. */
  block_hash?: string;
  hash?: string;
  index_block_hash?: string;
}

const asObject = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

/** The body as JSON, or undefined when it does not parse or would cost the heap too much (upstream/bounded-json.ts). */
export const parseJson: (body: Buffer) => unknown = parseBoundedJson;

const isPending = (tx: MinedFields): boolean =>
  tx.tx_status === 'pending' || (typeof tx.tx_status === 'string' && tx.tx_status.startsWith('dropped')) || tx.block_height === undefined;

/**
 * Anchored and canonical: final only where its block agrees with the verified chain (at or
 * below the watermark, the canonical block at its height); a contradiction when it cannot be
 * where it says (chain-position.ts).
 */
function judgeBlockData(data: MinedFields, chain: ChainView, blockHeight: unknown, blockHash: unknown, indexBlockHash: unknown): Judgement {
  if (data.canonical !== true || data.microblock_canonical === false || data.is_unanchored === true) return { cls: 'tip' };
  if (typeof blockHeight !== 'number' || typeof data.burn_block_height !== 'number') return { cls: 'tip' };
  const verdict = judgePosition(
    {
      height: blockHeight,
      burnHeight: data.burn_block_height,
      blockHash: typeof blockHash === 'string' ? blockHash : undefined,
      indexBlockHash: typeof indexBlockHash === 'string' ? indexBlockHash : undefined,
    },
    chain,
  );
  if (verdict.kind === 'contradiction') return { contradiction: verdict.why, reason: verdict.reason };
  if (verdict.kind === 'final') return { cls: 'final', height: blockHeight };
  return verdict.unverified === undefined ? { cls: 'tip' } : { cls: 'tip', unverified: verdict.unverified };
}

/** A confirmed transaction: final when deep enough and where the chain says, else tip; pending ones move with the mempool. */
export function classifyTransaction(tx: MinedFields, chain: ChainView): Judgement {
  if (isPending(tx)) return { cls: 'mempool' };
  return judgeBlockData(tx, chain, tx.block_height, tx.block_hash, undefined);
}

/** A block (v2, or the legacy shape by_burn_block_height answers). */
function classifyBlock(block: MinedFields, chain: ChainView): Judgement {
  return judgeBlockData(block, chain, block.height, block.hash, block.index_block_hash);
}

function isFinalHeight(height: number | undefined, chain: ChainView): boolean {
  return height !== undefined && chain.finalStacksHeight !== undefined && height <= chain.finalStacksHeight;
}

/** Balances carry pending fields unless until_block is given; until a final block they are frozen. */
function classifyPrincipalBalance(facts: RequestFacts, chain: ChainView): Classification {
  if (facts.unanchored) return { cls: 'mempool' };
  const until = facts.untilBlock;
  if (!until || until.kind === 'absent') return { cls: 'mempool' };
  if (until.kind === 'height' && isFinalHeight(until.height, chain)) return { cls: 'final', height: until.height };
  return { cls: 'tip' };
}

function classifyAddressHistory(facts: RequestFacts, chain: ChainView): Classification {
  if (facts.atHeight !== undefined) {
    return isFinalHeight(facts.atHeight, chain) ? { cls: 'final', height: facts.atHeight } : { cls: 'tip' };
  }
  if (facts.unanchored) return { cls: 'mempool' };
  const until = facts.untilBlock;
  if (until?.kind === 'height' && isFinalHeight(until.height, chain)) return { cls: 'final', height: until.height };
  return { cls: 'tip' };
}

const CLASS_RANK: Record<FreshnessClass, number> = { mempool: 0, tip: 1, final: 2 };

/** The weaker of two classes; for two final ones the higher height, so a reorg above either purges. */
export function weakest(a: Classification, b: Classification): Classification {
  // The weaker one is not final: it needs no height (nor a check that cannot make the whole final).
  if (CLASS_RANK[a.cls] !== CLASS_RANK[b.cls]) return { cls: CLASS_RANK[a.cls] < CLASS_RANK[b.cls] ? a.cls : b.cls };
  if (a.cls !== 'final') return { cls: a.cls };
  return { cls: 'final', height: a.height === undefined || b.height === undefined ? undefined : Math.max(a.height, b.height) };
}

/** One tx/multiple member: a found transaction is classified as one; a missing one may arrive any second. */
export function classifyListMember(member: unknown, chain: ChainView): Judgement | undefined {
  const value = asObject(member);
  if (!value) return undefined;
  if (value.found !== true) return { cls: 'mempool' };
  const tx = asObject(value.result);
  return tx ? classifyTransaction(tx, chain) : undefined;
}

/** A tx/multiple answer as a whole is as fresh as its least fresh member (and disagrees with the chain model when one does). */
function classifyList(list: Record<string, unknown>, chain: ChainView): Judgement | undefined {
  let result: Classification = { cls: 'final' };
  let members = 0;
  for (const member of Object.values(list)) {
    const classification = classifyListMember(member, chain);
    if (!classification || isContradiction(classification)) return classification;
    result = members === 0 ? classification : weakest(result, classification);
    members++;
  }
  return members === 0 ? undefined : result;
}

function classifyOk(input: ParsedAnswer): Judgement | undefined {
  const { freshness, facts, chain } = input;
  const body = asObject(input.json);
  switch (freshness) {
    case 'mempool':
      return { cls: 'mempool' };
    case 'principal_balance':
      return classifyPrincipalBalance(facts, chain);
    case 'chain_history':
      return { cls: 'tip' };
    case 'address_history':
      return classifyAddressHistory(facts, chain);
    case 'tx_events':
      return input.finalTxHeight !== undefined ? { cls: 'final', height: input.finalTxHeight } : { cls: 'tip' };
    case 'transaction':
      return body ? classifyTransaction(body, chain) : undefined;
    case 'transaction_list':
      return body ? classifyList(body, chain) : undefined;
    case 'tx_with_transfers': {
      const tx = asObject(body?.tx);
      return tx ? classifyTransaction(tx, chain) : undefined;
    }
    case 'block': {
      if (!body) return undefined;
      const judged = classifyBlock(body as MinedFields, chain);
      // The latest block moves with the tip, but must still sit where the chain allows.
      return facts.latest && !isContradiction(judged) ? { cls: 'tip' } : judged;
    }
    case 'burn_block': {
      if (!body) return undefined;
      const judged = classifyBlock(body as MinedFields, chain);
      return isContradiction(judged) || judged.cls !== 'final' || tenureEnded(body as MinedFields, chain) ? judged : { cls: 'tip' };
    }
  }
}

/**
 * by_burn_block_height answers the highest block anchored at that burn height, and a tenure can
 * go on getting blocks at its burn height long after it is deep (a tenure extend while Bitcoin
 * blocks come with no new tenure): the answer is final only once a later tenure began, that is
 * once the believed tip block is anchored higher. Its anchor not read yet: not known to be.
 */
function tenureEnded(block: MinedFields, chain: ChainView): boolean {
  const anchor = chain.tipAnchorBurnHeight;
  return anchor !== undefined && typeof block.burn_block_height === 'number' && block.burn_block_height < anchor;
}

/** Negative caching (DESIGN §3): a missing tx may arrive any second; a missing block at the next one. */
function classifyNotFound(freshness: FreshnessRules): Classification | undefined {
  switch (freshness) {
    case 'transaction':
      return { cls: 'mempool' };
    case 'block':
    case 'burn_block':
    case 'tx_with_transfers':
    case 'principal_balance':
    case 'address_history':
      return { cls: 'tip' };
    default:
      return undefined;
  }
}

/** The class to store a parsed answer under, a disagreement with the chain model (never stored), or undefined for "never store" (5xx, upstream 4xx, garbage). */
export function classifyParsed(input: ParsedAnswer): Judgement | undefined {
  if (input.status === 200) return classifyOk(input);
  if (input.status === 404) return classifyNotFound(input.freshness);
  return undefined;
}

/** classifyParsed for a body not parsed yet (stored bytes a 304 confirmed). */
export function classify(input: ClassifyInput): Judgement | undefined {
  const { body, ...facts } = input;
  return classifyParsed({ ...facts, json: input.status === 200 ? parseJson(body) : undefined });
}

/**
 * What a stored entry is worth (see `decide` for what to do about it).
 * `purged`: a reorg made the entry suspect; it is refetched like `refetch`, and counted.
 * `stale-while-revalidate`: serve it now (as stale) and refresh it in the background.
 * `revalidate-behind`: serve it now (as a hit: the chain has not moved) and revalidate it in the background.
 */
export type Verdict = 'fresh' | 'revalidate-behind' | 'stale-while-revalidate' | 'revalidate' | 'refetch' | 'purged';

function purgedByReorg(entry: CacheEntry, reorgs: readonly ReorgRecord[]): boolean {
  // Records are in time order: an entry validated after the last one is untouched (the hit path).
  const last = reorgs[reorgs.length - 1];
  if (!last || entry.validatedAt >= last.at) return false;
  return reorgs.some((r) => r.at > entry.validatedAt && (entry.cls !== 'final' || entry.height === undefined || entry.height > r.forkHeight));
}

/**
 * Whether a `final` entry is final under the watermark believed now. The watermark comes down
 * with the believed tip (a wrong tip corrected): what was final above it is not any more, and
 * must not be served as immutable. One number compare on the hit path.
 */
export function isFinalNow(entry: CacheEntry, chain: ChainView): boolean {
  return entry.height !== undefined && chain.finalStacksHeight !== undefined && entry.height <= chain.finalStacksHeight;
}

/**
 * What a stored entry is worth now. `final` entries are fresh while the watermark still covers
 * them, else they are asked for again like an expired `tip` entry. `tip` and `mempool` entries
 * are fresh only under the tip they were validated at (so a new block makes a pending tx
 * confirmable at once) and within their TTL; after that they are revalidated with If-None-Match
 * when they have an ETag.
 */
export function evaluate(entry: CacheEntry, now: number, chain: ChainView, ttl: TtlSettings): Verdict {
  if (purgedByReorg(entry, chain.reorgs)) return 'purged';
  if (entry.cls === 'final') return isFinalNow(entry, chain) ? 'fresh' : entry.upstreamEtag ? 'revalidate' : 'refetch';
  if (isAllowedLag(entry, now, ttl)) return 'fresh';
  const activity = chain.activity;
  // Rules (a) and (b): what a broadcast (or a mempool change the watcher saw) changed is asked
  // for again at once, never served stale.
  if (activity && changedByActivity(entry, activity)) return entry.upstreamEtag ? 'revalidate' : 'refetch';
  const maxAge = entry.cls === 'tip' ? ttl.tipSafetyMs : ttl.mempoolMs;
  const sameTip = chain.tipHash === undefined || entry.tipHash === chain.tipHash;
  const age = now - entry.validatedAt;
  if (sameTip && age < maxAge) return 'fresh';
  if (isRevalidatedBehind(entry, age, chain, ttl)) return 'revalidate-behind';
  // Rule (c): from an older tip, but no block since touched its principal.
  if (activity && !sameTip && isLearnedFresh(entry, now, age, chain, activity, ttl)) return 'fresh';
  // Rule (d): past the mempool TTL, but the mempool watcher saw no change that could alter it.
  if (activity && entry.cls === 'mempool' && isWatchedFresh(entry, now, age, sameTip, chain, activity, ttl)) return 'fresh';
  // Only the mempool TTL is softened: after a new block a pending tx may be confirmed, so
  // entries from an older tip are never served while they refresh.
  if (entry.cls === 'mempool' && sameTip && age < maxAge + ttl.staleWhileRevalidateMs) return 'stale-while-revalidate';
  return entry.upstreamEtag ? 'revalidate' : 'refetch';
}

/**
 * The mempool-wide fee estimate may lag the mempool by `mempoolFeesMaxAgeMs` (issue 28: "5 s
 * allowed"): it is percentiles of the pending set's fee rates, which the upstream itself
 * recomputes as the set changes, so a broadcast, a mempool change or a block (which empties part
 * of the mempool) within that window does not make it asked again. Reorgs still purge it; after
 * the window it is an ordinary `mempool` entry.
 */
function isAllowedLag(entry: CacheEntry, now: number, ttl: TtlSettings): boolean {
  return entry.lagsMempool === true && ttl.mempoolFeesMaxAgeMs !== undefined && now - entry.validatedAt < ttl.mempoolFeesMaxAgeMs;
}

/**
 * The safety revalidation of a `tip` entry that still agrees with the chain (issue 18): a `tip`
 * entry changes only with a block, and `tipSafetyMs` only guards against a block the tip poll
 * missed. An entry validated at the very tip believed now (a known tip: not before the first
 * one) is served while one revalidation runs behind it, for at most `revalidateBehindMs` past
 * `tipSafetyMs`: an entry from an older tip, a reorg, or an entry older than that blocks as before.
 * Reorgs and activity (rules a, b) were ruled out before this is asked.
 */
function isRevalidatedBehind(entry: CacheEntry, age: number, chain: ChainView, ttl: TtlSettings): boolean {
  if (entry.cls !== 'tip' || !ttl.revalidateBehindMs) return false;
  if (chain.tipHash === undefined || entry.tipHash !== chain.tipHash) return false;
  return age < ttl.tipSafetyMs + ttl.revalidateBehindMs;
}

/**
 * Rules (a) and (b) of principal activity (chain/activity-view.ts): (a) a mempool entry about a
 * principal a broadcast (or a mempool change the watcher saw) named after the entry was
 * validated; (b) a mempool entry about no principal (the global mempool routes, a transaction not
 * found, which may be the one just broadcast) validated before a broadcast or any change the
 * watcher saw. Either is what the upstream may now answer differently. A `tip` entry is
 * confirmed state (its ETag, when it has one, is a principal or chain_tip one: no pending
 * transaction moves it), which only a block changes: the tip and rule (c) see to that.
 */
export function changedByActivity(entry: CacheEntry, activity: ActivityView): boolean {
  if (entry.cls !== 'mempool') return false;
  if (entry.principal !== undefined) return activity.principalChangedAfter(entry.principal, entry.validatedAt, entry.movesWith);
  return activity.mempoolChangedAfter(entry.validatedAt);
}

/**
 * Rule (c), learned freshness: a `tip` entry about a principal, validated at an older tip that is
 * still the canonical block at its height, stays fresh while every block since was learned and
 * none touched the principal (nor a burn block, reorg or gap voided that knowledge), and the chain
 * is still watched, up to `learnedMaxMs` of age.
 */
function isLearnedFresh(entry: CacheEntry, now: number, age: number, chain: ChainView, activity: ActivityView, ttl: TtlSettings): boolean {
  if (entry.cls !== 'tip' || ttl.learnedMaxMs === undefined || age >= ttl.learnedMaxMs) return false;
  return isLearnedUnchanged(entry, now, chain, activity);
}

/**
 * No block since the entry's tip touched its principal (and the tip is still the canonical block
 * at its height). Only blocks the proxy read count: one it could not read voids the knowledge
 * (activity.ts), and while the tip polls stop showing the believed tip (every upstream down)
 * blocks may come unseen, so nothing is vouched for then either. A read that finds the entry
 * not fresh asks the upstream, and with every upstream failing gets it as STALE (stale-if-error).
 */
function isLearnedUnchanged(entry: CacheEntry, now: number, chain: ChainView, activity: ActivityView): boolean {
  if (entry.principal === undefined || entry.tipHeight === undefined || entry.tipHash === undefined) return false;
  if (!activity.isWatching(now)) return false;
  // An entry from a branch the chain left is not "unchanged" whatever the heights say.
  if (chain.canonical?.at(entry.tipHeight)?.indexBlockHash !== entry.tipHash) return false;
  return activity.unchangedSince(entry.principal, entry.tipHeight, entry.validatedAt, entry.movesWith);
}

/**
 * Rule (d), the mempool watcher: a `mempool` entry (a 200 or 404: not a 410 kept briefly) past its
 * TTL is fresh while (1) the watcher compared every mempool since the entry was validated with
 * the one before and saw no change naming its principal (no change at all, for an entry about no
 * principal), (2) the latest poll started less than the mempool TTL ago, so what the watcher has
 * not seen yet is never older than what the TTL alone lets through, and (3) the confirmed state
 * it also reflects is the same: the same tip, or, for an entry about a principal, an older tip no
 * block since touched (rule (c)'s knowledge). Up to `learnedMaxMs` of age.
 */
function isWatchedFresh(entry: CacheEntry, now: number, age: number, sameTip: boolean, chain: ChainView, activity: ActivityView, ttl: TtlSettings): boolean {
  if (!activity.mempoolUnchangedSince || ttl.learnedMaxMs === undefined || age >= ttl.learnedMaxMs) return false;
  if (entry.status !== 200 && entry.status !== 404) return false;
  if (!sameTip && !isLearnedUnchanged(entry, now, chain, activity)) return false;
  const vouchedAt = activity.mempoolUnchangedSince(entry.principal, entry.validatedAt, entry.movesWith);
  return vouchedAt !== undefined && now - vouchedAt < ttl.mempoolMs;
}

/** How to ask the upstream again. */
export type Refresh =
  /** If-None-Match with the upstream's ETag; a 304 confirms `entry`, which also stands in if the upstream fails. */
  | { action: 'revalidate'; etag: string; entry: CacheEntry }
  /**
   * A plain request. `fallback` may stand in if the upstream fails (stale-if-error);
   * `purged`: a reorg made the held entry suspect, so there is none (counted).
   */
  | { action: 'refetch'; fallback?: CacheEntry; purged?: true };

/** The decision record for one lookup: the read path acts on it and derives nothing itself (cache/decider.ts binds it). */
export type Decision =
  | { action: 'fresh'; entry: CacheEntry }
  /** Serve `entry` now (as stale: it is past its TTL) and run `refresh` in the background. */
  | { action: 'serve-stale-and-refresh'; entry: CacheEntry; refresh: Refresh }
  /** Serve `entry` now (as a hit: the chain has not moved since it was validated) and run `refresh` in the background. */
  | { action: 'serve-and-revalidate-behind'; entry: CacheEntry; refresh: Refresh }
  | Refresh;

/** The entry that may stand in when the upstream fails, if the stale-if-error rules allow it then. */
export function fallbackOf(refresh: Refresh): CacheEntry | undefined {
  return refresh.action === 'revalidate' ? refresh.entry : refresh.fallback;
}

function refreshFor(entry: CacheEntry): Refresh {
  return entry.upstreamEtag ? { action: 'revalidate', etag: entry.upstreamEtag, entry } : { action: 'refetch', fallback: entry };
}

/** What to do for a request, given what the cache holds for it (nothing: undefined). */
export function decide(entry: CacheEntry | undefined, now: number, chain: ChainView, ttl: TtlSettings): Decision {
  if (!entry) return { action: 'refetch' };
  switch (evaluate(entry, now, chain, ttl)) {
    case 'fresh':
      return { action: 'fresh', entry };
    case 'stale-while-revalidate':
      return { action: 'serve-stale-and-refresh', entry, refresh: refreshFor(entry) };
    case 'revalidate-behind':
      return { action: 'serve-and-revalidate-behind', entry, refresh: refreshFor(entry) };
    case 'purged':
      // Data a reorg may have changed is neither revalidated nor served stale.
      return { action: 'refetch', purged: true };
    case 'revalidate':
    case 'refetch':
      return refreshFor(entry);
  }
}

export interface StaleSettings {
  staleIfErrorMs: number;
  /** A tip entry validated more than this many blocks below the tip is too old to serve. */
  staleIfErrorMaxBlocks: number;
}

/**
 * Whether an expired entry may stand in for an upstream that failed (stale-if-error). A `final`
 * entry the watermark no longer covers may, but only as what it is now (see `asServedNow`).
 */
export function isUsableWhenFailing(entry: CacheEntry, now: number, chain: ChainView, ttl: TtlSettings, stale: StaleSettings): boolean {
  if (purgedByReorg(entry, chain.reorgs)) return false;
  if (entry.cls === 'final') return true;
  // Never the nonce or mempool list from before a broadcast the upstream accepted.
  if (chain.activity && changedByActivity(entry, chain.activity)) return false;
  const maxAge = entry.cls === 'tip' ? ttl.tipSafetyMs : ttl.mempoolMs;
  if (now - entry.validatedAt > maxAge + stale.staleIfErrorMs) return false;
  if (entry.cls !== 'tip' || entry.tipHeight === undefined || chain.tipHeight === undefined) return true;
  return chain.tipHeight - entry.tipHeight <= stale.staleIfErrorMaxBlocks;
}

/** The entry as it may be served now: a `final` one the watermark no longer covers is `tip` data (no immutable). */
export function asServedNow(entry: CacheEntry, chain: ChainView): CacheEntry {
  return entry.cls === 'final' && !isFinalNow(entry, chain) ? { ...entry, cls: 'tip' } : entry;
}

/** How long the store keeps an entry (null: until evicted). */
export function retentionMs(cls: FreshnessClass, ttl: TtlSettings): number | null {
  if (cls === 'final') return null;
  return (cls === 'tip' ? ttl.tipSafetyMs : ttl.mempoolMs) + ttl.retainExpiredMs;
}

/** Cache-Control by class (DESIGN §4): final data is immutable; the rest must be revalidated. */
export function cacheControlFor(cls: FreshnessClass): string {
  return cls === 'final' ? 'public, max-age=31536000, immutable' : 'public, no-cache, must-revalidate';
}
