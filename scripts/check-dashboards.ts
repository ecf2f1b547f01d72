/**
 * `npm run check:dashboards`: proves that every query of the Grafana dashboards in
 * grafana/dashboards returns data from the real proxy, so a renamed metric, a label that is
 * never set or a typo in PromQL cannot hide behind a dashboard that merely loads.
 *
 * It starts a throwaway redis-server, the fake upstream and the proxy (process metrics on),
 * drives a traffic mix that moves every metric, lets a real Prometheus scrape the proxy, then
 * evaluates every panel target and every variable query through the Prometheus HTTP API. An
 * expression that errors, returns no series or only NaN (Grafana draws nothing for NaN) fails
 * the check: exit 1, with the panel and expression named. Everything started is stopped and
 * every temporary file removed, also on failure, and the whole run is bounded in time.
 *
 * This file runs the steps; scripts/check-dashboards/ holds them, one job each: dashboards.ts
 * (what to check), promql.ts (Grafana query to PromQL), proxies.ts and traffic.ts (what gets
 * scraped), prometheus.ts (the scraper and its query API), evaluation.ts (asking and reporting),
 * cleanup.ts (bounded tear-down).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ProxyServer } from '../src/composition-root.js';
import { startFakeUpstream, startRedis, waitFor, type FakeUpstream } from '../testkit/index.js';
import { Cleanup } from './check-dashboards/cleanup.js';
import { evaluateAll, expressionsToCheck, report } from './check-dashboards/evaluation.js';
import { scrapeCount, startPrometheus, type Prometheus } from './check-dashboards/prometheus.js';
import { startMainProxy, startPeerProxy, startWorkerLikeProxy } from './check-dashboards/proxies.js';
import { startTraffic, TrafficMix } from './check-dashboards/traffic.js';

// rate() needs two samples in its window; a few more make the newest window span whole rounds.
const MIN_SCRAPES = 6;
/** Time limit for the whole check: servers, scraping, queries and clean-up. */
const RUN_LIMIT_MS = 90_000;

interface Servers {
  dir: string;
  upstream: FakeUpstream;
  main: ProxyServer;
  peer: ProxyServer;
  /** Without Redis, its single-flight through a primary as in worker mode. */
  worker: ProxyServer;
}

/** A temp dir, redis-server, the fake upstream and the three proxy instances, each registered for clean-up. */
async function startServers(cleanup: Cleanup): Promise<Servers> {
  const dir = await mkdtemp(join(tmpdir(), 'check-dashboards-'));
  cleanup.add('remove temp dir', () => rm(dir, { recursive: true, force: true }));
  const redis = await startRedis();
  cleanup.add('stop redis-server', () => redis.stop());
  // Principal ETags that move only with the principal's activity, as the upstream's do: the
  // ETag-scope confirmations panel needs a sibling URL's ETag to still hold after a block.
  const upstream = await startFakeUpstream({ principalEtags: 'exact', rpcChannel: true });
  cleanup.add('close fake upstream', () => upstream.close());
  const main = await startMainProxy(upstream.url, redis.url);
  cleanup.add('close main proxy', () => main.close());
  const peer = await startPeerProxy(upstream.url, redis.url);
  cleanup.add('close peer proxy', () => peer.close());
  const worker = await startWorkerLikeProxy(upstream.url);
  cleanup.add('close worker-like proxy', () => worker.close());
  return { dir, upstream, main, peer, worker };
}

/** Traffic from before the first scrape until the end, and Prometheus scraping every instance. */
async function scrapeUnderTraffic(cleanup: Cleanup, { dir, upstream, main, peer, worker }: Servers): Promise<Prometheus> {
  const mix = new TrafficMix(main, peer, upstream, worker);
  await mix.round(); // every series exists from the first scrape on
  const traffic = startTraffic(mix);
  cleanup.add('stop traffic', () => traffic.stop());
  // Prometheus scrapes the admin listener, where /metrics is served.
  const prometheus = await startPrometheus(
    [main, peer, worker].map((proxy) => `127.0.0.1:${proxy.adminPort}`),
    dir,
  );
  cleanup.add('stop prometheus', () => prometheus.stop());
  const enough = async () => (await scrapeCount(prometheus.url)) >= MIN_SCRAPES || traffic.error() !== undefined;
  await waitFor(enough, { timeoutMs: 30_000, intervalMs: 200, what: `${MIN_SCRAPES} scrapes` });
  const failure = traffic.error();
  if (failure) throw new Error(`traffic toward the proxy failed: ${(failure as Error).message}`);
  return prometheus;
}

async function check(cleanup: Cleanup): Promise<boolean> {
  const started = Date.now();
  const expressions = expressionsToCheck();
  const prometheus = await scrapeUnderTraffic(cleanup, await startServers(cleanup));
  const results = await evaluateAll(prometheus.url, expressions);
  report(results);
  const failed = results.filter((r) => r.problem).length;
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const scrapes = await scrapeCount(prometheus.url);
  process.stdout.write(
    `\ncheck:dashboards: ${results.length} expressions: ${results.length - failed} returned data, ${failed} failed ` +
      `(${scrapes} scrapes per instance, ${seconds} s)\n`,
  );
  return failed === 0;
}

async function main(): Promise<void> {
  const cleanup = new Cleanup();
  const finish = async (code: number): Promise<never> => {
    await cleanup.run();
    process.exit(code);
  };
  // Nothing may keep the check (or CI) waiting: past the limit it cleans up and fails.
  setTimeout(() => {
    process.stderr.write(`check:dashboards: timed out after ${RUN_LIMIT_MS / 1000} s\n`);
    void finish(1);
  }, RUN_LIMIT_MS);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`check:dashboards: ${signal}, cleaning up\n`);
      void finish(1);
    });
  }

  let ok = false;
  try {
    ok = await check(cleanup);
  } catch (error) {
    process.stderr.write(`check:dashboards: ${(error as Error).stack ?? String(error)}\n`);
  }
  await finish(ok ? 0 : 1);
}

await main();
