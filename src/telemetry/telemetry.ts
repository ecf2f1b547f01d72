/**
 * What components tell the outside world: one method per domain event. Components call it
 * directly; `createTelemetry` (prometheus-telemetry.ts) turns each event into metric samples
 * and, for state changes, a log line; `noopTelemetry` is for unit tests of a component.
 *
 * The vocabulary is declared here rather than imported, so telemetry depends on no component
 * and every component may depend on it.
 */
import type { OwnPurpose } from './own-purposes.js';

export type Tier = 'memory' | 'redis';
/** `stale`: an expired entry was served; `error`: the tier failed or held an unreadable entry. */
export type LookupResult = 'hit' | 'miss' | 'stale' | 'error';
/**
 * What a refresh behind an answer already given came to: `confirmed` (a 304, or another
 * instance's fresh answer), `replaced` (a new answer stored), `failed` (the entry stays as it
 * was), `skipped` (too many running: the next request tries).
 */
export type BackgroundRefreshOutcome = 'confirmed' | 'replaced' | 'failed' | 'skipped';

/**
 * What a worker's miss came to in single-flight through the primary (worker mode without Redis):
 * `led` (it fetched), `filled` (another worker's entry), `released` (the leader stored nothing:
 * it failed, died or held the key too long; fetched), `timeout` (waited waitMs; fetched),
 * `refused` (the primary held as much as it may, or could not be reached; fetched).
 */
export type PrimaryFlightOutcome = 'led' | 'filled' | 'released' | 'timeout' | 'refused';

/** One answered client request, as the access log and the request metrics see it. */
export interface ServedRequest {
  requestId: string;
  method: string;
  /** A route id, or `passthrough`. */
  route: string;
  status: number;
  /** The X-Cache value, `NONE` when the proxy does not cache the route. */
  cache: string;
  cls?: string;
  seconds: number;
  upstreamSeconds?: number;
  /** The upstream failure kind behind the answer; `overloaded` counts an overload rejection. */
  upstreamError?: string;
  /** A refusal before any cache or upstream work (a refused target, 401, 429): sampled like hits, by its own ratio. */
  refused?: boolean;
}

/** One of the failures that opened a circuit breaker: its kind, its request's route id, what it met, and how long before the opening. */
export interface BreakerFailure {
  kind: string;
  route: string;
  message: string;
  ageMs: number;
}

export interface TipLike {
  height: number;
  /** The burn chain's tip, as the upstream's status reports it. */
  burnHeight: number;
  /** The tip block's own anchoring burn height, once read (often lower than burnHeight). */
  anchorBurnHeight?: number;
}

export interface Telemetry {
  requestServed(request: ServedRequest): void;

  /** Once per client lookup, in the tier that answered it (or missed). */
  cacheLookup(tier: Tier, cls: string, result: LookupResult): void;
  cacheEvicted(tier: Tier): void;
  /** A stored entry could not be decoded (another version wrote it): logged; its lookup counts a miss. */
  decodeFailed(tier: Tier): void;
  storeError(tier: Tier, operation: string, error: unknown): void;
  redisCommand(command: string, seconds: number): void;
  /** Every connection status report; only a change is logged. */
  redisStatusChanged(up: boolean): void;

  singleflightJoined(route: string): void;
  sharedFlightWaited(route: string, result: 'filled' | 'timeout'): void;
  primaryFlight(route: string, outcome: PrimaryFlightOutcome): void;
  revalidated(result: 'not_modified' | 'modified'): void;
  /** A refresh behind an answer already given (stale-while-revalidate, the tip safety revalidation). */
  backgroundRefreshed(route: string, outcome: BackgroundRefreshOutcome): void;
  /** reason: the upstream failure kind, or `revalidating` for stale-while-revalidate. */
  staleServed(route: string, reason: string): void;
  /**
   * An upstream answer about what was asked that does not fit the proxy's picture of the chain:
   * served as the upstream sent it, not stored, not counted against the upstream. Counted by
   * reason (cache/chain-position.ts), logged at most once a minute per reason.
   */
  chainDisagreement(route: string, upstream: string, reason: string, why: string): void;
  reorgPurged(): void;
  /** An expired entry confirmed by another URL's upstream ETag of the same scope (etag-scope.ts). */
  etagScopeConfirmed(route: string): void;
  /** An admin purge carried out here: asked of this instance, or announced by a peer; entries removed per tier. */
  purged(kind: string, origin: 'admin' | 'peer', removed: { memory: number; redis: number | null }): void;
  /** An admin purge request received (POST /admin/purge with a valid body), before coalescing. */
  purgeRequested(kind: string): void;
  /** Admin purge requests answered by another request's purge of the same batch instead of their own. */
  purgesCoalesced(count: number): void;

  /**
   * An HTTP answer from an upstream; `failure` when the answer is a failure of that upstream
   * (a 429, a gateway 5xx, an unsolicited 304), counted under its kind.
   */
  upstreamAnswered(upstream: string, route: string, status: number, seconds: number, failure?: { kind: string; message: string }): void;
  upstreamFailed(upstream: string, route: string, error: { kind: string; message: string }): void;
  upstreamRetried(upstream: string, route: string, reason: string): void;
  /** `failures`, on opening: the failures in a row that opened it, oldest first (logged with the change). */
  breakerChanged(upstream: string, state: 'open' | 'closed', failures?: readonly BreakerFailure[]): void;
  lagChanged(upstream: string, lagging: boolean, lagBlocks: number): void;

  /** A new chain tip (which also means the poll succeeded). */
  tipChanged(tip: TipLike): void;
  /** The believed tip's burn heights moved without a new tip: the burn tip (burn blocks without a Stacks block), or its block's anchor once read. */
  tipBurnHeights(tip: TipLike): void;
  tipPollSucceeded(): void;
  /** One chain tip poll sent to an upstream (counted under this process's role: tipLeading). */
  tipPolled(): void;
  /** Whether this process polls the tip on the interval (a single process, the tip leader of worker mode) or follows the leader's news. */
  tipLeading(leading: boolean): void;
  /** Every failed poll; logged as a warning when failures start, at debug level while they last. */
  tipPollFailed(error: unknown): void;
  reorgDetected(forkHeight: number, from: TipLike, to: TipLike): void;
  /** An upstream's tip jumped far beyond the believed one: held until confirmed. */
  tipJumpHeld(upstream: string, believed: TipLike, reported: TipLike): void;

  passthroughAnswered(upstream: string, status: number, seconds: number): void;
  /** A passthrough request or upgrade that got no answer, or lost it mid-body (kind: UpstreamErrorKind). */
  passthroughFailed(upstream: string, error: { kind: string; message: string }): void;

  /** A POST /v2/transactions the passthrough forwarded, and what the activity registry made of it (`note`: logged at debug). */
  broadcastObserved(outcome: 'decoded' | 'undecodable' | 'rejected', note?: string): void;
  /** A broadcast body streamed on uncaptured: the process-wide capture budget was spent. */
  broadcastCaptureOverBudget(): void;
  /** A broadcast touch announced to the other instances over Redis, or received from one and applied. */
  activityAnnounced(direction: 'sent' | 'received'): void;
  /** What the block learner made of a new tip (learned, unknown, outdated) or why learning restarted there. */
  blockLearned(outcome: string, why?: string): void;
  /** One request the block learner or the mempool watcher sent to the upstream. */
  activityUpstreamRequest(source: 'learner' | 'watcher'): void;
  /** A request the proxy sent the upstream on its own, not for a client's read (upstream/own-purpose.ts). */
  ownUpstreamRequest(purpose: OwnPurpose): void;

  /** One read of the warm-up of a new block (src/live/block-warmer.ts) and what became of it. */
  warmRequest(kind: 'block' | 'transactions' | 'hot', outcome: string): void;

  /** One limited request's outcome, when its answer is written (rate limiting on). */
  rateLimitDecided(tier: 'anonymous' | 'keyed', result: 'allowed' | 'refused' | 'unknown_key'): void;
  /** A read of the wider read surface answered: its family, the family's change class, cache result and class served. */
  surfaceServed(family: string, change: string, cache: string, cls: string): void;
  /** The shared budget failed: the request passes unlimited. Logged once per outage. */
  rateLimitFailedOpen(error: unknown): void;
  /** The shared budget answers again after failing. */
  rateLimitRecovered(): void;

  // The live chain (issue 16): upstream WebSockets and the push feed.
  /** An upstream WebSocket of the live chain opened (true) or closed (false). */
  upstreamWsConnectionChanged(channel: UpstreamWsChannel, open: boolean): void;
  /** An upstream WebSocket is opened again after it dropped (or failed to open). */
  upstreamWsReconnected(channel: UpstreamWsChannel): void;
  /**
   * An attempt to open an upstream WebSocket failed (`reason`: "upgrade refused 404", "connection
   * failed ECONNREFUSED"); the next goes in `retryInMs`. Logged once while that upstream keeps failing.
   */
  upstreamWsUnavailable(channel: UpstreamWsChannel, origin: string, reason: string, retryInMs: number): void;
  /** An upstream WebSocket opened (logged when it had been failing). */
  upstreamWsAvailable(channel: UpstreamWsChannel, origin: string): void;
  /** How an upstream's tip is followed: `push` (its feed believed, the poll a cross-check) or `poll`. */
  upstreamPushMode(origin: string, mode: PushMode): void;
  /** A push notification of an upstream (or its Redis notifier) acted on. */
  pushNotified(origin: string, kind: PushKind): void;
  /** Whether an upstream's push feed is believed (its tip polled at the cross-check interval) or not. */
  pushFeedBelieved(origin: string, believed: boolean): void;
  /** A push feed not believed for live.push.distrustMs: a poll found a block it did not announce. */
  pushDistrusted(origin: string, reason: string): void;

  // WebSocket fan-out (issue 16), both channels: `rpc` (/extended/v1/ws) and `socket_io`.
  /** A client connected to a fan-out channel (its upgrade completed). */
  wsClientConnected(channel: WsChannel): void;
  /** A fan-out client's connection ended, for whatever reason. */
  wsClientClosed(channel: WsChannel): void;
  /** Client subscriptions of an event kind held on a channel went up (1) or down (-1). */
  wsSubscriptionsChanged(channel: WsChannel, event: string, delta: 1 | -1): void;
  /** One message: from a client (in), to a client (out), or from the upstream (upstream_in). */
  wsMessage(channel: WsChannel, direction: 'in' | 'out' | 'upstream_in'): void;
  /** A client closed, or its subscribe refused, over a bound (slow, rate, subscriptions, topic_length, unresponsive, pending, clients). */
  wsClientDropped(channel: WsChannel, reason: string): void;
}

export type UpstreamWsChannel = 'rpc' | 'socket_io';
export type PushMode = 'push' | 'poll';
export type PushKind = 'block' | 'mempool' | 'redis_apply' | 'redis_rollback';
export type WsChannel = 'rpc' | 'socket_io';

class NoopTelemetry implements Telemetry {
  requestServed(): void {}
  surfaceServed(): void {}
  cacheLookup(): void {}
  cacheEvicted(): void {}
  decodeFailed(): void {}
  storeError(): void {}
  redisCommand(): void {}
  redisStatusChanged(): void {}
  singleflightJoined(): void {}
  sharedFlightWaited(): void {}
  primaryFlight(): void {}
  revalidated(): void {}
  backgroundRefreshed(): void {}
  staleServed(): void {}
  chainDisagreement(): void {}
  reorgPurged(): void {}
  etagScopeConfirmed(): void {}
  purged(): void {}
  purgeRequested(): void {}
  purgesCoalesced(): void {}
  upstreamAnswered(): void {}
  upstreamFailed(): void {}
  upstreamRetried(): void {}
  breakerChanged(): void {}
  lagChanged(): void {}
  tipChanged(): void {}
  tipBurnHeights(): void {}
  tipPollSucceeded(): void {}
  tipPolled(): void {}
  tipLeading(): void {}
  tipPollFailed(): void {}
  reorgDetected(): void {}
  tipJumpHeld(): void {}
  passthroughAnswered(): void {}
  passthroughFailed(): void {}
  broadcastObserved(): void {}
  broadcastCaptureOverBudget(): void {}
  activityAnnounced(): void {}
  blockLearned(): void {}
  activityUpstreamRequest(): void {}
  ownUpstreamRequest(): void {}
  warmRequest(): void {}
  rateLimitDecided(): void {}
  rateLimitFailedOpen(): void {}
  rateLimitRecovered(): void {}
  upstreamWsConnectionChanged(): void {}
  upstreamWsReconnected(): void {}
  upstreamWsUnavailable(): void {}
  upstreamWsAvailable(): void {}
  upstreamPushMode(): void {}
  pushNotified(): void {}
  pushFeedBelieved(): void {}
  pushDistrusted(): void {}
  wsClientConnected(): void {}
  wsClientClosed(): void {}
  wsSubscriptionsChanged(): void {}
  wsMessage(): void {}
  wsClientDropped(): void {}
}

/** Ignores every event: for unit tests of a component that are not about its telemetry. */
export const noopTelemetry: Telemetry = new NoopTelemetry();
