/**
 * Starts the real proxy in-process on a random port, against given upstreams (and Redis),
 * with settings overridden per test (testkit's testConfig).
 */
import { createLogger, type Logger } from '../../src/logger.js';
import { startProxy, type ProxyServer } from '../../src/composition-root.js';
import { testConfig, type TestConfigOptions } from '../../testkit/index.js';

export interface TestProxyOptions extends TestConfigOptions {
  now?: () => number;
  /** The proxy's logger (default: silent unless TEST_LOG_LEVEL is set), for tests that read its lines. */
  logger?: Logger;
}

export async function startTestProxy(options: TestProxyOptions): Promise<ProxyServer> {
  const config = testConfig(options);
  return startProxy(config, { logger: options.logger ?? createLogger(config.logLevel), now: options.now, defaultMetrics: false });
}

/** Reads one metric sample's value from the proxy's registry (0 when absent). */
export async function metricValue(proxy: ProxyServer, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = proxy.telemetry.registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const matching = values.filter((v) => Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want));
  return matching.reduce((sum, v) => sum + v.value, 0);
}
