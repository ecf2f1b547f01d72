/**
 * Micro-benchmark of the proxy's own work on a Redis-tier hit, without HTTP: the CPU per lookup
 * of a bare ioredis getBuffer (the bench baseline's Redis call), of RedisStore.get (command
 * timer, duration histogram, entry decode) and of a client lookup as the read path makes it
 * (memory miss, then the shared tier through TieredStore and CacheLookups, counted, policy
 * decision), each with 50 lookups in flight as 50 client connections would keep, auto-pipelining
 * on and off. Medians of alternating rounds, one process, one throwaway redis-server.
 *   npm run build && node_modules/.bin/node dist/bench/micro/redis-hit-path.js
 */
import { CacheLookups } from '../../src/cache/lookup.js';
import { Decider } from '../../src/cache/decider.js';
import { MemoryStore } from '../../src/cache/memory-store.js';
import { createRedisClient, RedisStore } from '../../src/cache/redis-store.js';
import { TieredStore } from '../../src/cache/tiered-store.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { createTelemetry } from '../../src/telemetry/prometheus-telemetry.js';
import { startRedis } from '../../testkit/index.js';
import { median } from '../lib/load.js';

const IN_FLIGHT = 50;
const LOOKUPS = 40_000;
const ROUNDS = 5;
const KEY = 'scp:v1:tx_by_id:bench';

/** CPU µs (user, system) per call of `lookup`, with IN_FLIGHT calls always in flight. */
async function measure(lookup: () => Promise<unknown>): Promise<{ user: number; system: number }> {
  let left = LOOKUPS;
  const worker = async () => {
    while (left-- > 0) await lookup();
  };
  const before = process.cpuUsage();
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const used = process.cpuUsage(before);
  return { user: used.user / LOOKUPS, system: used.system / LOOKUPS };
}

async function main(): Promise<void> {
  const redis = await startRedis();
  const config = loadConfig({ REDIS_URL: redis.url, UPSTREAM_URLS: 'http://127.0.0.1:1' });
  const telemetry = createTelemetry({ logger: createLogger('silent'), redis: true, defaultMetrics: false, now: Date.now });
  const body = Buffer.alloc(2_400, 'a');
  const entry = {
    status: 200,
    body,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    upstreamEtag: '"0xf5be33ab"',
    etag: '"0xf5be33ab"',
    cls: 'final' as const,
    validatedAt: Date.now(),
    height: 42,
    listItem: { found: true, minedHeight: 42, unwrapped: true },
  };
  const variants: Record<string, () => Promise<unknown>> = {};
  const closers: Array<() => Promise<unknown>> = [];
  for (const autoPipelining of [true, false]) {
    const options = { url: redis.url, commandTimeoutMs: config.redis.commandTimeoutMs, autoPipelining };
    const client = createRedisClient(options);
    const store = new RedisStore({ ...options, telemetry });
    // Nothing queues while disconnected: wait until both connections are up.
    await new Promise((resolve) => client.once('ready', resolve));
    while (
      !(await store.get('bench:ready').then(
        () => true,
        () => false,
      ))
    )
      await new Promise((resolve) => setTimeout(resolve, 20));
    await store.set(KEY, entry, null);
    // The memory tier refuses the entry (as in the bench's redisHit scenario): every lookup reads Redis.
    const memory = new MemoryStore({ maxBytes: 1024, maxEntryBytes: 256, telemetry });
    const tiers = new TieredStore(memory, store, () => null, telemetry);
    const decider = new Decider({
      chain: () => ({ reorgs: [] }),
      ttl: config.cache.ttl,
      stale: { staleIfErrorMs: config.cache.staleIfErrorMs, staleIfErrorMaxBlocks: config.cache.staleIfErrorMaxBlocks },
      clock: Date.now,
    });
    const lookups = new CacheLookups({ store: tiers, telemetry, decider });
    const ap = autoPipelining ? 'auto-pipelining on' : 'auto-pipelining off';
    variants[`getBuffer, ${ap}`] = () => client.getBuffer(KEY);
    variants[`RedisStore.get, ${ap}`] = () => store.get(KEY);
    variants[`memory miss + shared lookup, ${ap}`] = async () => {
      const found = lookups.memory(KEY);
      if (!found.entry) await lookups.shared(KEY);
    };
    closers.push(
      () => client.quit(),
      () => tiers.close(),
    );
  }
  const results: Record<string, Array<{ user: number; system: number }>> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, lookup] of Object.entries(variants)) (results[name] ??= []).push(await measure(lookup));
  }
  for (const [name, runs] of Object.entries(results)) {
    const user = median(runs.map((r) => r.user));
    const system = median(runs.map((r) => r.system));
    process.stdout.write(
      `${name.padEnd(48)} user ${user.toFixed(1).padStart(5)} µs  system ${system.toFixed(1).padStart(5)} µs  total ${(user + system).toFixed(1).padStart(5)} µs\n`,
    );
  }
  for (const close of closers) await close();
  await redis.stop();
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
