/**
 * A worker of worker mode: the standalone proxy, its public listener shared with the other
 * workers through node:cluster (the primary holds the socket and hands out connections), its
 * admin listener private to the host (loopback, a port the primary picks once and all workers
 * share): the primary serves the configured admin port and forwards to it (primary.ts).
 */
import cluster from 'node:cluster';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { startProxy, type ProxyServer } from '../composition-root.js';
import { isMetricsRequest, type MetricsAnswer, type WorkerReady } from './messages.js';

export async function startWorker(config: Config, logger: Logger): Promise<ProxyServer> {
  const privateAdmin: Config = { ...config, admin: { ...config.admin, host: '127.0.0.1', port: 0 } };
  const proxy = await startProxy(privateAdmin, { logger });
  process.on('message', (message: unknown) => {
    if (!isMetricsRequest(message)) return;
    void proxy.telemetry.registry.getMetricsAsJSON().then(
      (metrics) => send({ type: 'scp:metrics', id: message.id, metrics }),
      // A scrape that fails here is one worker missing from that scrape, not a dead worker.
      (error: unknown) => logger.warn({ err: error }, 'metrics for the primary failed'),
    );
  });
  send({ type: 'scp:ready', boundUrl: proxy.boundUrl, url: proxy.url, adminUrl: proxy.adminUrl });
  return proxy;
}

function send(message: WorkerReady | MetricsAnswer): void {
  // The channel closes when the primary is gone; the worker then exits (node:cluster does that).
  if (cluster.worker?.isConnected()) process.send?.(message);
}
