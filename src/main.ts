/**
 * The entry point (`npm start`, the Docker image's command): the only place that reads
 * process.env. Loads the config, starts the proxy (composition-root.ts) and stops it on
 * SIGTERM/SIGINT.
 */
import { ConfigError, loadConfig, redactedConfig } from './config.js';
import { createLogger } from './logger.js';
import { startProxy } from './composition-root.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`stacks-cache-proxy: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }
  const logger = createLogger(config.logLevel);
  logger.info({ config: redactedConfig(config) }, 'starting');
  const proxy = await startProxy(config, { logger });
  logger.info({ url: proxy.url, adminUrl: proxy.adminUrl, cache: config.redis.url ? 'memory+redis' : 'memory' }, 'listening');

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    proxy.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`stacks-cache-proxy: failed to start: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
