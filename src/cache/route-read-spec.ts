/**
 * The ReadSpec of one of the 13 routes' single-reader requests (the read path's input): keyed by
 * entryKey, asked as GET of the canonical upstream path, admitted and confirmed by admit.ts
 * under the route's freshness rules and the request's facts, its ETag scope from etag-scope.ts.
 * A pure function of the canonical request (the dispatcher memoizes it per URL with the rest of
 * the prepared request), but for the tx/events finality probe, which asks the read path.
 */
import type { RouteSpec } from '../routes/route-spec.js';
import type { CanonicalRequest } from '../routes/validate.js';
import { admit, confirm, type Admission, type AdmitInput, type Confirmation, type Snapshot } from './admit.js';
import type { CacheEntry } from './entry.js';
import { etagScope } from './etag-scope.js';
import { entryKey, transactionKey } from './key.js';
import type { ReadSpec } from './read-spec.js';

export interface RouteReadSpecDeps {
  keyPrefix: string;
  /** An entry the cache holds for a key that may be served now (ReadPath.freshEntry): the finality probe. */
  freshEntry: (key: string) => Promise<CacheEntry | undefined>;
}

export type RouteReadSpecs = (route: RouteSpec, request: CanonicalRequest) => ReadSpec;

/** An admitted or confirmed entry of a route that may lag the mempool, marked so (entry.ts `lagsMempool`). */
function markLagging<A extends Admission | Confirmation>(admission: A): A {
  return admission.kind === 'entry' ? { ...admission, entry: { ...admission.entry, lagsMempool: true } } : admission;
}

export function routeReadSpecs(deps: RouteReadSpecDeps): RouteReadSpecs {
  return (route, request) => {
    const base = {
      key: entryKey(deps.keyPrefix, route, request),
      label: route.id,
      ask: { method: 'GET', path: request.upstreamPath } as const,
      etagScope: etagScope(route, request),
    };
    const facts = (asked: Snapshot, finalTxHeight?: number): Omit<AdmitInput, 'response'> => ({
      freshness: route.freshness,
      facts: request.facts,
      asked,
      finalTxHeight,
    });
    const txId = request.facts.eventsOfTx;
    if (txId === undefined) {
      const mark = route.lagsMempool ? markLagging : <A>(admission: A): A => admission;
      return {
        ...base,
        admit: (response, asked) => mark(admit({ ...facts(asked), response })),
        confirm: (entry, asked, upstream) => mark(confirm(entry, facts(asked), upstream)),
      };
    }
    // tx/events by tx id is final when the cache already holds that transaction as final (and the
    // decision still serves it: a final entry a reorg made suspect says nothing any more). Probed
    // once per request sent upstream (per `asked`), however many answers it admits.
    const probes = new WeakMap<Snapshot, Promise<number | undefined>>();
    const finalTxHeight = (asked: Snapshot): Promise<number | undefined> => {
      let probe = probes.get(asked);
      if (!probe) {
        probe = deps.freshEntry(transactionKey(deps.keyPrefix, txId, '')).then((entry) => (entry?.cls === 'final' ? entry.height : undefined));
        probes.set(asked, probe);
      }
      return probe;
    };
    return {
      ...base,
      admit: async (response, asked) => admit({ ...facts(asked, await finalTxHeight(asked)), response }),
      confirm: async (entry, asked, upstream) => confirm(entry, facts(asked, await finalTxHeight(asked)), upstream),
    };
  };
}
