/**
 * Pure cache policy: which freshness class a response belongs to (DESIGN §3), and what a
 * stored entry is worth now. No I/O; time and chain state come in as arguments.
 */
import type { PolicyKind, RequestFacts } from '../routes/route-spec.js';
import type { CacheEntry, FreshnessClass } from './entry.js';

export interface ReorgRecord {
  /** When the proxy saw the reorg (ms). Entries validated before it are suspect. */
  at: number;
  /** Highest block height both branches share; final entries above it are purged. */
  forkHeight: number;
}

/** What the proxy knows of the chain when it decides. */
export interface ChainView {
  tipHash?: string;
  tipHeight?: number;
  burnHeight?: number;
  /** Burn height at or below which anchored data is final (burn tip minus confirmations). */
  finalBurnHeight?: number;
  /** Highest Stacks height known to be anchored in a final burn block. */
  finalStacksHeight?: number;
  reorgs: readonly ReorgRecord[];
}

export interface TtlSettings {
  tipSafetyMs: number;
  mempoolMs: number;
  /** After a mempool entry expires (same tip), how long it may be served while it is refreshed. */
  staleWhileRevalidateMs: number;
  /** How long an expired entry is kept for revalidation (and, later, stale-if-error). */
  retainExpiredMs: number;
}

export interface Classification {
  cls: FreshnessClass;
  height?: number;
}

export interface ClassifyInput {
  policy: PolicyKind;
  facts: RequestFacts;
  status: number;
  body: Buffer;
  chain: ChainView;
  /** Height of the transaction a tx/events request names, when the cache holds it as final. */
  finalTxHeight?: number;
}

interface MinedFields {
  tx_status?: string;
  canonical?: boolean;
  microblock_canonical?: boolean;
  is_unanchored?: boolean;
  block_height?: number;
  burn_block_height?: number;
  height?: number;
}

function parseObject(body: Buffer): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

const isPending = (tx: MinedFields): boolean =>
  tx.tx_status === 'pending' || (typeof tx.tx_status === 'string' && tx.tx_status.startsWith('dropped')) || tx.block_height === undefined;

/** Anchored, canonical and buried under enough burn blocks: its answer can no longer change. */
function isFinalBlockData(data: MinedFields, chain: ChainView): boolean {
  if (data.canonical !== true || data.microblock_canonical === false || data.is_unanchored === true) return false;
  return chain.finalBurnHeight !== undefined && typeof data.burn_block_height === 'number' && data.burn_block_height <= chain.finalBurnHeight;
}

/** A confirmed transaction: final when deep enough, else tip; pending ones move with the mempool. */
export function classifyTransaction(tx: MinedFields, chain: ChainView): Classification {
  if (isPending(tx)) return { cls: 'mempool' };
  return isFinalBlockData(tx, chain) ? { cls: 'final', height: tx.block_height } : { cls: 'tip' };
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

function classifyOk(input: ClassifyInput): Classification | undefined {
  const { policy, facts, body, chain } = input;
  switch (policy) {
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
    case 'tx_multiple': {
      const tx = parseObject(body);
      return tx ? classifyTransaction(tx, chain) : undefined;
    }
    case 'tx_with_transfers': {
      const tx = parseObject(body)?.tx as MinedFields | undefined;
      return tx ? classifyTransaction(tx, chain) : undefined;
    }
    case 'block':
    case 'burn_block': {
      if (facts.latest) return { cls: 'tip' };
      const block = parseObject(body) as MinedFields | undefined;
      if (!block) return undefined;
      return isFinalBlockData(block, chain) ? { cls: 'final', height: block.height } : { cls: 'tip' };
    }
  }
}

/** Negative caching (DESIGN §3): a missing tx may arrive any second; a missing block at the next one. */
function classifyNotFound(policy: PolicyKind): Classification | undefined {
  switch (policy) {
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

/** The class to store a response under, or undefined for "never store" (5xx, upstream 4xx, garbage). */
export function classify(input: ClassifyInput): Classification | undefined {
  if (input.status === 200) return classifyOk(input);
  if (input.status === 404) return classifyNotFound(input.policy);
  return undefined;
}

/**
 * `purged`: a reorg made the entry suspect; it is refetched like `refetch`, and counted.
 * `stale-while-revalidate`: serve it now and refresh it in the background.
 */
export type Verdict = 'fresh' | 'stale-while-revalidate' | 'revalidate' | 'refetch' | 'purged';

function purgedByReorg(entry: CacheEntry, reorgs: readonly ReorgRecord[]): boolean {
  // Records are in time order: an entry validated after the last one is untouched (the hit path).
  const last = reorgs[reorgs.length - 1];
  if (!last || entry.validatedAt >= last.at) return false;
  return reorgs.some(
    (r) => r.at > entry.validatedAt && (entry.cls !== 'final' || entry.height === undefined || entry.height > r.forkHeight),
  );
}

/**
 * What a stored entry is worth now. `tip` and `mempool` entries are fresh only under the
 * tip they were validated at (so a new block makes a pending tx confirmable at once) and
 * within their TTL; after that they are revalidated with If-None-Match when they have an ETag.
 */
export function evaluate(entry: CacheEntry, now: number, chain: ChainView, ttl: TtlSettings): Verdict {
  if (purgedByReorg(entry, chain.reorgs)) return 'purged';
  if (entry.cls === 'final') return 'fresh';
  const maxAge = entry.cls === 'tip' ? ttl.tipSafetyMs : ttl.mempoolMs;
  const sameTip = chain.tipHash === undefined || entry.tipHash === chain.tipHash;
  const age = now - entry.validatedAt;
  if (sameTip && age < maxAge) return 'fresh';
  // Only the mempool TTL is softened: after a new block a pending tx may be confirmed, so
  // entries from an older tip are never served while they refresh.
  if (entry.cls === 'mempool' && sameTip && age < maxAge + ttl.staleWhileRevalidateMs) return 'stale-while-revalidate';
  return entry.upstreamEtag ? 'revalidate' : 'refetch';
}

export interface StaleSettings {
  staleIfErrorMs: number;
  /** A tip entry validated more than this many blocks below the tip is too old to serve. */
  staleIfErrorMaxBlocks: number;
}

/** Whether an expired entry may stand in for an upstream that failed (stale-if-error). */
export function isUsableWhenFailing(entry: CacheEntry, now: number, chain: ChainView, ttl: TtlSettings, stale: StaleSettings): boolean {
  if (purgedByReorg(entry, chain.reorgs)) return false;
  if (entry.cls === 'final') return true;
  const maxAge = entry.cls === 'tip' ? ttl.tipSafetyMs : ttl.mempoolMs;
  if (now - entry.validatedAt > maxAge + stale.staleIfErrorMs) return false;
  if (entry.cls !== 'tip' || entry.tipHeight === undefined || chain.tipHeight === undefined) return true;
  return chain.tipHeight - entry.tipHeight <= stale.staleIfErrorMaxBlocks;
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
