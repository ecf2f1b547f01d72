/**
 * The primary of worker mode (`server.workers` > 1): it serves no request itself. It forks the
 * workers (worker.ts), which share the public port through node:cluster; it serves the admin
 * port (primary-admin.ts: /metrics, /ready, the status report and purges asked of every worker
 * and answered as one; anything else forwarded to one worker's private admin listener); without
 * Redis it coordinates single-flight across the workers (flight-coordinator.ts); it designates one
 * ready worker the tip leader (tip-leader.ts: the one that polls the chain tip on the interval and
 * follows the push feed) and relays the leader's news to the other workers (worker-tip-share.ts);
 * it replaces a worker that dies (within a restart budget); and on
 * SIGTERM/SIGINT it has every worker drain (each within server.shutdownGraceMs) before it exits.
 */
import cluster, { type Worker } from 'node:cluster';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { systemClock } from '../clock.js';
import { startHttpServer, type RunningServer } from '../http/server-lifecycle.js';
import { ADMIN_LISTENER, listenError } from '../http/standalone-listeners.js';
import {
  isFlightAsk,
  isFlightDone,
  isBlockLearnedNews,
  isMempoolNews,
  isMempoolPollNews,
  isMetricsAnswer,
  isTipNews,
  isWorkerReady,
  type FlightAnswer,
  type FlightAsk,
  type FlightDone,
  type MetricsAnswer,
  type WorkerReady,
} from './messages.js';
import { FlightCoordinator, flightLimitsFor } from './flight-coordinator.js';
import { aggregateWorkerMetrics } from '../telemetry/worker-metrics.js';
import { RestartBudget } from './restart-budget.js';
import { answerText, createPrimaryAdmin, type AdminTarget } from './primary-admin.js';
import { chooseTipLeader } from './tip-leader.js';

/** Restarts of dead workers allowed within RESTART_WINDOW_MS before the primary gives up (exit 1). */
const MAX_RESTARTS = 5;
const RESTART_WINDOW_MS = 60_000;
/** How long a scrape waits for the workers' metrics; a worker later than that is missing from it. */
const METRICS_WAIT_MS = 5_000;
/** Past every worker's own grace, how long the primary waits before it kills what still runs. */
const STOP_MARGIN_MS = 5_000;

export interface ClusterStarted {
  boundUrl: string;
  adminBoundUrl: string;
}

export async function startPrimary(config: Config, logger: Logger, count: number): Promise<ClusterStarted> {
  const primary = new Primary(config, logger);
  return primary.start(count);
}

class Primary {
  private readonly ready = new Map<number, WorkerReady>();
  /** Forked and not yet exited (cluster.workers may still hold a worker that has exited). */
  private readonly live = new Set<Worker>();
  private readonly restarts = new RestartBudget(MAX_RESTARTS, RESTART_WINDOW_MS, systemClock);
  private readonly exitCodes: (number | null)[] = [];
  private admin: RunningServer | undefined;
  private started = false;
  private stopping = false;
  private nextMetricsId = 0;
  private readonly metricsWaits = new Map<number, { answers: MetricsAnswer['metrics'][]; expected: number; done: () => void }>();
  private onAllExited: (() => void) | undefined;
  private readonly flights: FlightCoordinator;
  /** The worker that polls the chain tip on the interval (tip-leader.ts); undefined while none is ready. */
  private tipLeader: number | undefined;

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
  ) {
    this.flights = new FlightCoordinator(flightLimitsFor(config), (id, answer) => this.sendFlightAnswer(id, answer));
  }

  async start(count: number): Promise<ClusterStarted> {
    const allReady = new Promise<void>((resolve, reject) => {
      cluster.on('message', (worker: Worker, message: unknown) => {
        if (isWorkerReady(message)) {
          this.ready.set(worker.id, message);
          this.logger.info({ worker: worker.id, pid: worker.process.pid }, 'worker ready');
          this.designateTipLeader();
          if (!this.started && this.ready.size === count) resolve();
        } else if (isMetricsAnswer(message)) this.metricsArrived(message);
        else if (isTipNews(message) || isMempoolNews(message) || isMempoolPollNews(message) || isBlockLearnedNews(message)) this.relayNews(worker, message);
        else if (isFlightAsk(message)) this.flightAsked(worker, message);
        else if (isFlightDone(message)) this.flightDone(worker, message);
      });
      cluster.on('exit', (worker: Worker, code: number | null, signal: string | null) => {
        this.ready.delete(worker.id);
        this.live.delete(worker);
        this.flights.workerGone(worker.id);
        this.designateTipLeader();
        if (!this.started && !this.stopping) {
          // A worker that cannot start (a port taken, Redis refusing) will not start on a second try either.
          reject(new Error(`worker ${worker.id} exited during start-up (code ${code}, signal ${signal}); its log says why`));
          return;
        }
        this.workerExited(worker, code, signal);
      });
    });
    for (let i = 0; i < count; i++) this.fork();
    try {
      await allReady;
      this.admin = await this.openAdmin();
    } catch (error) {
      await this.stopWorkers();
      throw error;
    }
    this.started = true;
    process.on('SIGTERM', () => void this.stop('SIGTERM'));
    process.on('SIGINT', () => void this.stop('SIGINT'));
    const first = [...this.ready.values()][0] as WorkerReady;
    return { boundUrl: first.boundUrl, adminBoundUrl: this.admin.boundUrl };
  }

  private workerExited(worker: Worker, code: number | null, signal: string | null): void {
    if (this.stopping) {
      this.exitCodes.push(code);
      if (this.live.size === 0) this.onAllExited?.();
      return;
    }
    if (!this.restarts.take()) {
      this.logger.error(
        { worker: worker.id, pid: worker.process.pid, code, signal, maxRestarts: MAX_RESTARTS, windowMs: RESTART_WINDOW_MS },
        'workers keep dying: stopping',
      );
      void this.stop('restart budget spent', 1);
      return;
    }
    const replacement = this.fork();
    this.logger.warn({ worker: worker.id, pid: worker.process.pid, code, signal, replacement: replacement.id }, 'worker died: starting another');
  }

  /** A new leader when there is none (at start) or the leader is gone; a leader stays one while it lives. */
  private designateTipLeader(): void {
    if (this.stopping) return;
    const chosen = chooseTipLeader(this.tipLeader, this.ready.keys());
    if (chosen === this.tipLeader) return;
    this.tipLeader = chosen;
    const worker = chosen === undefined ? undefined : cluster.workers?.[chosen];
    if (!worker?.isConnected()) return;
    worker.send({ type: 'scp:tip-lead' });
    this.logger.info({ worker: worker.id, pid: worker.process.pid }, 'tip leader');
  }

  /**
   * The tip leader's news, to every other worker (starting ones too: news during their first poll
   * is acted on once they run). Only the leader's: a worker that is not the leader has none to send.
   */
  private relayNews(from: Worker, message: unknown): void {
    if (from.id !== this.tipLeader) return;
    for (const worker of this.live) if (worker !== from && worker.isConnected()) worker.send(message as object);
  }

  private flightAsked(worker: Worker, ask: FlightAsk): void {
    const outcome = this.flights.ask(worker.id, ask);
    // Debug only: which worker leads a key, and who waits for it (one line per worker and key).
    this.logger.debug({ key: ask.key, worker: worker.id, pid: worker.process.pid, outcome, keysHeld: this.flights.size }, 'single-flight asked');
  }

  private flightDone(worker: Worker, done: FlightDone): void {
    const waiters = this.flights.done(worker.id, done);
    if (waiters) this.logger.debug({ key: done.key, worker: worker.id, pid: worker.process.pid, bytes: done.bytes?.length, ...waiters }, 'single-flight done');
  }

  private sendFlightAnswer(id: number, answer: FlightAnswer): void {
    const worker = cluster.workers?.[id];
    // A worker that exited has nobody left to answer; its flights are released on its exit.
    if (worker?.isConnected()) worker.send(answer);
  }

  private fork(): Worker {
    const worker = cluster.fork();
    this.live.add(worker);
    return worker;
  }

  private async openAdmin(): Promise<RunningServer> {
    const { server, admin } = this.config;
    const options = {
      port: admin.port,
      host: admin.host,
      requestTimeoutMs: server.requestTimeoutMs,
      headersTimeoutMs: server.headersTimeoutMs,
      maxPipelinedRequests: server.maxPipelinedRequests,
      shutdownGraceMs: server.shutdownGraceMs,
    };
    try {
      const handleAdmin = createPrimaryAdmin({
        logger: this.logger,
        workers: () => this.adminTargets(),
        answerMetrics: (req, res) => void this.answerMetrics(req, res),
      });
      return await startHttpServer(handleAdmin, options);
    } catch (error) {
      throw listenError(error, ADMIN_LISTENER, admin.host, admin.port);
    }
  }

  /** The ready workers' admin listeners, oldest first. */
  private adminTargets(): AdminTarget[] {
    return [...this.ready].map(([id, ready]) => ({ id, pid: cluster.workers?.[id]?.process.pid, adminUrl: ready.adminUrl }));
  }

  private async answerMetrics(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const registry = aggregateWorkerMetrics(await this.collectMetrics());
      const body = await registry.metrics();
      res.writeHead(200, { 'content-type': registry.contentType, 'content-length': Buffer.byteLength(body) });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch (error) {
      this.logger.warn({ err: error }, 'metrics from the workers could not be combined');
      answerText(res, 500, 'metrics from the workers could not be combined');
    }
  }

  /** Every connected worker's metrics; a worker that has not answered within METRICS_WAIT_MS is left out. */
  private collectMetrics(): Promise<MetricsAnswer['metrics'][]> {
    const workers = [...this.live].filter((worker) => worker.isConnected());
    const id = this.nextMetricsId++;
    return new Promise((resolve) => {
      const answers: MetricsAnswer['metrics'][] = [];
      const done = () => {
        clearTimeout(timer);
        this.metricsWaits.delete(id);
        resolve(answers);
      };
      const timer = setTimeout(done, METRICS_WAIT_MS);
      this.metricsWaits.set(id, { answers, expected: workers.length, done });
      if (workers.length === 0) done();
      for (const worker of workers) worker.send({ type: 'scp:metrics?', id });
    });
  }

  private metricsArrived(message: MetricsAnswer): void {
    const wait = this.metricsWaits.get(message.id);
    if (!wait) return;
    wait.answers.push(message.metrics);
    if (wait.answers.length >= wait.expected) wait.done();
  }

  /** Every worker drains (its own SIGTERM handler), then the primary exits: 0 when every worker stopped cleanly. */
  private async stop(reason: string, exitCode = 0): Promise<void> {
    if (this.stopping) return;
    this.logger.info({ signal: reason }, 'stopping');
    const adminClosed = this.admin?.close();
    await this.stopWorkers();
    await adminClosed;
    const clean = this.exitCodes.every((code) => code === 0);
    if (!clean) this.logger.error({ exitCodes: this.exitCodes }, 'a worker did not stop cleanly');
    process.exit(exitCode === 0 && clean ? 0 : 1);
  }

  private async stopWorkers(): Promise<void> {
    this.stopping = true;
    const running = () => [...this.live];
    if (this.live.size === 0) return;
    const allExited = new Promise<void>((resolve) => (this.onAllExited = resolve));
    for (const worker of running()) worker.process.kill('SIGTERM');
    const deadline = setTimeout(() => {
      this.logger.error({ afterMs: this.config.server.shutdownGraceMs + STOP_MARGIN_MS }, 'workers still running: killed');
      for (const worker of running()) worker.process.kill('SIGKILL');
    }, this.config.server.shutdownGraceMs + STOP_MARGIN_MS);
    await allExited;
    clearTimeout(deadline);
  }
}
