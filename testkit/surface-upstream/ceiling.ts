/**
 * The ceiling of a mix (issue 28): the share of client reads a proxy with perfect knowledge of
 * change could serve from cache. A read is servable when the upstream's answer at the moment it
 * was sent (status and body bytes) equals the upstream's answer at the moment of the previous
 * request with the same method, URL and body, by any client: the answer the proxy would hold. The
 * first request of each key is not servable (nothing is held yet), nor is one whose answer
 * cannot be recomputed. Broadcasts are not reads and failed exchanges (status 0) got no answer:
 * both are left out.
 *
 * Pure: the caller gives the exchanges and a lookup of the upstream's answer at a time (the
 * surface upstream's snapshots: SurfaceUpstream.answerAt).
 */
import type { Exchange } from './mix.js';

/** The upstream's answer to this exchange's request at `time` (status and body, any encoding), or undefined when unknown. */
export type AnswerLookup = (exchange: Exchange, time: number) => string | undefined;

export interface CeilingCount {
  reads: number;
  servable: number;
}

export interface Ceiling extends CeilingCount {
  byFamily: Record<string, CeilingCount>;
  byActor: Record<string, CeilingCount>;
  /** Per exchange (the index in the list given), whether it was servable; broadcasts and failures absent. */
  servableAt: Map<number, boolean>;
}

export const requestKey = (e: Pick<Exchange, 'method' | 'url' | 'body'>): string => `${e.method} ${e.url}\n${e.body ?? ''}`;

/** Exchanges are taken in the order they were sent (tSend; ties in list order). */
export function ceilingOf(exchanges: readonly Exchange[], answerAt: AnswerLookup): Ceiling {
  const ceiling: Ceiling = { reads: 0, servable: 0, byFamily: {}, byActor: {}, servableAt: new Map() };
  const order = exchanges.map((_, i) => i).sort((a, b) => (exchanges[a] as Exchange).tSend - (exchanges[b] as Exchange).tSend || a - b);
  /** Per key, the upstream's answer at the previous request's moment (undefined: unknown). */
  const held = new Map<string, string | undefined>();
  for (const i of order) {
    const e = exchanges[i] as Exchange;
    if (e.family === 'broadcast' || e.status === 0) continue;
    const key = requestKey(e);
    const now = answerAt(e, e.tSend);
    const before = held.get(key);
    const servable = before !== undefined && now !== undefined && before === now;
    held.set(key, now);
    ceiling.servableAt.set(i, servable);
    for (const count of [ceiling, (ceiling.byFamily[e.family] ??= { reads: 0, servable: 0 }), (ceiling.byActor[e.actor] ??= { reads: 0, servable: 0 })]) {
      count.reads++;
      if (servable) count.servable++;
    }
  }
  return ceiling;
}

/**
 * A lookup over a surface upstream's snapshots that renders each (snapshot, request) once: the
 * bench's mix has ~13,000 reads over a few hundred snapshots.
 */
export function snapshotLookup(upstream: {
  oldestKnown(): number;
  snapshotAt(time: number): { seq: number };
  answerAt(time: number, method: string, url: string, body?: string): { status: number; body: string };
}): AnswerLookup {
  const memo = new Map<string, string>();
  return (e, time) => {
    if (time < upstream.oldestKnown()) return undefined;
    const memoKey = `${upstream.snapshotAt(time).seq} ${requestKey(e)}`;
    let rendered = memo.get(memoKey);
    if (rendered === undefined) {
      const a = upstream.answerAt(time, e.method, e.url, e.body ?? '');
      rendered = `${a.status} ${a.body}`;
      memo.set(memoKey, rendered);
    }
    return rendered;
  };
}
