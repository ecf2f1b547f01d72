/**
 * What the one read path (issue 15) needs to serve one canonical request, whatever it is: one of
 * the 13 routes (built from its RouteSpec) or a route family of the wider read surface (built
 * from the surface table). The read path owns the lookup, the decision, single-flight,
 * revalidation, stale fallbacks and the fetch; a spec says only what to key, what to ask the
 * upstream, and how an answer becomes an entry (pure steps, which may wait for evidence).
 */
import type { UpstreamResponse } from '../upstream/client.js';
import type { Admission, Confirmation, Snapshot } from './admit.js';
import type { CacheEntry } from './entry.js';

/** The one upstream request a read makes (the client's request as the upstream would read it). */
export interface UpstreamAsk {
  method: 'GET' | 'POST';
  /** Path and query, as forwarded. */
  path: string;
  /** POST reads only: the body exactly as forwarded. */
  body?: Buffer;
  /** Request headers the upstream reads for this request (a POST body's content-type). */
  headers?: Readonly<Record<string, string>>;
}

export interface ReadSpec {
  /** The whole cache key (bounded; never shared by two requests the upstream answers differently). */
  key: string;
  /** A bounded label for metrics and logs: the route id, or the surface family id. */
  label: string;
  ask: UpstreamAsk;
  /** An upstream answer as an entry to store, an answer to pass on unstored, or a failure (retried elsewhere). */
  admit(answer: UpstreamResponse, asked: Snapshot): Admission | Promise<Admission>;
  /** What a 304 makes of the stored entry. */
  confirm(entry: CacheEntry, asked: Snapshot, upstream: string): Confirmation | Promise<Confirmation>;
  /** The scope whose upstream ETag other URLs share (etag-scope.ts); absent: none. */
  etagScope?: string;
}
