/**
 * Every Prometheus metric the proxy defines, as data: name, help, labels, buckets. Names and
 * help texts are the ones dashboards and alerts were built on, so they change only with them.
 * Labels come from the route table and the configured upstreams only, so their values stay
 * bounded whatever clients send. `register.ts` turns these specs into prom-client metrics.
 */

// Fine enough to tell a 0.3 ms hit from a 3 ms one and from a 300 ms miss.
const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10] as const;
const REDIS_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1] as const;

interface SpecBase<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  /**
   * Brought up to date from the state sources whenever the registry is read (store sizes,
   * upstream health, tip age), instead of by an event.
   */
  readOnScrape?: boolean;
}
export interface CounterSpec<L extends string = string> extends SpecBase<L> {
  type: 'counter';
}
export interface GaugeSpec<L extends string = string> extends SpecBase<L> {
  type: 'gauge';
}
export interface HistogramSpec<L extends string = string> extends SpecBase<L> {
  type: 'histogram';
  buckets: readonly number[];
}
export type MetricSpec = CounterSpec | GaugeSpec | HistogramSpec;

type Extra = { readOnScrape?: boolean };
const counter = <L extends string = never>(name: string, help: string, labelNames: readonly L[] = [], extra: Extra = {}): CounterSpec<L> => ({
  type: 'counter',
  name,
  help,
  labelNames,
  ...extra,
});
const gauge = <L extends string = never>(name: string, help: string, labelNames: readonly L[] = [], extra: Extra = {}): GaugeSpec<L> => ({
  type: 'gauge',
  name,
  help,
  labelNames,
  ...extra,
});
const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[], buckets: readonly number[]): HistogramSpec<L> => ({
  type: 'histogram',
  name,
  help,
  labelNames,
  buckets,
});
const STATE = { readOnScrape: true };

/** Metrics every proxy exports. */
export const METRICS = {
  httpRequests: counter('stacks_proxy_http_requests_total', 'Client requests answered, by route id, method, status and cache result.', [
    'route',
    'method',
    'status',
    'cache',
  ]),
  httpDuration: histogram(
    'stacks_proxy_http_request_duration_seconds',
    'Time to answer a client request, by route id and cache result.',
    ['route', 'cache'],
    LATENCY_BUCKETS,
  ),
  cacheLookups: counter('stacks_proxy_cache_lookups_total', 'Cache lookups by tier (memory, redis), freshness class and result (hit, miss, stale, error).', [
    'tier',
    'class',
    'result',
  ]),
  cacheEntries: gauge('stacks_proxy_cache_entries', 'Entries held by a cache tier (redis: keys in the database).', ['tier'], STATE),
  cacheBytes: gauge('stacks_proxy_cache_bytes', 'Bytes held by a cache tier (redis: used_memory).', ['tier'], STATE),
  // Memory evictions are events; Redis counts its own, and the counter follows that total on scrape.
  cacheEvictions: counter('stacks_proxy_cache_evictions_total', 'Entries evicted for room, by tier.', ['tier'], STATE),
  upstreamRequests: counter('stacks_proxy_upstream_requests_total', 'Requests sent to an upstream, by upstream, route id and status.', [
    'upstream',
    'route',
    'status',
  ]),
  upstreamDuration: histogram(
    'stacks_proxy_upstream_request_duration_seconds',
    'Upstream response time (to the last body byte), by upstream and route id.',
    ['upstream', 'route'],
    LATENCY_BUCKETS,
  ),
  upstreamErrors: counter(
    'stacks_proxy_upstream_errors_total',
    'Upstream failures by upstream and kind (timeout, connect, reset, 5xx, invalid, rate_limited). A JSON 4xx/500 from the upstream handler for one input is an answer, not counted.',
    ['upstream', 'kind'],
  ),
  upstreamRetries: counter(
    'stacks_proxy_upstream_retries_total',
    'Upstream requests retried on another (or the same) upstream, by route id and the failure that caused it.',
    ['route', 'reason'],
  ),
  upstreamUp: gauge('stacks_proxy_upstream_up', '1 when an upstream is used for reads (circuit breaker not open, not lagging), else 0.', ['upstream'], STATE),
  upstreamBreakerOpen: gauge(
    'stacks_proxy_upstream_breaker_open',
    '1 while an upstream circuit breaker is open (after consecutive failures), else 0.',
    ['upstream'],
    STATE,
  ),
  upstreamLagBlocks: gauge('stacks_proxy_upstream_lag_blocks', 'Blocks an upstream tip is behind the best upstream tip.', ['upstream'], STATE),
  upstreamInFlight: gauge(
    'stacks_proxy_upstream_in_flight',
    'Requests in flight to an upstream, and waiting in its queue (state=queued).',
    ['upstream', 'state'],
    STATE,
  ),
  overloadRejections: counter(
    'stacks_proxy_overload_rejections_total',
    'Client requests answered 503 because every usable upstream queue was full, by route id.',
    ['route'],
  ),
  sharedFlightWaits: counter(
    'stacks_proxy_shared_singleflight_waits_total',
    'Misses that waited for another instance holding the Redis lock, by result (filled, timeout).',
    ['route', 'result'],
  ),
  primaryFlights: counter(
    'stacks_proxy_primary_singleflight_total',
    'Worker mode without Redis: misses coordinated through the primary, by route id and outcome (led, filled, released, timeout, refused).',
    ['route', 'outcome'],
  ),
  revalidations: counter('stacks_proxy_revalidations_total', 'If-None-Match revalidations of expired entries, by result (not_modified, modified).', ['result']),
  backgroundRefreshes: counter(
    'stacks_proxy_background_refreshes_total',
    'Refreshes run behind an answer already given (a mempool entry served stale, a tip entry past its safety TTL served as a hit), by route id and outcome (confirmed, replaced, failed, skipped at the cap).',
    ['route', 'outcome'],
  ),
  etagScopeConfirmations: counter(
    'stacks_proxy_etag_scope_confirmations_total',
    'Expired entries made fresh without asking the upstream: another URL of the same principal got their very ETag under the current tip (served as HIT; their lookup counted a miss), by route id.',
    ['route'],
  ),
  singleflightJoined: counter(
    'stacks_proxy_singleflight_joined_total',
    'Requests that waited for an identical in-flight upstream request instead of sending their own.',
    ['route'],
  ),
  staleServed: counter('stacks_proxy_stale_served_total', 'Expired entries served because every upstream failed, by route id and failure kind.', [
    'route',
    'reason',
  ]),
  chainDisagreements: counter(
    'stacks_proxy_chain_disagreements_total',
    "Upstream answers about what was asked that did not fit the proxy's picture of the chain (served as sent, not stored, not counted against the upstream), by route id and reason.",
    ['route', 'reason'],
  ),
  chainTipHeight: gauge('stacks_proxy_chain_tip_height', 'Stacks block height of the tracked chain tip.'),
  chainTipBurnHeight: gauge(
    'stacks_proxy_chain_tip_burn_height',
    "The burn (Bitcoin) chain's tip height as the upstream's status reports it (GET /extended chain_tip.burn_block_height), with or without a Stacks block anchored there.",
  ),
  chainTipAnchorBurnHeight: gauge(
    'stacks_proxy_chain_tip_anchor_burn_height',
    "The burn height the tracked tip block is anchored at (its own burn_block_height), once read: at or below the burn chain's tip.",
  ),
  chainTipAge: gauge('stacks_proxy_chain_tip_age_seconds', 'Seconds since the tracked chain tip last changed.', [], STATE),
  tipPolls: counter(
    'stacks_proxy_tip_polls_total',
    "Chain tip polls (GET /extended) sent to upstreams, by role: leader (a single process, or worker mode's tip leader: on the interval), follower (another worker: on the leader's news, and at its fallback interval).",
    ['role'],
  ),
  tipLeader: gauge(
    'stacks_proxy_tip_leader',
    "1 while this process polls the chain tip on the interval and follows the push feed (a single process; in worker mode the one tip leader), 0 for a worker that follows the leader's news.",
  ),
  reorgs: counter('stacks_proxy_reorgs_total', 'Chain reorganisations seen (a new tip that does not extend the old one).'),
  reorgPurged: counter(
    'stacks_proxy_reorg_purged_entries_total',
    'Cached entries dropped because a reorg made them suspect (counted when they are next read).',
  ),
  // Admin purges (issue 9): what was asked by kind, never the URL, principal or id itself.
  purges: counter(
    'stacks_proxy_cache_purges_total',
    'Admin purges carried out by this instance, by selector kind (keys, route, tx, principal, block, all) and origin (admin: asked here; peer: announced by another instance sharing Redis).',
    ['kind', 'origin'],
  ),
  purgedEntries: counter('stacks_proxy_cache_purged_entries_total', 'Entries removed by admin purges, by tier (memory, redis).', ['tier']),
  // A storm of purges shows as requests far above the purges carried out (cache/purge-coalescer.ts).
  purgeRequests: counter(
    'stacks_proxy_cache_purge_requests_total',
    'Admin purge requests received by this instance (POST /admin/purge with a valid body), by selector kind, before coalescing.',
    ['kind'],
  ),
  purgesCoalesced: counter(
    'stacks_proxy_cache_purges_coalesced_total',
    'Admin purge requests answered by a purge they shared with other requests of the same coalescing batch (the same selector, or an all) instead of one of their own.',
  ),
  // Principal activity (issue 15): outcomes only, never a principal.
  broadcastsObserved: counter(
    'stacks_proxy_broadcasts_observed_total',
    'POST /v2/transactions forwarded by the passthrough, by outcome: decoded (accepted, its principals marked changed), undecodable (accepted or unanswered, every principal and the whole mempool marked changed), rejected (the upstream refused it: nothing changed).',
    ['outcome'],
  ),
  broadcastCapturesOverBudget: counter(
    'stacks_proxy_broadcast_captures_over_budget_total',
    'POST /v2/transactions bodies streamed on uncaptured because the process-wide capture budget (activity.broadcastCaptureBudgetBytes) was spent: decoded as undecodable (every principal counts as changed).',
  ),
  activityAnnouncements: counter(
    'stacks_proxy_activity_announcements_total',
    'Broadcast touches announced over Redis to the other instances (sent) and received from them and applied here (received).',
    ['direction'],
  ),
  blocksLearned: counter(
    'stacks_proxy_activity_blocks_total',
    'New tips seen by the block learner, by outcome: learned (its touched principals known), unknown (they could not be read in full: learning voided), outdated (the answer came after a void), and the reasons learning restarted: first, reorg, burn_block, gap, no_burn_height, same_height.',
    ['outcome'],
  ),
  activityUpstreamRequests: counter(
    'stacks_proxy_activity_upstream_requests_total',
    "Requests the principal-activity components sent to the upstream, by source (learner: a new block's transactions and events; watcher: the mempool poll).",
    ['source'],
  ),
  ownUpstreamRequests: counter(
    'stacks_proxy_own_upstream_requests_total',
    "Requests the proxy sent the upstream on its own, not for a client's read, by purpose: tip_poll, block_check, fork_search, finality, block_learner, mempool_watcher, contract_lookup, pinned_tip, warmup, push_connect (upstream/own-purpose.ts).",
    ['purpose'],
  ),
  // The warm-up of a new block (issue 16): kinds and outcomes are block-warmer.ts's own words.
  warmRequests: counter(
    'stacks_proxy_warm_requests_total',
    'Reads of the warm-up of a new block, by kind (block, transactions, hot) and outcome (hit: fresh already; fetched; stale; passed: answered, not stored; uncached; failed; busy: the upstream had no room; over_budget; superseded: a newer tip came first).',
    ['kind', 'outcome'],
  ),
  // The wider read surface (issue 15): family ids and classes come from src/surface/families.ts only.
  surfaceRequests: counter(
    'stacks_proxy_surface_requests_total',
    'Client reads of the wider read surface (route families beyond the 13 routes), by family id, its change class, cache result (HIT, MISS, REVALIDATED, STALE, BYPASS) and the freshness class answered (final, tip, mempool; none when not stored).',
    ['family', 'change', 'cache', 'class'],
  ),
  // Rate limits (issue 9): tiers and results only, never a key name or an address.
  rateLimitRequests: counter(
    'stacks_proxy_rate_limit_requests_total',
    'Requests on limited routes (rate limiting on), by client tier (anonymous, keyed) and result (allowed, refused, unknown_key).',
    ['tier', 'result'],
  ),
  rateLimitFailOpen: counter(
    'stacks_proxy_rate_limit_fail_open_total',
    'Budget charges let through unlimited because the shared rate-limit budget (Redis) failed or timed out.',
  ),
  // The live chain (issue 16): origins come from the configured upstreams only.
  upstreamWsConnections: gauge(
    'stacks_proxy_upstream_ws_connections',
    'WebSocket connections the live chain holds open to upstreams, by channel (rpc: /extended/v1/ws JSON-RPC, socket_io: /socket.io/).',
    ['channel'],
  ),
  upstreamWsReconnects: counter(
    'stacks_proxy_upstream_ws_reconnects_total',
    'Upstream WebSockets of the live chain opened again after they dropped or failed to open, by channel.',
    ['channel'],
  ),
  pushNotifications: counter(
    'stacks_proxy_push_notifications_total',
    'Push notifications acted on, by upstream origin and kind (block, mempool: the upstream JSON-RPC feed; redis_apply, redis_rollback: the upstream Redis notifier).',
    ['origin', 'kind'],
  ),
  pushFeedBelieved: gauge(
    'stacks_proxy_push_feed_believed',
    '1 while an upstream push feed is believed (open, subscribed, not distrusted: its tip is polled at live.push.crossCheckIntervalMs), 0 otherwise (polled at chainTip.pollIntervalMs).',
    ['origin'],
  ),
  // issue 27: an upstream that serves no WebSocket (or refuses it) is followed by the poll alone; this says which.
  upstreamPushMode: gauge(
    'stacks_proxy_upstream_push_mode',
    "How each upstream's chain tip is followed: 1 for its mode, 0 for the other. push: its push feed is believed (the tip poll runs at live.push.crossCheckIntervalMs as a cross-check); poll: it is polled every chainTip.pollIntervalMs (push off, its WebSocket refused or not open yet, or its feed not believed). Set by the process that follows the tip (in worker mode the tip leader).",
    ['upstream', 'mode'],
  ),
  pushDistrusted: counter(
    'stacks_proxy_push_distrusted_total',
    'Times an upstream push feed was not believed for live.push.distrustMs, by origin and reason (unannounced: a poll found a block the feed did not announce; unconfirmed: the feed announced a block no poll found).',
    ['origin', 'reason'],
  ),
  // WebSocket fan-out (issue 16): channel (rpc, socket_io), event kinds and reasons only, never a topic's address or id.
  wsClients: gauge('stacks_proxy_ws_clients', 'WebSocket clients connected to a fan-out channel (rpc: /extended/v1/ws, socket_io: /socket.io/).', ['channel']),
  wsSubscriptions: gauge(
    'stacks_proxy_ws_subscriptions',
    'Client subscriptions held on a fan-out channel, by event kind (rpc: block, mempool, tx_update, address_tx_update, ...); each client counts once per topic.',
    ['channel', 'event'],
  ),
  wsMessages: counter(
    'stacks_proxy_ws_messages_total',
    'Fan-out messages by channel and direction: in (from clients), out (to clients: replies and notifications), upstream_in (notifications from the upstream link).',
    ['channel', 'direction'],
  ),
  wsClientDrops: counter(
    'stacks_proxy_ws_client_drops_total',
    'Fan-out clients closed or refused over a bound, by channel and reason: slow (bytes waiting past live.fanout.maxBufferedBytesPerClient, closed 1013), rate (messages per second, closed 1008), pending (unanswered messages past 1 MiB, closed 1008), unresponsive (no pong), subscriptions (a subscribe refused: too many for the client, or upstream), topic_length (a subscribe refused: a topic over 1,024 characters).',
    ['channel', 'reason'],
  ),
  redisCommandDuration: histogram('stacks_proxy_redis_command_duration_seconds', 'Redis command latency by command.', ['command'], REDIS_BUCKETS),
  // The usual Prometheus idiom: a constant 1 whose labels say what runs (`count by (version)`).
  buildInfo: gauge('stacks_proxy_build_info', 'Always 1; the labels say which proxy version runs on which Node.js.', ['version', 'node']),
};

/**
 * Metrics only a proxy with Redis configured exports. A `redis_up` reading 0 on a proxy without
 * Redis would fire the Redis-down alert on every such deployment; absent, it fires nowhere.
 */
export const REDIS_METRICS = {
  redisUp: gauge('stacks_proxy_redis_up', '1 when the Redis tier is connected, 0 when not (absent without Redis).'),
};

/** Every spec a proxy with (or without) Redis exports, for docs and dashboard checks. */
export function catalogueSpecs(options: { redis: boolean }): MetricSpec[] {
  return [...Object.values(METRICS), ...(options.redis ? Object.values(REDIS_METRICS) : [])];
}
