/**
 * `npm run demo`: the fake upstream of the tests (recorded regtest data) plus the proxy in
 * front of it, so every endpoint can be tried with curl without a Stacks node.
 */
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { startProxy } from '../src/composition-root.js';
import { RECORDED, startFakeUpstream } from '../testkit/index.js';

const upstream = await startFakeUpstream();
const config = loadConfig({ ...process.env, UPSTREAM_URLS: upstream.url });
const logger = createLogger(config.logLevel);
const proxy = await startProxy(config, { logger });

const examples = [
  '/extended/v2/blocks/latest',
  '/extended/v2/blocks/1',
  `/extended/v1/tx/${RECORDED.confirmedTxId}`,
  `/extended/v1/tx/multiple?tx_id=${RECORDED.confirmedTxId}&tx_id=${RECORDED.pendingTxId}`,
  `/extended/v1/address/${RECORDED.principal}/stx`,
  `/extended/v1/address/${RECORDED.principal}/balances`,
  `/extended/v1/address/${RECORDED.principal}/transactions?limit=5`,
  `/extended/v2/addresses/${RECORDED.principal}/transactions`,
  `/extended/v1/tx/events?tx_id=${RECORDED.confirmedTxId}`,
  `/extended/v1/contract/${RECORDED.contractId}/events`,
  `/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithBlock}`,
  '/extended/v2/mempool/fees',
  '/extended/v1/tx/mempool/stats',
];
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
