/**
 * `npm run demo`: the fake upstream of the tests (recorded regtest data) plus the proxy in
 * front of it, so every endpoint can be tried with curl without a Stacks node: one curl line per
 * cached route (scripts/demo-examples.ts).
 */
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { startProxy } from '../src/composition-root.js';
import { startFakeUpstream } from '../testkit/index.js';
import { DEMO_EXAMPLES } from './demo-examples.js';

const upstream = await startFakeUpstream();
const config = loadConfig({ ...process.env, UPSTREAM_URLS: upstream.url });
const logger = createLogger(config.logLevel);
const proxy = await startProxy(config, { logger });

const examples = DEMO_EXAMPLES.map((example) => example.path);
process.stdout.write(
  [
    '',
    `fake upstream (recorded regtest chain): ${upstream.url}`,
    `proxy:                                  ${proxy.url}`,
    '',
    'Try (run twice: X-Cache goes MISS -> HIT):',
    ...examples.map((path) => `  curl -si '${proxy.url}${path}' | grep -iE '^(HTTP|x-cache|etag|age|cache-control)'`),
    '',
    `  curl -s ${proxy.adminUrl}/metrics | grep stacks_proxy_http_requests_total`,
    'Ctrl-C stops both.',
    '',
  ].join('\n'),
);

const stop = async () => {
  await proxy.close();
  await upstream.close();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
