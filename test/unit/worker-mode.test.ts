/** Worker mode's pure parts: how many workers, the restart budget, how the workers' gauges combine. */
import { describe, expect, it } from 'vitest';
import { Registry, Gauge, Counter } from 'prom-client';
import { configFrom, ConfigError } from '../../src/config.js';
import { workerCount } from '../../src/cluster/worker-count.js';
import { RestartBudget } from '../../src/cluster/restart-budget.js';
import { aggregateWorkerMetrics, GAUGE_AGGREGATORS } from '../../src/telemetry/worker-metrics.js';
import { METRICS, REDIS_METRICS } from '../../src/telemetry/catalogue.js';

const withRedis = { redis: { url: 'redis://127.0.0.1:6379' } };

describe('workerCount', () => {
  it('is 1 by default, whatever the cores, and needs no Redis', () => {
    expect(workerCount(configFrom({}), 16)).toBe(1);
  });

  it('0 is one per core; N is N', () => {
    expect(workerCount(configFrom({ ...withRedis, server: { workers: 0 } }), 8)).toBe(8);
    expect(workerCount(configFrom({ ...withRedis, server: { workers: 3 } }), 8)).toBe(3);
  });

  it('0 on a one-core host is the single process, which needs no Redis', () => {
    expect(workerCount(configFrom({ server: { workers: 0 } }), 1)).toBe(1);
  });

  it('several workers need no Redis (their single-flight goes through the primary), but refuse single-flight switched off', () => {
    expect(workerCount(configFrom({ server: { workers: 2 } }), 8)).toBe(2);
    for (const redis of [{}, withRedis]) {
      const off = configFrom({ ...redis, server: { workers: 2 }, cache: { sharedSingleFlight: { enabled: false } } });
      expect(() => workerCount(off, 8)).toThrow(ConfigError);
      expect(() => workerCount(off, 8)).toThrow(/cache\.sharedSingleFlight\.enabled is false/);
    }
  });

  it('the schema refuses a negative or fractional count', () => {
    expect(() => configFrom({ server: { workers: -1 } })).toThrow(/server\.workers/);
    expect(() => configFrom({ server: { workers: 1.5 } })).toThrow(/server\.workers/);
  });
});

describe('RestartBudget', () => {
  it('allows max restarts within the window, then refuses until the oldest leaves it', () => {
    let now = 0;
    const budget = new RestartBudget(2, 1_000, () => now);
    expect(budget.take()).toBe(true);
    now = 500;
    expect(budget.take()).toBe(true);
    expect(budget.take()).toBe(false);
    now = 1_000; // the first restart has left the window
    expect(budget.take()).toBe(true);
    expect(budget.take()).toBe(false);
  });
});

describe('aggregateWorkerMetrics', () => {
  it('says how every gauge of the catalogue combines', () => {
    const gauges = [...Object.values(METRICS), ...Object.values(REDIS_METRICS)].filter((spec) => spec.type === 'gauge').map((spec) => spec.name);
    expect(gauges.filter((name) => !(name in GAUGE_AGGREGATORS))).toEqual([]);
    expect(Object.keys(GAUGE_AGGREGATORS).filter((name) => !gauges.includes(name))).toEqual([]);
  });

  async function workerMetrics(tipHeight: number, served: number, up: number) {
    const registry = new Registry();
    new Gauge({ name: 'stacks_proxy_chain_tip_height', help: 'h', registers: [registry] }).set(tipHeight);
    new Gauge({ name: 'stacks_proxy_upstream_up', help: 'h', labelNames: ['upstream'], registers: [registry] }).labels({ upstream: 'a' }).set(up);
    new Counter({ name: 'stacks_proxy_http_requests_total', help: 'h', registers: [registry] }).inc(served);
    return registry.getMetricsAsJSON();
  }

  it('adds counters up, takes the highest tip and the lowest upstream_up', async () => {
    const text = await aggregateWorkerMetrics([await workerMetrics(100, 3, 1), await workerMetrics(101, 4, 0)]).metrics();
    expect(text).toMatch(/^stacks_proxy_http_requests_total 7$/m);
    expect(text).toMatch(/^stacks_proxy_chain_tip_height 101$/m);
    expect(text).toMatch(/^stacks_proxy_upstream_up\{upstream="a"\} 0$/m);
  });

  it("adds up each worker's memory tier but counts the one Redis tier once", async () => {
    const tiers = async (memoryEntries: number) => {
      const registry = new Registry();
      const entries = new Gauge({ name: 'stacks_proxy_cache_entries', help: 'h', labelNames: ['tier'], registers: [registry] });
      entries.labels({ tier: 'memory' }).set(memoryEntries);
      entries.labels({ tier: 'redis' }).set(1000);
      return registry.getMetricsAsJSON();
    };
    const text = await aggregateWorkerMetrics([await tiers(10), await tiers(20), await tiers(30)]).metrics();
    expect(text).toMatch(/^stacks_proxy_cache_entries\{tier="memory"\} 60$/m);
    expect(text).toMatch(/^stacks_proxy_cache_entries\{tier="redis"\} 1000$/m);
  });
});
