/**
 * The one read path (issue 15): get-or-fetch for one ReadSpec, whatever route or route family it
 * comes from. It owns the memory lookup (synchronous: the hit path), the shared-tier lookup, the
 * decision (decider.ts, asked once per request and by every other "may this be served now?"),
 * single-flight (in the process, and across instances through shared-flight.ts), revalidation
 * (If-None-Match; a 304 confirms the entry through spec.confirm), confirmation by another URL of
 * the same ETag scope, stale-while-revalidate, the tip safety revalidation behind the answer
 * (bounded: refreshInBackground) and stale-if-error, and the fetch: each upstream
 * answer is admitted here (spec.admit; the evidence an admission waits for is checked here),
 * and an invalid one is tried on the next upstream (upstream-exchange.ts). A spec says only what
 * to key, what to ask and how an answer becomes an entry.
 */
import type { Clock } from '../clock.js';
import type { BlockRef, ChainView } from '../chain/view.js';
import type { UpstreamAsk, UpstreamClient } from '../upstream/client.js';
import { UpstreamError } from '../upstream/errors.js';
import { passOn, type Admission, type Confirmation, type PassedOn, type Snapshot } from './admit.js';
import type { Decider } from './decider.js';
import type { CacheEntry } from './entry.js';
import { fallbackOf, type Decision, type Refresh } from './policy.js';
import type { ReadSpec } from './read-spec.js';
import type { CrossProcessFlight } from './shared-flight.js';
import { SingleFlight } from './single-flight.js';
import type { TieredStore } from './tiered-store.js';
import { CacheLookups, type Found } from './lookup.js';
import { ResourceValidations } from './resource-validations.js';
import { askAndAdmit, type Admitted } from './upstream-exchange.js';
import type { BackgroundRefreshOutcome, Telemetry } from '../telemetry/telemetry.js';

export type { PassedOn } from './admit.js';

export type CacheStatus = 'HIT' | 'MISS' | 'REVALIDATED' | 'STALE' | 'BYPASS';

/** What a read produced: a (possibly just stored) entry, or an upstream answer passed on. */
export type ReadResult = ({ cacheStatus: Exclude<CacheStatus, 'BYPASS'>; entry: CacheEntry } | { cacheStatus: 'BYPASS'; passed: PassedOn }) & {
  /** Seconds spent waiting for the upstream, when this request caused a fetch. */
  upstreamSeconds?: number;
};

/** The one memory lookup of a request and what the decision made of it. */
export type Lookup = Found;

/** About the client request a read serves, for what goes upstream with it. */
export interface ReadContext {
  /** The client request's id: sent upstream as X-Request-Id, so logs correlate end to end. */
  requestId?: string;
  /** The proxy's own read (the warm-up of a new block, src/live/block-warmer.ts): its lookups count no client lookup. */
  own?: boolean;
}

export interface ReadPathDeps {
  store: TieredStore;
  upstream: UpstreamClient;
  /** THE decision (decider.ts), shared with every other reader. */
  decider: Decider;
  chain: () => ChainView;
  clock: Clock;
  /** Single-flight across instances (Redis) or worker processes (the primary); absent: per process only. */
  sharedFlight?: CrossProcessFlight;
  telemetry: Telemetry;
  /**
   * Checks that a block is the canonical one at its height (the tracker's bounded, single-flight
   * check); absent: answers whose block is not known yet stay `tip`.
   */
  verifyCanonical?: (block: BlockRef) => Promise<void>;
  /**
   * Most refreshes running behind answers already given (stale-while-revalidate, the tip safety
   * revalidation) at once; past it one is skipped and the next request tries. Absent: 16.
   */
  maxBackgroundRefreshes?: number;
}

/**
 * The cap on refreshes behind answers for an upstream client that sends at most `maxConcurrent`
 * requests at once: a quarter of them, so that a burst of entries expiring together never
 * queues the misses clients wait for behind refreshes nobody waits for.
 */
export function backgroundRefreshCap(maxConcurrent: number): number {
  return Math.max(1, Math.floor(maxConcurrent / 4));
}

const DEFAULT_BACKGROUND_REFRESHES = 16;

/** What a refresh behind an answer came to, for the metric. */
function backgroundOutcome(result: ReadResult): BackgroundRefreshOutcome {
  switch (result.cacheStatus) {
    case 'REVALIDATED':
    case 'HIT': // another instance's answer, or one that landed meanwhile
      return 'confirmed';
    case 'MISS':
      return 'replaced';
    default: // a stale stand-in for a failed upstream, or an answer passed on: the entry stays as it was
      return 'failed';
  }
}

/** The spec's ask, with what this read adds: the ETag it revalidates, the client request's id. */
function askFor(spec: ReadSpec, refresh: Refresh, context: ReadContext): UpstreamAsk {
  if (refresh.action !== 'revalidate' && context.requestId === undefined) return spec.ask;
  const headers: Record<string, string> = { ...spec.ask.headers };
  if (refresh.action === 'revalidate') headers['if-none-match'] = refresh.etag;
  if (context.requestId !== undefined) headers['x-request-id'] = context.requestId;
  return { ...spec.ask, headers };
}

/** A flight's key: the entry's key and the activity generation it was asked in. */
const flightKey = (key: string, generation: number): string => (generation === 0 ? key : `${key}\u0000${generation}`);

/** The entry a fetch stored (a new answer, or one a 304 confirmed); not a stale stand-in, not an answer passed on. */
const storedEntry = (result: ReadResult): CacheEntry | undefined =>
  result.cacheStatus === 'MISS' || result.cacheStatus === 'REVALIDATED' ? result.entry : undefined;

export class ReadPath {
  private readonly flights = new SingleFlight<ReadResult>();
  private readonly lookups: CacheLookups;
  /** The proxy's own reads' lookups: decided alike, counted nowhere. */
  private readonly ownLookups: CacheLookups;
  /** ETags the upstream gave per shared scope: an expired entry another URL's answer confirms is not asked for again. */
  private readonly validations = new ResourceValidations();
  /** Refreshes running behind answers already given, against `maxBackgroundRefreshes`. */
  private backgroundRefreshes = 0;

  constructor(private readonly deps: ReadPathDeps) {
    this.lookups = new CacheLookups(deps);
    this.ownLookups = new CacheLookups(deps, true, false);
  }

  /** The whole hit path: a synchronous memory lookup and the decision (counted in lookup.ts). */
  lookup(key: string): Lookup {
    return this.lookups.memory(key);
  }

  /**
   * The answer for `spec`: `first` is the request's memory lookup when the caller made it
   * already (the hit path), else it is made here. Not async: a Redis-tier hit is the
   * second-hottest path, and each async frame it crosses costs a promise and a microtask hop; a
   * hit in Redis resolves straight from the lookup's promise.
   */
  read(spec: ReadSpec, first: Lookup = this.lookup(spec.key), context: ReadContext = {}): Promise<ReadResult> {
    if (first.decision.action === 'fresh') return Promise.resolve({ cacheStatus: 'HIT', entry: first.decision.entry });
    if (first.entry) return this.afterLookup(spec, first.decision, context);
    return (context.own ? this.ownLookups : this.lookups).shared(spec.key).then((shared) => {
      const decision = shared ? shared.decision : first.decision;
      if (decision.action === 'fresh') return { cacheStatus: 'HIT', entry: decision.entry };
      return this.afterLookup(spec, decision, context);
    });
  }

  /**
   * The proxy's own read of `spec` (the warm-up): the memory lookup, uncounted, and what it comes
   * to (`read`, with the same decision, single-flight, admission and evidence as a client's read).
   */
  prefetch(spec: ReadSpec): { fresh: boolean; read: () => Promise<ReadResult> } {
    const first = this.ownLookups.memory(spec.key);
    return { fresh: first.decision.action === 'fresh', read: () => this.read(spec, first, { own: true }) };
  }

  /**
   * An entry the cache holds for `key` (memory, then the shared tier) that may be served now, for
   * a reader's own use (the tx/events finality probe): no client asked for it, so no lookup is counted.
   */
  async freshEntry(key: string): Promise<CacheEntry | undefined> {
    const found = await this.deps.store.get(key);
    return found && this.deps.decider.isFresh(found.entry) ? found.entry : undefined;
  }

  /**
   * What an entry that is not fresh (or no entry) comes to: confirmed, served stale, or fetched.
   * Async so that anything thrown becomes the caller's rejection, never a throw into node:http.
   */
  private async afterLookup(spec: ReadSpec, decision: Decision, context: ReadContext): Promise<ReadResult> {
    if (decision.action === 'fresh') return { cacheStatus: 'HIT', entry: decision.entry };
    const refresh = decision.action === 'serve-stale-and-refresh' ? decision.refresh : decision;
    if (refresh.action === 'revalidate' && spec.etagScope !== undefined) {
      const confirmed = await this.confirmedByScope(spec, spec.etagScope, refresh);
      if (confirmed) return confirmed;
    }
    if (decision.action === 'serve-stale-and-refresh') {
      this.refreshInBackground(spec, decision.refresh, context);
      this.deps.telemetry.staleServed(spec.label, 'revalidating');
      return { cacheStatus: 'STALE', entry: decision.entry };
    }
    if (decision.action === 'serve-and-revalidate-behind') {
      this.refreshInBackground(spec, decision.refresh, context);
      return { cacheStatus: 'HIT', entry: decision.entry };
    }
    if (decision.action === 'refetch' && decision.purged) this.deps.telemetry.reorgPurged();
    return this.refreshOnce(spec, decision, context);
  }

  /**
   * The entry confirmed without asking the upstream: since it was validated, the upstream gave its
   * very ETag for another URL of the same scope (etag-scope.ts) under the tip that is current now,
   * so a revalidation would be answered 304. Stamped with that answer's chain and time, as a 304
   * of its own would be; undefined unless the decision finds it fresh then.
   */
  private async confirmedByScope(spec: ReadSpec, scope: string, refresh: Refresh & { action: 'revalidate' }): Promise<ReadResult | undefined> {
    const asked = this.validations.confirmedAt(scope, refresh.etag);
    if (!asked || asked.at < refresh.entry.validatedAt) return undefined;
    const confirmed = await spec.confirm(refresh.entry, asked, 'cache');
    if (confirmed.kind !== 'entry' || !this.deps.decider.isFresh(confirmed.entry)) return undefined;
    void this.deps.store.set(spec.key, confirmed.entry);
    this.deps.telemetry.etagScopeConfirmed(spec.label);
    return { cacheStatus: 'HIT', entry: confirmed.entry };
  }

  /** What the upstream said about a scope's ETag: 200, 404 and 304 answers alike. */
  private learn(spec: ReadSpec, etag: string | undefined, asked: Snapshot): void {
    if (spec.etagScope !== undefined && etag !== undefined) this.validations.record(spec.etagScope, etag, asked);
  }

  /**
   * A refresh nobody waits for, behind an answer already given: at most one per key (a flight
   * running for it will land; those who need its answer join it), and at most
   * `maxBackgroundRefreshes` in all, so a burst of entries expiring together cannot fill the
   * upstream client's queue. One skipped at the cap is the next request's to start. Its failure
   * leaves the entry as it was (fetch writes nothing then), counted.
   */
  private refreshInBackground(spec: ReadSpec, refresh: Refresh, context: ReadContext): void {
    if (this.flights.running(flightKey(spec.key, this.deps.decider.activityGeneration()))) return;
    const telemetry = this.deps.telemetry;
    if (this.backgroundRefreshes >= (this.deps.maxBackgroundRefreshes ?? DEFAULT_BACKGROUND_REFRESHES)) {
      telemetry.backgroundRefreshed(spec.label, 'skipped');
      return;
    }
    this.backgroundRefreshes++;
    // An async frame: whatever the flight's start throws becomes a rejection, and the count goes down.
    (async () => this.refreshOnce(spec, refresh, context))()
      .then(
        (result) => telemetry.backgroundRefreshed(spec.label, backgroundOutcome(result)),
        () => telemetry.backgroundRefreshed(spec.label, 'failed'),
      )
      .finally(() => this.backgroundRefreshes--)
      .catch(() => undefined); // a throwing telemetry must not become an unhandled rejection
  }

  /**
   * Requests that join a flight share its upstream request, and so its request id. Flights are
   * keyed by the activity generation as well (activity.ts): a read that starts after a broadcast
   * or a mempool change leads a flight of its own rather than joining one sent before it. A read
   * that joined and saw such a change while it waited decides once more on the flight's answer
   * (the one decision, rules a and b): when the change names what the answer is about, it asks
   * again, once, in the flight of the new generation (shared with every read in the same case).
   */
  private refreshOnce(spec: ReadSpec, refresh: Refresh, context: ReadContext): Promise<ReadResult> {
    const generation = this.deps.decider.activityGeneration();
    const lead = (): Promise<ReadResult> => this.landedMeanwhile(spec.key) ?? this.fetchAcrossInstances(spec, refresh, context);
    const joined = this.flights.running(flightKey(spec.key, generation));
    if (!joined) return this.flights.run(flightKey(spec.key, generation), lead);
    this.deps.telemetry.singleflightJoined(spec.label);
    return joined.then((result) => {
      const now = this.deps.decider.activityGeneration();
      if (now === generation || result.cacheStatus === 'BYPASS' || !this.deps.decider.isChangedByActivity(result.entry)) return result;
      return this.flights.run(flightKey(spec.key, now), lead, () => this.deps.telemetry.singleflightJoined(spec.label));
    });
  }

  /**
   * A flight for this key may have ended while this request was looking in Redis (a slow or failed
   * read, common under load): its answer is in the memory tier now, and leading a new flight would
   * ask the upstream again for what it has just answered.
   */
  private landedMeanwhile(key: string): Promise<ReadResult> | undefined {
    const entry = this.deps.store.peek(key);
    if (!entry || !this.deps.decider.isFresh(entry)) return undefined;
    return Promise.resolve({ cacheStatus: 'HIT', entry });
  }

  private async fetchAcrossInstances(spec: ReadSpec, refresh: Refresh, context: ReadContext): Promise<ReadResult> {
    const flight = this.deps.sharedFlight;
    if (!flight) return this.fetch(spec, refresh, false, context);
    const outcome = await flight.run(
      spec.key,
      spec.label,
      (mustLand) => this.fetch(spec, refresh, mustLand, context),
      (entry) => this.deps.decider.isFresh(entry),
      storedEntry,
    );
    if (outcome.kind === 'fetched') return outcome.value;
    void this.deps.store.set(spec.key, outcome.entry, { memoryOnly: true });
    return { cacheStatus: 'HIT', entry: outcome.entry };
  }

  /** `mustLand`: the shared-flight lock holder, whose entry must be in Redis before it releases. */
  private async fetch(spec: ReadSpec, refresh: Refresh, mustLand: boolean, context: ReadContext): Promise<ReadResult> {
    // The answer is stamped with the chain and time from before it was asked for: a block that
    // lands meanwhile must make it stale, not make it look current.
    const asked: Snapshot = { chain: this.deps.chain(), at: this.deps.clock() };
    const fallback = fallbackOf(refresh);
    const started = this.deps.clock();
    let got: Admitted<Admission>;
    try {
      // Each attempt's answer is admitted (and its body parsed) as it comes: a malformed body, or
      // one about another resource, fails the attempt, which is tried on another upstream.
      got = await askAndAdmit(this.deps.upstream, askFor(spec, refresh, context), spec.label, (answer) => this.withEvidence(() => spec.admit(answer, asked)));
    } catch (error) {
      const stale = this.staleFallback(spec, fallback, error);
      if (stale) return stale;
      throw error;
    }
    const { response } = got;
    const upstreamSeconds = (this.deps.clock() - started) / 1000;
    if (response.status >= 500) {
      // Stale data beats an error; without it the client gets the upstream's own 5xx.
      const failure = new UpstreamError('5xx', response.upstream, `upstream answered ${response.status}`);
      return this.staleFallback(spec, fallback, failure) ?? { cacheStatus: 'BYPASS', passed: passOn(response).passed, upstreamSeconds };
    }
    if (refresh.action === 'revalidate') {
      const notModified = response.status === 304;
      this.deps.telemetry.revalidated(notModified ? 'not_modified' : 'modified');
      if (notModified) {
        const confirmed = await this.withEvidence(() => spec.confirm(refresh.entry, asked, response.upstream));
        // Stored bytes the verified chain now disagrees with are not confirmed by a 304: fetched in full.
        if (confirmed.kind === 'failure') return this.fetch(spec, { action: 'refetch' }, mustLand, context);
        this.learn(spec, refresh.etag, asked);
        await this.write(spec.key, confirmed.entry, mustLand);
        return { cacheStatus: 'REVALIDATED', entry: confirmed.entry, upstreamSeconds };
      }
    }
    // Only a 304 the read did not ask for reaches here unadmitted (the client refuses those): passed on.
    const admission = got.admission ?? passOn(response);
    if (admission.kind === 'failure') throw admission.error;
    if (admission.kind === 'pass-on') {
      // About what was asked but not where the chain model says it can be: the client gets the
      // upstream's answer, nothing is stored, and the upstream is not blamed (the model may be behind).
      if (admission.disagreement)
        this.deps.telemetry.chainDisagreement(spec.label, response.upstream, admission.disagreement.reason, admission.disagreement.why);
      return { cacheStatus: 'BYPASS', passed: admission.passed, upstreamSeconds };
    }
    this.learn(spec, admission.entry.upstreamEtag, asked);
    await this.write(spec.key, admission.entry, mustLand);
    return { cacheStatus: 'MISS', entry: admission.entry, upstreamSeconds };
  }

  /**
   * An admission made once more after the canonical block it waited for was checked: the answer
   * is final only when its block is that one, and disagrees with the chain model when it is not.
   */
  private async withEvidence<A extends Admission | Confirmation>(admitOnce: () => A | Promise<A>): Promise<A> {
    const first = await admitOnce();
    const verify = this.deps.verifyCanonical;
    if (first.kind !== 'entry' || first.unverified === undefined || !verify) return first;
    await verify(first.unverified);
    return admitOnce();
  }

  /** Memory at once; the shared tier in the background unless the caller must know it landed. */
  private async write(key: string, entry: CacheEntry, mustLand: boolean): Promise<void> {
    const landed = this.deps.store.set(key, entry);
    if (mustLand) await landed;
  }

  private staleFallback(spec: ReadSpec, fallback: CacheEntry | undefined, error: unknown): ReadResult | undefined {
    if (!fallback || !(error instanceof UpstreamError)) return undefined;
    const standIn = this.deps.decider.standIn(fallback);
    if (!standIn) return undefined;
    this.deps.telemetry.staleServed(spec.label, error.kind);
    return { cacheStatus: 'STALE', entry: standIn };
  }
}
