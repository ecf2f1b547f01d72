/**
 * Get-or-fetch for one canonical request: memory, then the shared tier, then one upstream
 * request per key at a time (single-flight in the process, and across instances through a
 * Redis lock when configured). Expired entries with an ETag are revalidated with
 * If-None-Match; just-expired mempool entries are served while one refresh runs; when every
 * upstream fails, an entry still allowed by the stale-if-error rules is served instead.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { UpstreamError } from '../upstream/errors.js';
import type { UpstreamClient, UpstreamResponse } from '../upstream/client.js';
import type { RouteSpec } from '../routes/route-spec.js';
import type { CanonicalRequest } from '../routes/validate.js';
import type { CacheEntry, FreshnessClass } from './entry.js';
import { routeKey } from './key.js';
import {
  classify,
  evaluate,
  isUsableWhenFailing,
  type ChainView,
  type Classification,
  type StaleSettings,
  type TtlSettings,
  type Verdict,
} from './policy.js';
import { SingleFlight } from './single-flight.js';
import type { SharedLock } from './store.js';
import type { TieredStore } from './tiered-store.js';

export type CacheStatus = 'HIT' | 'MISS' | 'REVALIDATED' | 'STALE' | 'BYPASS';

/** An upstream answer passed on without being stored (5xx, upstream 4xx other than 404). */
export interface PassedOn {
  status: number;
  body: Buffer;
  /** The upstream's own headers worth keeping, cache-control and etag included. */
  headers: Record<string, string>;
}

/** What a read produced: a (possibly just stored) entry, or an upstream answer passed on. */
export type ReadResult = (
  | { cacheStatus: Exclude<CacheStatus, 'BYPASS'>; entry: CacheEntry }
  | { cacheStatus: 'BYPASS'; passed: PassedOn }
) & {
  /** Seconds spent waiting for the upstream, when this request caused a fetch. */
  upstreamSeconds?: number;
};

export interface ReadObserver {
  onJoin?(route: string): void;
  onRevalidation?(result: 'not_modified' | 'modified'): void;
  /** reason: the upstream failure kind, or `revalidating` for stale-while-revalidate. */
  onStale?(route: string, reason: string, cls: FreshnessClass): void;
  onReorgPurge?(): void;
  onSharedWait?(route: string, result: 'filled' | 'timeout'): void;
}

export interface Snapshot {
  chain: ChainView;
  at: number;
}

export interface SharedFlightSettings {
  lock: SharedLock;
  lockTtlMs: number;
  waitMs: number;
}

export interface ReadThroughDeps {
  store: TieredStore;
  upstream: UpstreamClient;
  chain: () => ChainView;
  ttl: TtlSettings;
  stale: StaleSettings;
  keyPrefix: string;
  /** Cross-instance single-flight (Redis); absent: per process only. */
  shared?: SharedFlightSettings;
  now?: () => number;
  observer?: ReadObserver;
}

/** Upstream headers a client should still see on a cached answer. */
const FORWARDED_HEADERS = ['content-type', 'warning', 'x-api-version'] as const;
const SHARED_POLL_MS = 15;

export function forwardedHeaders(response: UpstreamResponse, extra: readonly string[] = []): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of [...FORWARDED_HEADERS, ...extra]) {
    const value = response.headers[name];
    if (value !== undefined) headers[name] = value;
  }
  return headers;
}

/** A strong validator for bodies the upstream sent without one (computed once, at store time). */
export function bodyEtag(body: Buffer): string {
  return `"${createHash('sha1').update(body).digest('base64url')}"`;
}

const isStrongEtag = (etag: string | undefined): etag is string => etag !== undefined && etag.startsWith('"');

/**
 * The upstream answers these routes in JSON. A 200 or 404 (the statuses the cache keeps) that
 * is not JSON, or does not parse (an error page from something in between, a cut body), is
 * an upstream fault: retried elsewhere and never cached.
 */
export function assertWellFormed(response: UpstreamResponse): void {
  if (response.status !== 200 && response.status !== 404) return;
  const invalid = (why: string, cause?: unknown) =>
    new UpstreamError('invalid', response.upstream, `${why} from ${response.upstream} (status ${response.status})`, { cause });
  if (!(response.headers['content-type'] ?? '').includes('json')) throw invalid('a body that is not JSON');
  try {
    JSON.parse(response.body.toString('utf8'));
  } catch (error) {
    throw invalid('invalid JSON', error);
  }
}

export class ReadThrough {
  private readonly flights = new SingleFlight<ReadResult>();
  private readonly now: () => number;

  constructor(private readonly deps: ReadThroughDeps) {
    this.now = deps.now ?? Date.now;
  }

  keyFor(route: RouteSpec, request: CanonicalRequest): string {
    return routeKey(this.deps.keyPrefix, route.id, request.upstreamPath);
  }

  /** The whole hit path: a synchronous memory lookup and a pure freshness check. */
  peekFresh(key: string): CacheEntry | undefined {
    const entry = this.deps.store.peek(key);
    if (!entry || evaluate(entry, this.now(), this.deps.chain(), this.deps.ttl) !== 'fresh') return undefined;
    this.deps.store.countLookup('memory', entry.cls, 'hit');
    return entry;
  }

  async read(route: RouteSpec, request: CanonicalRequest): Promise<ReadResult> {
    const key = this.keyFor(route, request);
    const found = await this.deps.store.get(key);
    const held = found?.entry;
    const verdict = held ? evaluate(held, this.now(), this.deps.chain(), this.deps.ttl) : undefined;
    // Memory-tier lookups are counted here, once: served fresh is a hit, anything that needs
    // the upstream a miss (a stale serve is counted as `stale` where it happens).
    if (found?.tier === 'memory' && verdict !== 'stale-while-revalidate') {
      this.deps.store.countLookup('memory', found.entry.cls, verdict === 'fresh' ? 'hit' : 'miss');
    }
    if (held && verdict === 'fresh') return { cacheStatus: 'HIT', entry: held };
    if (verdict === 'purged') this.deps.observer?.onReorgPurge?.();
    const run = () =>
      this.flights.run(
        key,
        () => this.fetchShared(key, route, request, held, verdict),
        () => this.deps.observer?.onJoin?.(route.id),
      );
    if (held && verdict === 'stale-while-revalidate') {
      run().catch(() => undefined); // the refresh's failure is the next request's concern
      this.deps.observer?.onStale?.(route.id, 'revalidating', held.cls);
      return { cacheStatus: 'STALE', entry: held };
    }
    return run();
  }

  /**
   * Across instances: the lock holder fetches; the others poll the shared tier until its
   * answer lands, the lock goes away, or `waitMs` passes, then fetch themselves if needed.
   */
  private async fetchShared(
    key: string,
    route: RouteSpec,
    request: CanonicalRequest,
    held: CacheEntry | undefined,
    verdict: Verdict | undefined,
  ): Promise<ReadResult> {
    const shared = this.deps.shared;
    if (!shared) return this.fetch(key, route, request, held, verdict, false);
    const lockKey = `${key}:lock`;
    const release = await shared.lock.acquire(lockKey, shared.lockTtlMs);
    if (release === 'busy') {
      const filled = await this.waitForPeer(key, lockKey, shared.waitMs);
      this.deps.observer?.onSharedWait?.(route.id, filled ? 'filled' : 'timeout');
      if (filled) return { cacheStatus: 'HIT', entry: filled };
      return this.fetch(key, route, request, held, verdict, false);
    }
    try {
      // The holder's answer must be in Redis before the lock goes, or waiters would fetch too.
      return await this.fetch(key, route, request, held, verdict, release !== undefined);
    } finally {
      await release?.();
    }
  }

  private async waitForPeer(key: string, lockKey: string, waitMs: number): Promise<CacheEntry | undefined> {
    const deadline = this.now() + waitMs;
    const sharedTier = this.deps.store.shared;
    while (sharedTier && this.now() < deadline) {
      await sleep(SHARED_POLL_MS);
      const entry = await sharedTier.get(key).catch(() => undefined);
      if (entry && evaluate(entry, this.now(), this.deps.chain(), this.deps.ttl) === 'fresh') {
        void this.deps.store.set(key, entry, { memoryOnly: true });
        return entry;
      }
      if (!(await this.deps.shared?.lock.isHeld(lockKey))) return undefined;
    }
    return undefined;
  }

  private async fetch(
    key: string,
    route: RouteSpec,
    request: CanonicalRequest,
    held: CacheEntry | undefined,
    verdict: Verdict | undefined,
    awaitWrite: boolean,
  ): Promise<ReadResult> {
    const conditional = verdict === 'revalidate' || verdict === 'stale-while-revalidate' ? held : undefined;
    // Data a reorg may have changed is never served stale.
    const fallback = verdict === 'purged' ? undefined : held;
    // The answer is stamped with the chain and time from before it was asked for: a block that
    // lands meanwhile must make it stale, not make it look current.
    const asked = this.snapshot();
    const started = asked.at;
    let response: UpstreamResponse;
    try {
      response = await this.deps.upstream.get({
        path: request.upstreamPath,
        route: route.id,
        headers: conditional?.upstreamEtag ? { 'if-none-match': conditional.upstreamEtag } : undefined,
        validate: assertWellFormed,
      });
    } catch (error) {
      const stale = this.staleFallback(route, fallback, error);
      if (stale) return stale;
      throw error;
    }
    const upstreamSeconds = (this.now() - started) / 1000;
    if (response.status >= 500) {
      // Stale data beats an error; without it the client gets the upstream's own 5xx.
      const failure = new UpstreamError('5xx', response.upstream, `upstream answered ${response.status}`);
      return this.staleFallback(route, fallback, failure) ?? { ...this.bypass(response), upstreamSeconds };
    }
    const sentIfNoneMatch = conditional?.upstreamEtag !== undefined;
    if (response.status === 304 && conditional) {
      this.deps.observer?.onRevalidation?.('not_modified');
      const refreshed = await this.refresh(conditional, route, request, asked);
      await this.write(key, refreshed, awaitWrite);
      return { cacheStatus: 'REVALIDATED', entry: refreshed, upstreamSeconds };
    }
    if (sentIfNoneMatch) this.deps.observer?.onRevalidation?.('modified');
    const result = await this.admit(route, request, response, asked);
    if (result.cacheStatus === 'MISS') await this.write(key, result.entry, awaitWrite);
    return { ...result, upstreamSeconds };
  }

  /** Memory at once; the shared tier in the background unless the caller must know it landed. */
  private async write(key: string, entry: CacheEntry, awaitShared: boolean): Promise<void> {
    const landed = this.deps.store.set(key, entry);
    if (awaitShared) await landed;
  }

  /**
   * A 304 confirms the stored bytes (its ETag stays: the upstream's 304 carries none). The class
   * is decided again, so a confirmed transaction that is now deep enough becomes final.
   */
  private async refresh(entry: CacheEntry, route: RouteSpec, request: CanonicalRequest, asked: Snapshot): Promise<CacheEntry> {
    const chain = asked.chain;
    const classification =
      classify({
        policy: route.policy,
        facts: request.facts,
        status: entry.status,
        body: entry.body,
        chain,
        finalTxHeight: await this.finalTxHeight(request),
      }) ?? { cls: entry.cls, height: entry.height };
    return { ...entry, ...this.stamp(classification, asked) };
  }

  /** Builds the entry when the policy gives the answer a class; otherwise passes it through. */
  private async admit(route: RouteSpec, request: CanonicalRequest, response: UpstreamResponse, asked: Snapshot): Promise<ReadResult> {
    const chain = asked.chain;
    const classification = classify({
      policy: route.policy,
      facts: request.facts,
      status: response.status,
      body: response.body,
      chain,
      finalTxHeight: await this.finalTxHeight(request),
    });
    if (!classification) return this.bypass(response);
    return { cacheStatus: 'MISS', entry: this.buildEntry(response, classification, asked) };
  }

  /** The chain and the time at which a request leaves for the upstream. */
  snapshot(): Snapshot {
    return { chain: this.deps.chain(), at: this.now() };
  }

  /** Class, validation time and the tip it was validated under. */
  stamp(classification: Classification, asked: Snapshot): Pick<CacheEntry, 'cls' | 'height' | 'validatedAt' | 'tipHash' | 'tipHeight'> {
    const final = classification.cls === 'final';
    return {
      cls: classification.cls,
      height: classification.height,
      validatedAt: asked.at,
      tipHash: final ? undefined : asked.chain.tipHash,
      tipHeight: final ? undefined : asked.chain.tipHeight,
    };
  }

  buildEntry(response: UpstreamResponse, classification: Classification, asked: Snapshot): CacheEntry {
    const upstreamEtag = isStrongEtag(response.headers.etag) ? response.headers.etag : undefined;
    return {
      status: response.status,
      body: response.body,
      headers: forwardedHeaders(response),
      upstreamEtag,
      etag: upstreamEtag ?? bodyEtag(response.body),
      ...this.stamp(classification, asked),
    };
  }

  bypass(response: UpstreamResponse): ReadResult {
    return {
      cacheStatus: 'BYPASS',
      passed: { status: response.status, body: response.body, headers: forwardedHeaders(response, ['cache-control', 'location', 'etag']) },
    };
  }

  /** tx/events by tx id is final when the cache already holds that transaction as final. */
  private async finalTxHeight(request: CanonicalRequest): Promise<number | undefined> {
    const txId = request.facts.eventsOfTx;
    if (!txId) return undefined;
    const found = await this.deps.store.get(routeKey(this.deps.keyPrefix, 'tx_by_id', `/extended/v1/tx/${txId}`));
    if (found?.entry.cls !== 'final') return undefined;
    // A final entry a reorg made suspect says nothing any more.
    return evaluate(found.entry, this.now(), this.deps.chain(), this.deps.ttl) === 'fresh' ? found.entry.height : undefined;
  }

  private staleFallback(route: RouteSpec, held: CacheEntry | undefined, error: unknown): ReadResult | undefined {
    if (!held || !(error instanceof UpstreamError)) return undefined;
    if (!isUsableWhenFailing(held, this.now(), this.deps.chain(), this.deps.ttl, this.deps.stale)) return undefined;
    this.deps.observer?.onStale?.(route.id, error.kind, held.cls);
    return { cacheStatus: 'STALE', entry: held };
  }
}
