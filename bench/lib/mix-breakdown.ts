/**
 * Where a mix's answers came from: client answers counted by route, freshness class and X-Cache
 * (and whether the URL was asked for the first time in the run), and upstream requests counted by
 * route and kind (plain or conditional), so a run says which routes and classes cost upstream
 * requests and why.
 */
import { ROUTES } from '../../src/routes/route-table.js';
import { createRouteMatcher } from '../../src/routes/route-matcher.js';
import type { RecordedRequest } from '../../testkit/index.js';
import { splitUrl } from '../../testkit/index.js';

const match = createRouteMatcher(ROUTES);

/**
 * The route id of a URL ('tip_poll' for GET /extended, 'other' for anything else); tx/events by
 * transaction and by address apart, as their classes differ.
 */
export function routeOf(url: string): string {
  const { path, query } = splitUrl(url);
  if (path === '/extended') return 'tip_poll';
  const found = match(path);
  if (found.kind !== 'match') return 'other';
  if (found.route.id === 'tx_events') return new URLSearchParams(query).has('tx_id') ? 'tx_events(tx_id)' : 'tx_events(address)';
  return found.route.id;
}

type Counts = Record<string, number>;
const bump = (counts: Counts, key: string, by = 1): void => {
  counts[key] = (counts[key] ?? 0) + by;
};

export class MixBreakdown {
  /** `route class X-Cache` -> client answers. */
  readonly answers: Counts = {};
  /** `route class` -> answers to a URL asked for the first time in the run. */
  readonly firstAsked: Counts = {};
  /** `route plain|conditional` -> upstream requests. */
  readonly upstream: Counts = {};

  answered(path: string, headers: Record<string, unknown>, first: boolean): void {
    const header = (name: string) => String(headers[name] ?? headers[name.toUpperCase()] ?? lowerLookup(headers, name) ?? '-');
    const key = `${routeOf(path)} ${header('x-cache-class')}`;
    bump(this.answers, `${key} ${header('x-cache')}`);
    if (first) bump(this.firstAsked, key);
  }

  fetched(requests: readonly RecordedRequest[]): void {
    for (const r of requests) bump(this.upstream, `${routeOf(r.url)} ${r.headers['if-none-match'] === undefined ? 'plain' : 'conditional'}`);
  }

  /** Rows sorted by count, each with its share per 1,000 of `clients`. */
  static table(counts: Counts, clients: number): Array<{ key: string; count: number; perThousand: number }> {
    return Object.entries(counts)
      .sort((a, b) => b[1] - a[1])
      .map(([key, count]) => ({ key, count, perThousand: Math.round((count / Math.max(1, clients)) * 10_000) / 10 }));
  }
}

function lowerLookup(headers: Record<string, unknown>, name: string): unknown {
  for (const key of Object.keys(headers)) if (key.toLowerCase() === name) return headers[key];
  return undefined;
}
