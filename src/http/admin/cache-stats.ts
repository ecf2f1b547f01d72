/**
 * GET /admin/cache: what the cache holds (entries and bytes per tier), how its lookups went
 * since start (per freshness class, with the hit ratio) and the chain tip it judges by.
 */
import type { ChainTip, ChainView } from '../../chain/view.js';

/** One lookup counter's value (telemetry's lookupCounts). */
export interface LookupCount {
  tier: string;
  cls: string;
  result: string;
  count: number;
}

export interface CacheStatsSources {
  memory: { entries: number; bytes: number };
  /** undefined without Redis; 'unavailable' when it did not answer. */
  redis: { keys: number; bytes: number; evictedKeys: number } | 'unavailable' | undefined;
  lookups: LookupCount[];
  tip: ChainTip | undefined;
  chain: ChainView;
  purges: { local: number; fromPeers: number };
}

export interface ClassLookups {
  hit: number;
  stale: number;
  miss: number;
  error: number;
  total: number;
  /** Hits (fresh or stale) over all lookups; null before the first. */
  hitRatio: number | null;
}

/**
 * Lookups per class. A lookup counts once, in the tier that answered it (cache/lookup.ts);
 * a miss has no entry to tell its class, so misses appear under `unknown`, and the ratio that
 * means something is the overall one.
 */
function byClass(lookups: LookupCount[]): Record<string, ClassLookups> {
  const classes: Record<string, ClassLookups> = {};
  const add = (cls: string, result: string, count: number) => {
    const c = (classes[cls] ??= { hit: 0, stale: 0, miss: 0, error: 0, total: 0, hitRatio: null });
    if (result === 'hit' || result === 'stale' || result === 'miss' || result === 'error') c[result] += count;
    c.total += count;
  };
  for (const { cls, result, count } of lookups) {
    add(cls, result, count);
    add('all', result, count);
  }
  for (const c of Object.values(classes)) c.hitRatio = c.total === 0 ? null : (c.hit + c.stale) / c.total;
  return classes;
}

export function cacheStats(sources: CacheStatsSources): Record<string, unknown> {
  const { redis, tip, chain } = sources;
  return {
    tiers: {
      memory: sources.memory,
      redis:
        redis === undefined
          ? null
          : redis === 'unavailable'
            ? { error: 'Redis did not answer' }
            : { keys: redis.keys, usedMemoryBytes: redis.bytes, evictedKeys: redis.evictedKeys },
    },
    lookups: byClass(sources.lookups),
    tip: tip
      ? {
          height: tip.height,
          indexBlockHash: tip.indexBlockHash,
          burnHeight: tip.burnHeight,
          finalBurnHeight: chain.finalBurnHeight ?? null,
          finalStacksHeight: chain.finalStacksHeight ?? null,
        }
      : null,
    purges: sources.purges,
  };
}
