/**
 * A worker of worker mode: the standalone proxy, its public listener shared with the other
 * workers through node:cluster (the primary holds the socket and hands out connections), its
 * admin listener private to the host (loopback, a port the primary picks once and all workers
 * share): the primary serves the configured admin port and forwards to it (primary.ts). Without
 * Redis its single-flight across workers goes through the primary (worker-flight.ts). It polls the
 * chain tip itself only once the primary makes it the tip leader; until then it polls on the
 * leader's news (worker-tip-share.ts).
 */
import cluster from 'node:cluster';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { startProxy, type ProxyServer } from '../composition-root.js';
import {
  isMetricsRequest,
  type BlockLearnedNews,
  type FlightAsk,
  type FlightDone,
  type MempoolNews,
  type MempoolPollNews,
  type MetricsAnswer,
  type TipNews,
  type WorkerReady,
} from './messages.js';
import { WorkerFlight, workerFlightSettingsFor } from './worker-flight.js';
import { WorkerBlockLearning } from './worker-block-learning.js';
import { WorkerTipShare } from './worker-tip-share.js';

export async function startWorker(config: Config, logger: Logger): Promise<ProxyServer> {
  const privateAdmin: Config = { ...config, admin: { ...config.admin, host: '127.0.0.1', port: 0 } };
  let flight: WorkerFlight | undefined;
  const tipShare = new WorkerTipShare(send);
  const blockLearning = new WorkerBlockLearning(send, () => tipShare.isLeader);
  /** Set once the proxy has started: the listener below is on before it. */
  const started: { proxy?: ProxyServer } = {};
  // Listening before the proxy starts: its first reads (the warm-up of the first tip) ask the
  // primary while startProxy runs, and an answer nobody listens for is lost.
  process.on('message', (message: unknown) => {
    if (!isMetricsRequest(message)) {
      flight?.received(message);
      tipShare.received(message);
      blockLearning.received(message);
      return;
    }
    const proxy = started.proxy;
    if (!proxy) return; // a scrape before this worker is ready: it is missing from that scrape
    void proxy.telemetry.registry.getMetricsAsJSON().then(
      (metrics) => send({ type: 'scp:metrics', id: message.id, metrics }),
      // A scrape that fails here is one worker missing from that scrape, not a dead worker.
      (error: unknown) => logger.warn({ err: error }, 'metrics for the primary failed'),
    );
  });
  process.on('disconnect', () => flight?.disconnected());
  const proxy = await startProxy(privateAdmin, {
    logger,
    tipShare,
    blockLearning,
    crossProcessFlight: (telemetry) => (flight = new WorkerFlight(workerFlightSettingsFor(config), send, telemetry)),
  });
  started.proxy = proxy;
  send({ type: 'scp:ready', boundUrl: proxy.boundUrl, url: proxy.url, adminUrl: proxy.adminUrl });
  return proxy;
}

/** False when the channel to the primary is closed (the primary is gone; node:cluster then ends the worker). */
function send(message: WorkerReady | MetricsAnswer | FlightAsk | FlightDone | TipNews | MempoolNews | MempoolPollNews | BlockLearnedNews): boolean {
  if (!cluster.worker?.isConnected() || !process.send) return false;
  process.send(message);
  return true;
}
