/**
 * One GET /admin/cache for the host in worker mode: the workers' answers (cache-stats.ts, the
 * single-process shape) combined into that same shape plus a `workers` list, by the rules of
 * /metrics and the status page: each worker's memory tier, lookups and purges add up (hit ratios
 * recomputed from the sums); the one Redis every worker reads is taken from the first that
 * reached it; the tip is the highest any worker believes. Pure.
 */
import type { ClassLookups } from '../http/admin/cache-stats.js';
import type { WorkerRef } from './combine-status-reports.js';
import type { SuccessCombiner } from './combine-admin-answers.js';

interface CacheStatsAnswer {
  tiers: { memory: { entries: number; bytes: number }; redis: Record<string, unknown> | null };
  lookups: Record<string, ClassLookups>;
  tip: ({ height: number } & Record<string, unknown>) | null;
  purges: { local: number; fromPeers: number };
}

/** One worker's line: enough to see which worker holds what. */
export interface CacheStatsWorker extends WorkerRef {
  memory: { entries: number; bytes: number };
  tipHeight: number | null;
  lookups: number;
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);

function parse(body: Buffer): CacheStatsAnswer | undefined {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isObject(value) || !isObject(value.tiers) || !isObject(value.tiers.memory) || !isObject(value.lookups) || !isObject(value.purges)) return undefined;
  const { memory, redis } = value.tiers;
  if (!isCount(memory.entries) || !isCount(memory.bytes) || !(redis === null || isObject(redis))) return undefined;
  if (!isCount(value.purges.local) || !isCount(value.purges.fromPeers)) return undefined;
  const fields = ['hit', 'stale', 'miss', 'error', 'total'] as const;
  if (!Object.values(value.lookups).every((c) => isObject(c) && fields.every((f) => isCount(c[f])))) return undefined;
  if (!(value.tip === null || (isObject(value.tip) && isCount(value.tip.height)))) return undefined;
  return value as unknown as CacheStatsAnswer;
}

function addLookups(all: Array<Record<string, ClassLookups>>): Record<string, ClassLookups> {
  const sums: Record<string, ClassLookups> = {};
  for (const lookups of all)
    for (const [cls, c] of Object.entries(lookups)) {
      const sum = (sums[cls] ??= { hit: 0, stale: 0, miss: 0, error: 0, total: 0, hitRatio: null });
      for (const field of ['hit', 'stale', 'miss', 'error', 'total'] as const) sum[field] += c[field];
    }
  for (const c of Object.values(sums)) c.hitRatio = c.total === 0 ? null : (c.hit + c.stale) / c.total;
  return sums;
}

/** The workers' stats as one, with a line per worker; undefined when an answer is not stats (the caller passes the first on). */
export const combineCacheStats: SuccessCombiner = (answers) => {
  const parsed = answers.map((a) => parse(a.body));
  if (parsed.length === 0 || !parsed.every((p) => p !== undefined)) return undefined;
  const stats = parsed as CacheStatsAnswer[];
  const sum = (values: number[]): number => values.reduce((total, v) => total + v, 0);
  const redis = stats.map((s) => s.tiers.redis).find((r) => r !== null && !('error' in r)) ?? (stats[0] as CacheStatsAnswer).tiers.redis;
  const tip = stats.map((s) => s.tip).reduce<CacheStatsAnswer['tip']>((best, t) => (t !== null && (best === null || t.height > best.height) ? t : best), null);
  const workers: CacheStatsWorker[] = stats.map((s, i) => ({
    id: (answers[i] as WorkerRef).id,
    pid: (answers[i] as WorkerRef).pid,
    memory: s.tiers.memory,
    tipHeight: s.tip?.height ?? null,
    lookups: s.lookups.all?.total ?? 0,
  }));
  const combined = {
    tiers: {
      memory: { entries: sum(stats.map((s) => s.tiers.memory.entries)), bytes: sum(stats.map((s) => s.tiers.memory.bytes)) },
      redis,
    },
    lookups: addLookups(stats.map((s) => s.lookups)),
    tip,
    purges: { local: sum(stats.map((s) => s.purges.local)), fromPeers: sum(stats.map((s) => s.purges.fromPeers)) },
    workers,
  };
  return Buffer.from(JSON.stringify(combined));
};
