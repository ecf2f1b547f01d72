/**
 * Get-or-fetch for one canonical request, acting on the policy's decision record: a fresh
 * entry is served; a just-expired mempool entry is served while one refresh runs; otherwise
 * the upstream is asked (If-None-Match when the decision says revalidate), one request per
 * key at a time (single-flight in the process, and across instances through shared-flight.ts
 * when configured). When every upstream fails, the decision's fallback is served if the
 * stale-if-error rules still allow it. The answer becomes an entry in admit.ts.
 */
import type { Clock } from '../clock.js';
import type { BlockRef, ChainView } from '../chain/view.js';
import type { RouteSpec } from '../routes/route-spec.js';
import type { CanonicalRequest } from '../routes/validate.js';
import type { UpstreamClient, UpstreamResponse } from '../upstream/client.js';
import { UpstreamError } from '../upstream/errors.js';
import { admit, confirm, passOn, type Admission, type PassedOn, type Snapshot } from './admit.js';
import type { CacheEntry } from './entry.js';
import { etagScope } from './etag-scope.js';
import { entryKey, transactionKey } from './key.js';
import { asServedNow, evaluate, fallbackOf, isUsableWhenFailing, type Decision, type Refresh, type StaleSettings, type TtlSettings } from './policy.js';
import type { SharedFlight } from './shared-flight.js';
import { SingleFlight } from './single-flight.js';
import type { TieredStore } from './tiered-store.js';
import { CacheLookups, type Found } from './lookup.js';
import { ResourceValidations } from './resource-validations.js';
import type { Telemetry } from '../telemetry/telemetry.js';

export type { PassedOn } from './admit.js';

export type CacheStatus = 'HIT' | 'MISS' | 'REVALIDATED' | 'STALE' | 'BYPASS';

/** What a read produced: a (possibly just stored) entry, or an upstream answer passed on. */
export type ReadResult = (
  | { cacheStatus: Exclude<CacheStatus, 'BYPASS'>; entry: CacheEntry }
  | { cacheStatus: 'BYPASS'; passed: PassedOn }
) & {
  /** Seconds spent waiting for the upstream, when this request caused a fetch. */
  upstreamSeconds?: number;
};

/** The one memory lookup of a request and what the policy decided about it. */
export type Lookup = Found;

/** About the client request a read serves, for what goes upstream with it. */
export interface ReadContext {
  /** The client request's id: sent upstream as X-Request-Id, so logs correlate end to end. */
  requestId?: string;
}

export interface ReadThroughDeps {
  store: TieredStore;
  upstream: UpstreamClient;
  chain: () => ChainView;
  ttl: TtlSettings;
  stale: StaleSettings;
  keyPrefix: string;
  clock: Clock;
  /** Cross-instance single-flight (Redis); absent: per process only. */
  sharedFlight?: SharedFlight;
  telemetry: Telemetry;
  /**
   * Checks that a block is the canonical one at its height (the tracker's bounded, single-flight
   * check); absent: answers whose block is not known yet stay `tip`.
   */
  verifyCanonical?: (block: BlockRef) => Promise<void>;
}

/**
 * An admission made once more after the canonical block it waited for was checked: the answer
 * is final only when its block is that one, and contradicts the chain when it is not.
 */
export async function admitChecked<A extends Admission>(admitOnce: () => A, verifyCanonical: ((block: BlockRef) => Promise<void>) | undefined): Promise<A> {
  const first = admitOnce();
  if (first.kind !== 'entry' || first.unverified === undefined || !verifyCanonical) return first;
  await verifyCanonical(first.unverified);
  return admitOnce();
}

/** Nothing of the client's request goes upstream but its id; a revalidation adds its ETag. */
function upstreamHeaders(refresh: Refresh, context: ReadContext): Record<string, string> | undefined {
  const headers: Record<string, string> = {};
  if (refresh.action === 'revalidate') headers['if-none-match'] = refresh.etag;
  if (context.requestId !== undefined) headers['x-request-id'] = context.requestId;
  return Object.keys(headers).length > 0 ? headers : undefined;
}

export class ReadThrough {
  private readonly flights = new SingleFlight<ReadResult>();
  private readonly lookups: CacheLookups;
  /** ETags the upstream gave per shared scope: an expired entry another URL's answer confirms is not asked for again. */
  private readonly validations = new ResourceValidations();

  constructor(private readonly deps: ReadThroughDeps) {
    this.lookups = new CacheLookups(deps);
  }

  keyFor(route: RouteSpec, request: CanonicalRequest): string {
    return entryKey(this.deps.keyPrefix, route, request);
  }

  /** The whole hit path: a synchronous memory lookup and a pure decision (counted in lookup.ts). */
  lookup(key: string): Lookup {
    return this.lookups.memory(key);
  }

  /**
   * Not async: a Redis-tier hit is the second-hottest path, and each async frame it crosses costs
   * a promise and a microtask hop; a hit in Redis resolves straight from the lookup's promise.
   */
  read(
    route: RouteSpec,
    request: CanonicalRequest,
    first: Lookup = this.lookup(this.keyFor(route, request)),
    context: ReadContext = {},
  ): Promise<ReadResult> {
    const { key } = first;
    if (first.decision.action === 'fresh') return Promise.resolve({ cacheStatus: 'HIT', entry: first.decision.entry });
    if (first.entry) return this.afterLookup(key, route, request, first.decision, context);
    return this.lookups.shared(key).then((shared) => {
      const decision = shared ? shared.decision : first.decision;
      if (decision.action === 'fresh') return { cacheStatus: 'HIT', entry: decision.entry };
      return this.afterLookup(key, route, request, decision, context);
    });
  }

  /**
   * What an entry that is not fresh (or no entry) comes to: confirmed, served stale, or fetched.
   * Async so that anything thrown becomes the caller's rejection, never a throw into node:http.
   */
  private async afterLookup(key: string, route: RouteSpec, request: CanonicalRequest, decision: Decision, context: ReadContext): Promise<ReadResult> {
    if (decision.action === 'fresh') return { cacheStatus: 'HIT', entry: decision.entry };
    const refresh = decision.action === 'serve-stale-and-refresh' ? decision.refresh : decision;
    if (refresh.action === 'revalidate') {
      const confirmed = this.confirmedByScope(key, route, request, refresh);
      if (confirmed) return confirmed;
    }
    if (decision.action === 'serve-stale-and-refresh') {
      this.refreshOnce(key, route, request, decision.refresh, context).catch(() => undefined); // the refresh's failure is the next request's concern
      this.deps.telemetry.staleServed(route.id, 'revalidating');
      return { cacheStatus: 'STALE', entry: decision.entry };
    }
    if (decision.action === 'refetch' && decision.purged) this.deps.telemetry.reorgPurged();
    return this.refreshOnce(key, route, request, decision, context);
  }

  /**
   * The entry confirmed without asking the upstream: since it was validated, the upstream gave its
   * very ETag for another URL of the same scope (etag-scope.ts) under the tip that is current now,
   * so a revalidation would be answered 304. Stamped with that answer's chain and time, as a 304
   * of its own would be; undefined unless that makes it fresh.
   */
  private confirmedByScope(key: string, route: RouteSpec, request: CanonicalRequest, refresh: Refresh & { action: 'revalidate' }): ReadResult | undefined {
    const scope = etagScope(route, request);
    const asked = scope === undefined ? undefined : this.validations.confirmedAt(scope, refresh.etag);
    if (!asked || asked.at < refresh.entry.validatedAt) return undefined;
    const confirmed = confirm(refresh.entry, { freshness: route.freshness, facts: request.facts, asked });
    if (confirmed.kind !== 'entry' || !this.isFresh(confirmed.entry)) return undefined;
    void this.deps.store.set(key, confirmed.entry);
    this.deps.telemetry.etagScopeConfirmed(route.id);
    return { cacheStatus: 'HIT', entry: confirmed.entry };
  }

  /** Whether an entry may be served as it is, now, under the current tip. */
  private isFresh(entry: CacheEntry): boolean {
    return evaluate(entry, this.deps.clock(), this.deps.chain(), this.deps.ttl) === 'fresh';
  }

  /** What the upstream said about a scope's ETag: 200, 404 and 304 answers alike. */
  private learn(route: RouteSpec, request: CanonicalRequest, etag: string | undefined, asked: Snapshot): void {
    const scope = etagScope(route, request);
    if (scope !== undefined && etag !== undefined) this.validations.record(scope, etag, asked);
  }

  /** Requests that join a flight share its upstream request, and so its request id. */
  private refreshOnce(key: string, route: RouteSpec, request: CanonicalRequest, refresh: Refresh, context: ReadContext): Promise<ReadResult> {
    return this.flights.run(
      key,
      () => this.landedMeanwhile(key) ?? this.fetchAcrossInstances(key, route, request, refresh, context),
      () => this.deps.telemetry.singleflightJoined(route.id),
    );
  }

  /**
   * A flight for this key may have ended while this request was looking in Redis (a slow or failed
   * read, common under load): its answer is in the memory tier now, and leading a new flight would
   * ask the upstream again for what it has just answered.
   */
  private landedMeanwhile(key: string): Promise<ReadResult> | undefined {
    const entry = this.deps.store.peek(key);
    if (!entry || !this.isFresh(entry)) return undefined;
    return Promise.resolve({ cacheStatus: 'HIT', entry });
  }

  private async fetchAcrossInstances(
    key: string,
    route: RouteSpec,
    request: CanonicalRequest,
    refresh: Refresh,
    context: ReadContext,
  ): Promise<ReadResult> {
    const flight = this.deps.sharedFlight;
    if (!flight) return this.fetch(key, route, request, refresh, false, context);
    const outcome = await flight.run(
      key,
      route.id,
      (mustLand) => this.fetch(key, route, request, refresh, mustLand, context),
      (entry) => this.isFresh(entry),
    );
    if (outcome.kind === 'fetched') return outcome.value;
    void this.deps.store.set(key, outcome.entry, { memoryOnly: true });
    return { cacheStatus: 'HIT', entry: outcome.entry };
  }

  /** `mustLand`: the shared-flight lock holder, whose entry must be in Redis before it releases. */
  private async fetch(
    key: string,
    route: RouteSpec,
    request: CanonicalRequest,
    refresh: Refresh,
    mustLand: boolean,
    context: ReadContext,
  ): Promise<ReadResult> {
    // The answer is stamped with the chain and time from before it was asked for: a block that
    // lands meanwhile must make it stale, not make it look current.
    const asked: Snapshot = { chain: this.deps.chain(), at: this.deps.clock() };
    // Only tx/events by tx id has a finality probe to wait for; other misses go out at once.
    const finalTxHeight = request.facts.eventsOfTx ? await this.finalTxHeight(request.facts.eventsOfTx) : undefined;
    const answerFacts = { freshness: route.freshness, facts: request.facts, asked, finalTxHeight };
    const fallback = fallbackOf(refresh);
    // The admission of the last answer `validate` accepted: the answer get() returns, when it returns one.
    let admitted: { answer: UpstreamResponse; admission: Admission } | undefined;
    const started = this.deps.clock();
    let response: UpstreamResponse;
    try {
      response = await this.deps.upstream.get({
        path: request.upstreamPath,
        route: route.id,
        headers: upstreamHeaders(refresh, context),
        // Each attempt's answer is admitted (and its body parsed) here: a malformed body, or one
        // that contradicts the verified chain, fails the attempt, which is retried on another upstream.
        validate: async (answer) => {
          const admission = await admitChecked(() => admit({ ...answerFacts, response: answer }), this.deps.verifyCanonical);
          if (admission.kind === 'failure') throw admission.error;
          admitted = { answer, admission };
        },
      });
    } catch (error) {
      const stale = this.staleFallback(route, fallback, error);
      if (stale) return stale;
      throw error;
    }
    const upstreamSeconds = (this.deps.clock() - started) / 1000;
    if (response.status >= 500) {
      // Stale data beats an error; without it the client gets the upstream's own 5xx.
      const failure = new UpstreamError('5xx', response.upstream, `upstream answered ${response.status}`);
      return this.staleFallback(route, fallback, failure) ?? { cacheStatus: 'BYPASS', passed: passOn(response).passed, upstreamSeconds };
    }
    if (refresh.action === 'revalidate') {
      const notModified = response.status === 304;
      this.deps.telemetry.revalidated(notModified ? 'not_modified' : 'modified');
      if (notModified) {
        const confirmed = await admitChecked(() => confirm(refresh.entry, answerFacts, response.upstream), this.deps.verifyCanonical);
        // Stored bytes the verified chain now contradicts are not confirmed by a 304: fetched in full.
        if (confirmed.kind === 'failure') return this.fetch(key, route, request, { action: 'refetch' }, mustLand, context);
        this.learn(route, request, refresh.etag, asked);
        await this.write(key, confirmed.entry, mustLand);
        return { cacheStatus: 'REVALIDATED', entry: confirmed.entry, upstreamSeconds };
      }
    }
    const admission = admitted?.answer === response ? admitted.admission : admit({ ...answerFacts, response });
    if (admission.kind === 'failure') throw admission.error;
    if (admission.kind === 'pass-on') return { cacheStatus: 'BYPASS', passed: admission.passed, upstreamSeconds };
    this.learn(route, request, admission.entry.upstreamEtag, asked);
    await this.write(key, admission.entry, mustLand);
    return { cacheStatus: 'MISS', entry: admission.entry, upstreamSeconds };
  }

  /** Memory at once; the shared tier in the background unless the caller must know it landed. */
  private async write(key: string, entry: CacheEntry, mustLand: boolean): Promise<void> {
    const landed = this.deps.store.set(key, entry);
    if (mustLand) await landed;
  }

  /** tx/events by tx id is final when the cache already holds that transaction as final. */
  private async finalTxHeight(txId: string): Promise<number | undefined> {
    const found = await this.deps.store.get(transactionKey(this.deps.keyPrefix, txId, ''));
    if (found?.entry.cls !== 'final') return undefined;
    // A final entry a reorg made suspect says nothing any more.
    return this.isFresh(found.entry) ? found.entry.height : undefined;
  }

  private staleFallback(route: RouteSpec, fallback: CacheEntry | undefined, error: unknown): ReadResult | undefined {
    if (!fallback || !(error instanceof UpstreamError)) return undefined;
    const chain = this.deps.chain();
    if (!isUsableWhenFailing(fallback, this.deps.clock(), chain, this.deps.ttl, this.deps.stale)) return undefined;
    this.deps.telemetry.staleServed(route.id, error.kind);
    return { cacheStatus: 'STALE', entry: asServedNow(fallback, chain) };
  }
}
