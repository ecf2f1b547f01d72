/**
 * Starts the real proxy in-process on a random port, against given upstreams (and Redis),
 * with settings overridden per test. Logs are silent unless TEST_LOG_LEVEL is set.
 */
import { ConfigSchema, deepMerge, loadConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { startProxy, type ProxyServer } from '../../src/composition-root.js';

export interface TestProxyOptions {
  upstreamUrls: string[];
  redisUrl?: string;
  overrides?: Record<string, unknown>;
  now?: () => number;
}

export function testConfig(options: TestProxyOptions): Config {
  const base = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    UPSTREAM_URLS: options.upstreamUrls.join(','),
    REDIS_URL: options.redisUrl ?? '',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
  });
  // Tests drive the tip poll themselves (tracker.pollOnce) unless they say otherwise.
  const testDefaults = { chainTip: { pollIntervalMs: 60_000 } };
  return ConfigSchema.parse(deepMerge(deepMerge(base, testDefaults), options.overrides ?? {}));
}

export async function startTestProxy(options: TestProxyOptions): Promise<ProxyServer> {
  const config = testConfig(options);
  return startProxy(config, { logger: createLogger(config.logLevel), now: options.now, defaultMetrics: false });
}

/** Reads one metric sample's value from the proxy's registry (0 when absent). */
export async function metricValue(proxy: ProxyServer, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = proxy.telemetry.registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const matching = values.filter((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want));
  return matching.reduce((sum, v) => sum + v.value, 0);
}
