/**
 * The proxy's configuration as tests, the dashboard check and the demo want it: loopback, a
 * random port, the given upstreams (and Redis), silent logs unless TEST_LOG_LEVEL is set, and
 * per-caller overrides merged over the defaults.
 */
import { ConfigSchema, deepMerge, loadConfig, type Config } from '../src/config.js';

export interface TestConfigOptions {
  upstreamUrls: string[];
  redisUrl?: string;
  overrides?: Record<string, unknown>;
}

export function testConfig(options: TestConfigOptions): Config {
  const base = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_PORT: '0',
    ADMIN_HOST: '127.0.0.1',
    UPSTREAM_URLS: options.upstreamUrls.join(','),
    REDIS_URL: options.redisUrl ?? '',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
  });
  // Tests drive the tip poll themselves (tracker.pollOnce) unless they say otherwise; so no push
  // feed either (it would poll on the fake's notifications, and open a WebSocket to it). They
  // count the upstream requests their own reads cause: the warm-up of new blocks is on only
  // where a test turns it on (test/integration/block-warmup.test.ts).
  const testDefaults = { chainTip: { pollIntervalMs: 60_000 }, live: { push: { enabled: false }, warm: { enabled: false } } };
  return ConfigSchema.parse(deepMerge(deepMerge(base, testDefaults), options.overrides ?? {}));
}
