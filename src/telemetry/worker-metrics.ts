/**
 * One /metrics for the host in worker mode (src/cluster/): the primary asks every worker for its registry's
 * metrics (as JSON, over IPC) and adds them up with prom-client's AggregatorRegistry. Counters
 * and histograms add up. A gauge says how it combines (GAUGE_AGGREGATORS): a count held per
 * worker (in-flight requests, clients) adds up, while one state every worker sees alike (the
 * chain tip, an upstream's health) would read N times too high as a sum, so it takes the max
 * or the min: the min of `upstream_up` is 0 as soon as one worker stopped using that upstream.
 * The tier sizes mix both: each worker's memory tier adds up, while the Redis tier is one that
 * every worker reads, so its values are taken from the first worker only (SHARED_TIER_GAUGES).
 */
import { AggregatorRegistry, type Aggregator, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';

/** One worker's registry as JSON (`registry.getMetricsAsJSON()`), as it crosses the IPC channel. */
export type WorkerMetrics = MetricObjectWithValues<MetricValue<string>>[];
type Metrics = WorkerMetrics;

/** Every gauge of the catalogue, and how the workers' values combine (a unit test checks none is missing). */
export const GAUGE_AGGREGATORS: Readonly<Record<string, Aggregator>> = {
  // Each worker's memory tier adds up; tier="redis" is counted once (SHARED_TIER_GAUGES).
  stacks_proxy_cache_entries: 'sum',
  stacks_proxy_cache_bytes: 'sum',
  stacks_proxy_upstream_up: 'min',
  stacks_proxy_upstream_breaker_open: 'max',
  stacks_proxy_upstream_lag_blocks: 'max',
  stacks_proxy_upstream_in_flight: 'sum',
  stacks_proxy_chain_tip_height: 'max',
  stacks_proxy_chain_tip_burn_height: 'max',
  stacks_proxy_chain_tip_anchor_burn_height: 'max',
  stacks_proxy_chain_tip_age_seconds: 'min',
  stacks_proxy_upstream_ws_connections: 'sum',
  stacks_proxy_push_feed_believed: 'min',
  // Only the tip leader follows the tip and sets it (followers have no samples): the max is the leader's.
  stacks_proxy_upstream_push_mode: 'max',
  // One worker leads: the sum says how many do (1 in a healthy cluster, 0 between a leader's death and the next).
  stacks_proxy_tip_leader: 'sum',
  stacks_proxy_ws_clients: 'sum',
  stacks_proxy_ws_subscriptions: 'sum',
  stacks_proxy_build_info: 'first',
  stacks_proxy_redis_up: 'min',
};

/** Tier gauges whose tier="redis" values every worker reports for the same one Redis. */
const SHARED_TIER_GAUGES = new Set(['stacks_proxy_cache_entries', 'stacks_proxy_cache_bytes']);

/** A worker's metric as it enters the sum: after the first worker, without the shared Redis tier's values. */
function asAdded(metric: Metrics[number], worker: number): Metrics[number] {
  const aggregator = String(metric.type) === 'gauge' ? GAUGE_AGGREGATORS[metric.name] : undefined;
  const values = worker > 0 && SHARED_TIER_GAUGES.has(metric.name) ? metric.values.filter((value) => value.labels.tier !== 'redis') : metric.values;
  return aggregator ? { ...metric, values, aggregator } : metric;
}

/** The workers' metrics combined into one registry (its `metrics()` is the exposition text). */
export function aggregateWorkerMetrics(perWorker: Metrics[]): Registry {
  const combined = perWorker.map((metrics, worker) => metrics.map((metric) => asAdded(metric, worker)));
  return AggregatorRegistry.aggregate(combined);
}
