/**
 * /metrics as Prometheus scrapes it, from a real proxy: the conventions operators rely on
 * (standard default-metric names, build info), no Redis gauge where no Redis is configured,
 * and state gauges read from their owners once per scrape.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { startProxy, type ProxyServer } from '../../src/composition-root.js';
import { startRedis, testConfig } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { fetchRaw } from '../support/http.js';

const { defer, fakeUpstream } = useCleanups();
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

async function proxy(options: { redisUrl?: string; defaultMetrics: boolean }): Promise<ProxyServer> {
  const upstream = await fakeUpstream();
  const config = testConfig({ upstreamUrls: [upstream.url], redisUrl: options.redisUrl });
  const started = await startProxy(config, { logger: createLogger('silent'), defaultMetrics: options.defaultMetrics });
  defer(() => started.close());
  return started;
}

async function scrape(server: ProxyServer): Promise<string> {
  // /metrics is served on the admin listener (the public port serves it only with metrics.onPublicPort).
  const answer = await fetchRaw(`${server.adminUrl}/metrics`);
  expect(answer.status).toBe(200);
  expect(answer.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return answer.body.toString('utf8');
}

/** The names of the metric families a scrape exports (from its TYPE lines). */
const families = (text: string): Set<string> => new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] as string));

describe('/metrics', () => {
  it('exports no stacks_proxy_redis_up when no Redis is configured (the Redis-down alert must not fire there)', async () => {
    const text = await scrape(await proxy({ defaultMetrics: false }));
    expect(families(text).has('stacks_proxy_redis_up')).toBe(false);
    expect(families(text).has('stacks_proxy_http_requests_total')).toBe(true);
  });

  it('exports stacks_proxy_redis_up = 1 when Redis is configured and connected', async () => {
    const redis = await startRedis();
    defer(() => redis.stop());
    const server = await proxy({ redisUrl: redis.url, defaultMetrics: false });
    await expect.poll(async () => /^stacks_proxy_redis_up 1$/m.test(await scrape(server)), { timeout: 5_000 }).toBe(true);
  });

  it("exports Node's default metrics under their standard names, and the build info", async () => {
    const text = await scrape(await proxy({ defaultMetrics: true }));
    const names = families(text);
    for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes']) {
      expect(names.has(name), name).toBe(true);
      expect(names.has(`stacks_proxy_${name}`), `stacks_proxy_${name}`).toBe(false);
    }
    expect(text).toContain(`stacks_proxy_build_info{version="${VERSION}",node="${process.version}"} 1`);
  });

  it('asks Redis for its statistics once per scrape, however many gauges they feed', async () => {
    const redis = await startRedis();
    defer(() => redis.stop());
    const server = await proxy({ redisUrl: redis.url, defaultMetrics: false });
    await expect.poll(async () => /^stacks_proxy_redis_up 1$/m.test(await scrape(server)), { timeout: 5_000 }).toBe(true);
    // Each scrape runs DBSIZE once and INFO twice (memory, stats): the Redis command histogram shows it.
    const count = (text: string, command: string): number =>
      Number(new RegExp(`^stacks_proxy_redis_command_duration_seconds_count\\{command="${command}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    const before = await scrape(server);
    const after = await scrape(server);
    expect(count(after, 'dbsize') - count(before, 'dbsize')).toBe(1);
    expect(count(after, 'info') - count(before, 'info')).toBe(2);
  });
});
