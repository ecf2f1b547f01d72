/**
 * What the one read path (issue 15) needs to serve one canonical request, whatever it is: one of
 * the 13 routes (built from its RouteSpec) or a route family of the wider read surface (built
 * from the surface table). The read path owns the lookup, the decision, single-flight,
 * revalidation, stale fallbacks and the fetch; a spec says only what to key, what to ask the
 * upstream, and how an answer becomes an entry (pure steps, which may wait for evidence).
 *
 * Use (read-path.ts): a GET spec is a pure function of its URL, so build it once per URL with the
 * rest of the prepared request; then `readPath.lookup(spec.key)` (synchronous, the hit path: a
 * `fresh` decision is written at once) and otherwise `readPath.read(spec, lookup, { requestId })`.
 * Entries are stamped with `asked` (the chain and time from before the request left: admit.ts
 * `stamp`), so a block that lands meanwhile makes them stale; the read path decides the rest.
 */
import type { UpstreamAsk, UpstreamResponse } from '../upstream/client.js';
import type { Admission, Confirmation, Snapshot } from './admit.js';
import type { CacheEntry } from './entry.js';

export type { UpstreamAsk } from '../upstream/client.js';

export interface ReadSpec {
  /** The whole cache key (bounded; never shared by two requests the upstream answers differently). */
  key: string;
  /** A bounded label for metrics and logs: the route id, or the surface family id. */
  label: string;
  ask: UpstreamAsk;
  /**
   * An upstream answer (any status but a 5xx and a solicited 304, which the read path handles
   * itself) as an entry to store, an answer to pass on unstored, or a failure: the answer is
   * invalid for what was asked, counts against its upstream and the ask is tried on the next
   * one. An entry admitted with `unverified` (final were its block checked as canonical) is
   * admitted once more after the read path had that block checked.
   */
  admit(answer: UpstreamResponse, asked: Snapshot): Admission | Promise<Admission>;
  /**
   * What a 304 makes of the stored entry (`upstream`: who answered it; 'cache' when another
   * URL's answer of the same ETag scope confirms it). A failure: the stored bytes contradict the
   * chain verified now, and are fetched again in full.
   */
  confirm(entry: CacheEntry, asked: Snapshot, upstream: string): Confirmation | Promise<Confirmation>;
  /** The scope whose upstream ETag other URLs share (etag-scope.ts); absent: none. */
  etagScope?: string;
}
