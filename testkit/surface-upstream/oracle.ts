/**
 * The oracle: was each answer a client got one the upstream gave (or would have given) at some
 * moment it may date from? An answer may be as old as the tip polls allow (the window opens
 * `windowMs` before the request was sent, or at a mark the caller names) and no newer than its
 * arrival. Broadcasts are not reads and are left out.
 */
import type { Exchange } from './mix.js';
import type { SurfaceUpstream } from './server.js';

export interface Mismatch {
  exchange: Exchange;
  /** `status`: no upstream answer in the window had that status; `body`: same status, other bytes. */
  kind: 'status' | 'body';
  /** The body equals an upstream answer from before the window: an answer kept too long. */
  older: boolean;
}

export interface OracleVerdict {
  checked: number;
  /** Sent before the oldest snapshot kept: cannot be judged. */
  unverifiable: number;
  mismatches: Mismatch[];
  /** Mismatches by family. */
  byFamily: Record<string, number>;
}

export interface OracleOptions {
  /** The window opens this long before the request was sent (two tip polls). */
  windowMs?: number;
  /** Or: the window opens at what this returns for the send time (e.g. the poll two polls back). */
  windowStart?: (tSend: number) => number;
  /**
   * A wider window for the families whose answers may lag by design (by family id; over
   * windowMs/windowStart): `/extended/v2/mempool/fees` may lag the mempool by
   * cache.ttl.mempoolFeesMaxAgeMs (5 s).
   */
  windowMsByFamily?: Record<string, number>;
}

export function judgeExchanges(upstream: SurfaceUpstream, exchanges: readonly Exchange[], options: OracleOptions): OracleVerdict {
  const verdict: OracleVerdict = { checked: 0, unverifiable: 0, mismatches: [], byFamily: {} };
  const startOf = options.windowStart ?? ((t: number) => t - (options.windowMs ?? 2_000));
  for (const exchange of exchanges) {
    if (exchange.family === 'broadcast' || exchange.status === 0) continue;
    const lag = options.windowMsByFamily?.[exchange.family];
    const from = lag === undefined ? startOf(exchange.tSend) : Math.min(startOf(exchange.tSend), exchange.tSend - lag);
    if (from < upstream.oldestKnown()) {
      verdict.unverifiable++;
      continue;
    }
    verdict.checked++;
    let sameStatus = false;
    let matched = false;
    for (const candidate of upstream.answersWithin(from, exchange.tRecv, exchange.method, exchange.url, exchange.body ?? '')) {
      if (candidate.status !== exchange.status) continue;
      sameStatus = true;
      if (candidate.body === exchange.answer) {
        matched = true;
        break;
      }
    }
    if (matched) continue;
    let older = false;
    for (const candidate of upstream.answersWithin(upstream.oldestKnown(), from, exchange.method, exchange.url, exchange.body ?? '')) {
      if (candidate.status === exchange.status && candidate.body === exchange.answer) {
        older = true;
        break;
      }
    }
    verdict.mismatches.push({ exchange, kind: sameStatus ? 'body' : 'status', older });
    verdict.byFamily[exchange.family] = (verdict.byFamily[exchange.family] ?? 0) + 1;
  }
  return verdict;
}

/** What share of client answers needed no full upstream fetch, by X-Cache. */
export interface ServedFigures {
  clients: number;
  /** HIT or STALE: answered from the cache. */
  fromCache: number;
  /** REVALIDATED: the upstream answered 304. */
  revalidated: number;
  byFamily: Record<string, { clients: number; fromCache: number; revalidated: number }>;
}

export function servedFigures(exchanges: readonly Exchange[]): ServedFigures {
  const figures: ServedFigures = { clients: 0, fromCache: 0, revalidated: 0, byFamily: {} };
  for (const e of exchanges) {
    const family = (figures.byFamily[e.family] ??= { clients: 0, fromCache: 0, revalidated: 0 });
    figures.clients++;
    family.clients++;
    const x = (e.xCache ?? '').toUpperCase();
    if (x === 'HIT' || x === 'STALE') {
      figures.fromCache++;
      family.fromCache++;
    } else if (x === 'REVALIDATED') {
      figures.revalidated++;
      family.revalidated++;
    }
  }
  return figures;
}
