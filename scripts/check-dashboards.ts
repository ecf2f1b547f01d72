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
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { createLogger } from '../src/logger.js';
import { projectRoot } from '../src/paths.js';
import { startProxy, type ProxyServer } from '../src/proxy-server.js';
import { RECORDED, startFakeUpstream, testConfig, startRedis, freePort, type FakeUpstream } from '../testkit/index.js';

// ---------------------------------------------------------------------------------------------
// Dashboard model: only the parts the check reads
// ---------------------------------------------------------------------------------------------

export interface DashboardTarget {
  refId?: string;
  expr?: string;
}

export interface DashboardPanel {
  id?: number;
  type?: string;
  title?: string;
  description?: string;
  targets?: DashboardTarget[];
  /** Panels of a collapsed row live inside it. */
  panels?: DashboardPanel[];
}

export interface DashboardVariable {
  name: string;
  type: string;
  /** Prometheus variable queries are a string, or `{ query }` once Grafana has migrated them. */
  query?: string | { query?: string };
}

export interface Dashboard {
  uid?: string;
  title?: string;
  panels?: DashboardPanel[];
  templating?: { list?: DashboardVariable[] };
}

export interface DashboardExpression {
  /** Where it comes from: a panel title, or `variable <name>`. */
  source: string;
  kind: 'target' | 'variable';
  /** As written in the dashboard. */
  expr: string;
}

export const DASHBOARD_DIR = join(projectRoot(), 'grafana', 'dashboards');

export function loadDashboards(dir = DASHBOARD_DIR): { file: string; dashboard: Dashboard }[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => ({ file: join(dir, name), dashboard: JSON.parse(readFileSync(join(dir, name), 'utf8')) as Dashboard }));
}

/** Every panel, rows and the panels nested in collapsed rows included. */
export function allPanels(dashboard: Dashboard): DashboardPanel[] {
  const walk = (panels: DashboardPanel[] = []): DashboardPanel[] => panels.flatMap((p) => [p, ...walk(p.panels)]);
  return walk(dashboard.panels);
}

export function variableQuery(variable: DashboardVariable): string | undefined {
  return typeof variable.query === 'string' ? variable.query : variable.query?.query;
}

/** Every PromQL expression a dashboard runs: panel targets and query-variable queries. */
export function collectExpressions(dashboard: Dashboard): DashboardExpression[] {
  const targets = allPanels(dashboard).flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({
      source: `${panel.title ?? `panel ${panel.id ?? '?'}`}${(panel.targets?.length ?? 0) > 1 ? ` [${target.refId ?? '?'}]` : ''}`,
      kind: 'target' as const,
      expr: target.expr ?? '',
    })),
  );
  const variables = (dashboard.templating?.list ?? [])
    .filter((variable) => variable.type === 'query')
    .map((variable) => ({ source: `variable ${variable.name}`, kind: 'variable' as const, expr: variableQuery(variable) ?? '' }));
  return [...targets, ...variables];
}

// ---------------------------------------------------------------------------------------------
// From Grafana query to Prometheus query
// ---------------------------------------------------------------------------------------------

/**
 * What Grafana would put in place of its variables. `.*` is what "All" sends for the dashboard
 * variables (their allValue); 1m holds many 1 s scrapes, as $__rate_interval is meant to.
 */
export function substituteVariables(expr: string, values: Record<string, string>): string {
  return expr.replace(/\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)/g, (whole, a?: string, b?: string, c?: string) => {
    const name = a ?? b ?? c ?? '';
    return values[name] ?? whole;
  });
}

export function unresolvedVariable(expr: string): string | undefined {
  return /\$\{?\w+\}?|\[\[\w+\]\]/.exec(expr)?.[0];
}

export function variableValues(dashboard: Dashboard): Record<string, string> {
  const values: Record<string, string> = { __rate_interval: '1m', __interval: '1m', __range: '5m' };
  for (const variable of dashboard.templating?.list ?? []) {
    if (variable.type === 'query' || variable.type === 'custom') values[variable.name] = '.*';
  }
  return values;
}

/**
 * Grafana's variable functions are not PromQL. `label_values(selector, label)` lists the values
 * of `label` on the series of `selector`: `count by (label) (selector)` asks Prometheus exactly
 * that, and its series are the values the variable would offer.
 */
export function variableToPromql(query: string): string {
  const text = query.trim();
  const labelValues = /^label_values\(\s*(?:(.*),\s*)?(\w+)\s*\)$/s.exec(text);
  if (labelValues) {
    const [, selector, label = ''] = labelValues;
    return `count by (${label}) (${selector?.trim() || `{${label}=~".+"}`})`;
  }
  const queryResult = /^query_result\((.*)\)$/s.exec(text);
  if (queryResult) return queryResult[1] ?? '';
  throw new Error(`unsupported variable query: ${text}`);
}

// ---------------------------------------------------------------------------------------------
// Servers under test
// ---------------------------------------------------------------------------------------------

/** Small enough that the traffic mix expires mempool entries (revalidations, stale serves) quickly. */
const MEMPOOL_TTL_MS = 250;
const STALE_WHILE_REVALIDATE_MS = 500;
/** Every upstream request is tried this often: an injected failure must last as many attempts. */
const MAX_ATTEMPTS = 2;
/** A memory tier this small evicts during the traffic mix; Redis behind it keeps hits hits. */
const MEMORY_TIER_BYTES = 64 * 1024;

const SHARED_SETTINGS = {
  chainTip: { pollIntervalMs: 200 },
  upstream: {
    maxAttempts: MAX_ATTEMPTS,
    retryBackoffMs: 5,
    // There is one upstream: an open breaker would fail every read for the cool-down, while the
    // mix injects a few failures in a row on purpose.
    failureThreshold: 50,
  },
  cache: { ttl: { mempoolMs: MEMPOOL_TTL_MS, staleWhileRevalidateMs: STALE_WHILE_REVALIDATE_MS } },
};

/** The instance most panels are about: process metrics on, a memory tier that evicts. */
async function startMainProxy(upstreamUrl: string, redisUrl: string): Promise<ProxyServer> {
  const config = testConfig({
    upstreamUrls: [upstreamUrl],
    redisUrl,
    overrides: { ...SHARED_SETTINGS, cache: { ...SHARED_SETTINGS.cache, memory: { maxBytesWithRedis: MEMORY_TIER_BYTES } } },
  });
  // defaultMetrics: the process and Node.js panels need prom-client's default metrics.
  return startProxy(config, { logger: createLogger(config.logLevel), defaultMetrics: true });
}

/**
 * A second instance on the same Redis: shared single-flight waits only happen between
 * instances. Its upstream queue holds one request and one waiter, so a burst is refused (503).
 * Default metrics stay off: one process, so they would only repeat the first instance's.
 */
async function startPeerProxy(upstreamUrl: string, redisUrl: string): Promise<ProxyServer> {
  const config = testConfig({
    upstreamUrls: [upstreamUrl],
    redisUrl,
    overrides: { ...SHARED_SETTINGS, upstream: { ...SHARED_SETTINGS.upstream, maxConcurrent: 1, maxQueue: 1 } },
  });
  return startProxy(config, { logger: createLogger(config.logLevel), defaultMetrics: false });
}

interface Prometheus {
  url: string;
  stop(): Promise<void>;
}

const SCRAPE_JOB = 'stacks-proxy';

function prometheusConfig(targets: string[]): string {
  return [
    'global:',
    '  scrape_interval: 1s',
    '  evaluation_interval: 1s',
    'scrape_configs:',
    `  - job_name: ${SCRAPE_JOB}`,
    '    scrape_interval: 1s',
    '    scrape_timeout: 1s',
    '    static_configs:',
    `      - targets: [${targets.map((target) => `'${target}'`).join(', ')}]`,
    '',
  ].join('\n');
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const stopped = await Promise.race([exited(child).then(() => true), sleep(5_000).then(() => false)]);
  if (!stopped) {
    child.kill('SIGKILL');
    await exited(child);
  }
}

async function startPrometheus(targets: string[], dir: string): Promise<Prometheus> {
  const port = await freePort();
  const configFile = join(dir, 'prometheus.yml');
  await writeFile(configFile, prometheusConfig(targets));
  const log = openSync(join(dir, 'prometheus.log'), 'a');
  const child = spawn(
    'prometheus',
    [`--config.file=${configFile}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', log, log] },
  );
  closeSync(log);
  const url = `http://127.0.0.1:${port}`;
  const prometheus = { url, stop: () => stopChild(child) };
  const failedToStart = new Promise<never>((_, reject) => {
    child.once('error', (error) => reject(new Error(`cannot start prometheus (is it installed?): ${error.message}`)));
    child.once('exit', (code) => reject(new Error(`prometheus exited with ${code}; see its log:\n${tail(join(dir, 'prometheus.log'))}`)));
  });
  failedToStart.catch(() => undefined); // only awaited while waiting for readiness
  try {
    await Promise.race([waitFor(() => isReady(url), 15_000, 'prometheus to be ready'), failedToStart]);
  } catch (error) {
    await prometheus.stop();
    throw error;
  }
  return prometheus;
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '(no log)';
  }
}

async function isReady(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1_000) })).ok;
  } catch {
    return false;
  }
}

async function waitFor(condition: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

// ---------------------------------------------------------------------------------------------
// Traffic: one round moves every metric the dashboard shows
// ---------------------------------------------------------------------------------------------

const P = RECORDED.principal;
const TX = RECORDED.confirmedTxId;

/** One request per route id (the examples of test/integration/read-routes.test.ts). */
const ROUTE_PATHS = [
  `/extended/v1/address/${P}/stx`,
  '/extended/v2/mempool/fees',
  `/extended/v1/address/${P}/balances`,
  `/extended/v1/tx/${TX}`,
  '/extended/v2/blocks/latest',
  `/extended/v1/tx/multiple?tx_id=${TX}&tx_id=${RECORDED.unknownTxId}`,
  '/extended/v1/tx/mempool/stats',
  `/extended/v1/tx/events?address=${P}&limit=5`,
  `/extended/v1/contract/${RECORDED.contractId}/events?limit=5`,
  `/extended/v1/address/${P}/transactions`,
  `/extended/v2/addresses/${P}/transactions?limit=5`,
  `/extended/v1/block/by_burn_block_height/${RECORDED.burnHeightWithBlock}`,
  '/extended/v1/address/ST000000000000000000002AMW42H/0x66146a2549bb199c4960d58af1a9ed3022904896976cfa14bb05b4b5d3844d80/with_transfers',
];
/** Refused by validation (400) without an upstream request. */
const INVALID_PATHS = ['/extended/v1/tx/0x1234', '/extended/v2/blocks/not-a-block'];
/** Not one of the 13 routes: forwarded unchanged (route="passthrough", cache="BYPASS"). */
const PASSTHROUGH_PATHS = ['/extended', '/v2/info'];
/** Final blocks: filler that overflows the small memory tier, so it evicts. */
const FINAL_BLOCK_PATHS = Array.from({ length: 40 }, (_, i) => `/extended/v2/blocks/${i + 1}`);
/** Mempool-class entries whose upstream ETag stays (a pending tx), moves with the mempool (fees), or fails (stats). */
const UNCHANGED_PATH = `/extended/v1/tx/${RECORDED.pendingTxId}`;
const CHANGING_PATH = '/extended/v2/mempool/fees';
const FAILING_PATH = '/extended/v1/tx/mempool/stats';
const SINGLE_FLIGHT_CALLERS = 5;
/** Long enough that concurrent callers arrive while the first one's upstream request is in flight. */
const SLOW_UPSTREAM_MS = 150;
/** The first instance must hold the Redis lock before its peer asks for the same key. */
const LOCK_HEAD_START_MS = 40;
/** More concurrent misses than the peer's one in flight plus one queued. */
const OVERLOAD_BURST = 5;

type Failure = { status: number } | 'reset';

class TrafficMix {
  private rounds = 0;

  constructor(
    private readonly main: ProxyServer,
    private readonly peer: ProxyServer,
    private readonly upstream: FakeUpstream,
  ) {}

  async round(): Promise<void> {
    this.rounds += 1;
    await this.everyRouteTwice();
    await this.get(this.main, ...INVALID_PATHS, ...PASSTHROUGH_PATHS, ...FINAL_BLOCK_PATHS);
    await this.concurrentMisses();
    await this.missesAcrossInstances();
    await this.overloadPeer();
    await this.upstreamFailures();
    await this.expireMempoolEntries();
    await this.moveChain();
  }

  /** Each route's first request of a round misses or revalidates (the tip moved), the second hits. */
  private async everyRouteTwice(): Promise<void> {
    await Promise.all(ROUTE_PATHS.map(async (path) => this.get(this.main, path, path)));
  }

  /** Identical misses at once on one instance: one upstream request, the others join it. */
  private async concurrentMisses(): Promise<void> {
    const path = `/extended/v1/tx/${unknownTxId()}`;
    await this.withSlowUpstream(path, () => Promise.all(Array.from({ length: SINGLE_FLIGHT_CALLERS }, () => this.get(this.main, path))));
  }

  /** The same miss on both instances: the peer waits on the Redis lock and gets the answer through Redis. */
  private async missesAcrossInstances(): Promise<void> {
    const path = `/extended/v1/tx/${unknownTxId()}`;
    await this.withSlowUpstream(path, async () => {
      const first = this.get(this.main, path);
      await sleep(LOCK_HEAD_START_MS);
      await Promise.all([first, this.get(this.peer, path)]);
    });
  }

  /** Distinct misses at once on the peer: its upstream queue overflows and the rest get 503. */
  private async overloadPeer(): Promise<void> {
    const paths = Array.from({ length: OVERLOAD_BURST }, () => `/extended/v1/tx/${unknownTxId()}`);
    await this.withSlowUpstream(paths, () => Promise.all(paths.map((path) => this.get(this.peer, path))));
  }

  /** A 500 and a reset, through every retry, on keys not cached: the client gets the 500 and a 502. */
  private async upstreamFailures(): Promise<void> {
    await this.getFailing(`/extended/v1/tx/${unknownTxId()}`, { status: 500 });
    await this.getFailing(`/extended/v1/tx/${unknownTxId()}`, 'reset');
  }

  /**
   * Just past the mempool TTL entries are served stale while they refresh; past the
   * stale-while-revalidate window too they are revalidated: an unchanged ETag as not_modified,
   * a moved one as modified, and a failing upstream makes the proxy serve the old copy.
   */
  private async expireMempoolEntries(): Promise<void> {
    const paths = [UNCHANGED_PATH, CHANGING_PATH, FAILING_PATH];
    await this.get(this.main, ...paths);
    await sleep(MEMPOOL_TTL_MS + 50);
    await this.get(this.main, ...paths);
    await sleep(MEMPOOL_TTL_MS + STALE_WHILE_REVALIDATE_MS + 50);
    this.upstream.setMempoolChanged();
    await this.get(this.main, UNCHANGED_PATH, CHANGING_PATH);
    await this.getFailing(FAILING_PATH, { status: 500 });
    await this.getFailing(FAILING_PATH, 'reset');
  }

  /**
   * A new block every round; every other round a reorg instead, after which the tip entries the
   * next round reads were validated on the old branch and are purged.
   */
  private async moveChain(): Promise<void> {
    if (this.rounds % 2 === 0) this.upstream.reorg(1);
    else this.upstream.advanceTip(1);
    await Promise.all([this.main.tracker.pollOnce(), this.peer.tracker.pollOnce()]);
  }

  private async withSlowUpstream<T>(paths: string | string[], run: () => Promise<T>): Promise<void> {
    this.upstream.setDelay(SLOW_UPSTREAM_MS, literally(...[paths].flat()));
    try {
      await run();
    } finally {
      this.upstream.setDelay(0);
    }
  }

  private async getFailing(path: string, how: Failure): Promise<void> {
    this.upstream.failNext(MAX_ATTEMPTS, how, literally(path));
    await this.get(this.main, path);
  }

  /** Requests run one after another; any transport failure toward the proxy is a failed check. */
  private async get(proxy: ProxyServer, ...paths: string[]): Promise<void> {
    for (const path of paths) {
      const response = await fetch(proxy.url + path, { redirect: 'manual', signal: AbortSignal.timeout(10_000) });
      await response.arrayBuffer();
    }
  }
}

/** A pattern matching any of these paths (the fake upstream tests it against the request url). */
function literally(...paths: string[]): RegExp {
  return new RegExp(paths.map((path) => path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'));
}

function unknownTxId(): string {
  return `0x${randomBytes(32).toString('hex')}`;
}

/** Runs rounds back to back until stopped; the first error stops it and is kept for the report. */
function startTraffic(mix: TrafficMix): { stop(): Promise<void>; error(): unknown } {
  let stopped = false;
  let failure: unknown;
  const loop = (async () => {
    while (!stopped) {
      try {
        await mix.round();
      } catch (error) {
        failure = error;
        return;
      }
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
    },
    error: () => failure,
  };
}

// ---------------------------------------------------------------------------------------------
// Prometheus queries
// ---------------------------------------------------------------------------------------------

interface QueryAnswer {
  status: 'success' | 'error';
  error?: string;
  data?: { resultType: string; result: unknown };
}

type Sample = [number, string];

export interface Evaluation {
  expression: DashboardExpression;
  promql: string;
  /** Series returned (1 for a scalar). */
  count: number;
  /** The largest value returned, to show at a glance that a counter moved (NaN when none). */
  max: number;
  /** Why it fails; undefined when it returned data. */
  problem?: string;
}

async function instantQuery(prometheusUrl: string, promql: string): Promise<QueryAnswer> {
  const response = await fetch(`${prometheusUrl}/api/v1/query`, {
    method: 'POST',
    body: new URLSearchParams({ query: promql }),
    signal: AbortSignal.timeout(10_000),
  });
  return (await response.json()) as QueryAnswer;
}

/** Values of an instant query's answer: one per series, or the scalar. */
function samplesOf(answer: QueryAnswer): string[] {
  const result = answer.data?.result;
  if (answer.data?.resultType === 'scalar') return [(result as Sample)[1]];
  if (answer.data?.resultType === 'vector') return (result as { value: Sample }[]).map((series) => series.value[1]);
  return [];
}

async function evaluate(prometheusUrl: string, expression: DashboardExpression, values: Record<string, string>): Promise<Evaluation> {
  let promql = substituteVariables(expression.expr, values);
  const fail = (problem: string, count = 0): Evaluation => ({ expression, promql, count, max: Number.NaN, problem });
  if (promql.trim() === '') return fail('empty expression');
  const unresolved = unresolvedVariable(promql);
  if (unresolved) return fail(`unknown variable ${unresolved}`);
  try {
    if (expression.kind === 'variable') promql = variableToPromql(promql);
    const answer = await instantQuery(prometheusUrl, promql);
    if (answer.status !== 'success') return fail(`error: ${answer.error ?? 'unknown'}`);
    const samples = samplesOf(answer);
    if (samples.length === 0) return fail('empty result');
    // A ratio of two zero rates is NaN: Prometheus returns a series, Grafana draws nothing.
    if (samples.every((value) => value === 'NaN')) return fail('only NaN values', samples.length);
    return { expression, promql, count: samples.length, max: Math.max(...samples.map(Number).filter((v) => !Number.isNaN(v))) };
  } catch (error) {
    return fail(`error: ${(error as Error).message}`);
  }
}

/** Scrapes of the least-scraped instance in the last minute (0 while any instance is down). */
async function scrapeCount(prometheusUrl: string): Promise<number> {
  const up = `up{job="${SCRAPE_JOB}"}`;
  const answer = await instantQuery(prometheusUrl, `min(count_over_time(${up}[1m])) * (min(${up}) == bool 1)`);
  return Number(samplesOf(answer)[0] ?? 0);
}

// rate() needs two samples in its window; a few more make the newest window span whole rounds.
const MIN_SCRAPES = 6;
/** Failing expressions are asked again a few times while traffic goes on, before they count. */
const RETRIES = 3;
const RETRY_PAUSE_MS = 2_000;

async function evaluateAll(prometheusUrl: string, expressions: ExpressionToCheck[]): Promise<Evaluation[]> {
  let results = await Promise.all(expressions.map(({ expression, values }) => evaluate(prometheusUrl, expression, values)));
  for (let attempt = 0; attempt < RETRIES && results.some((r) => r.problem); attempt++) {
    await sleep(RETRY_PAUSE_MS);
    results = await Promise.all(
      results.map((result, i) => {
        const input = expressions[i];
        return result.problem && input ? evaluate(prometheusUrl, input.expression, input.values) : result;
      }),
    );
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------------------------

/** Time limit for the whole check: servers, scraping, queries and clean-up. */
const RUN_LIMIT_MS = 90_000;
const CLEANUP_STEP_LIMIT_MS = 10_000;

/** Clean-up steps, run last-registered first, each bounded; runs once however often it is called. */
class Cleanup {
  private readonly steps: { name: string; run: () => Promise<unknown> }[] = [];
  private running: Promise<void> | undefined;

  add(name: string, run: () => Promise<unknown>): void {
    this.steps.push({ name, run });
  }

  run(): Promise<void> {
    this.running ??= (async () => {
      for (const step of [...this.steps].reverse()) {
        const outcome = await Promise.race([
          step.run().then(() => 'done', (error: unknown) => `failed: ${(error as Error).message}`),
          sleep(CLEANUP_STEP_LIMIT_MS).then(() => 'timed out'),
        ]);
        if (outcome !== 'done') process.stderr.write(`clean-up: ${step.name} ${outcome}\n`);
      }
    })();
    return this.running;
  }
}

function report(results: Evaluation[]): void {
  for (const { expression, promql, count, max, problem } of results) {
    const status = problem ? 'FAIL' : 'ok  ';
    const shown = expression.kind === 'variable' ? `${expression.expr}  ->  ${promql}` : expression.expr;
    const top = Number.isNaN(max) ? '' : max.toPrecision(3);
    process.stdout.write(
      `${status} ${String(count).padStart(3)} series  max ${top.padEnd(9)} ${expression.source}: ${shown}${problem ? `  <- ${problem}` : ''}\n`,
    );
  }
  const failed = results.filter((r) => r.problem);
  if (failed.length > 0) {
    process.stdout.write(`\nFailing expressions:\n${failed.map((r) => `  ${r.expression.source}: ${r.problem}\n    ${r.promql}`).join('\n')}\n`);
  }
}

interface ExpressionToCheck {
  expression: DashboardExpression;
  /** What its dashboard's variables stand for. */
  values: Record<string, string>;
}

/** Every expression of every dashboard; with several dashboards, sources name theirs. */
function expressionsToCheck(): ExpressionToCheck[] {
  const dashboards = loadDashboards();
  const expressions = dashboards.flatMap(({ dashboard }) => {
    const values = variableValues(dashboard);
    return collectExpressions(dashboard).map((expression) => ({
      expression: dashboards.length > 1 ? { ...expression, source: `${dashboard.title ?? '?'} / ${expression.source}` } : expression,
      values,
    }));
  });
  if (expressions.length === 0) throw new Error(`no expressions found in ${DASHBOARD_DIR}`);
  return expressions;
}

interface Servers {
  dir: string;
  upstream: FakeUpstream;
  main: ProxyServer;
  peer: ProxyServer;
}

/** A temp dir, redis-server, the fake upstream and both proxy instances, each registered for clean-up. */
async function startServers(cleanup: Cleanup): Promise<Servers> {
  const dir = await mkdtemp(join(tmpdir(), 'check-dashboards-'));
  cleanup.add('remove temp dir', () => rm(dir, { recursive: true, force: true }));
  const redis = await startRedis();
  cleanup.add('stop redis-server', () => redis.stop());
  const upstream = await startFakeUpstream();
  cleanup.add('close fake upstream', () => upstream.close());
  const main = await startMainProxy(upstream.url, redis.url);
  cleanup.add('close main proxy', () => main.close());
  const peer = await startPeerProxy(upstream.url, redis.url);
  cleanup.add('close peer proxy', () => peer.close());
  return { dir, upstream, main, peer };
}

/** Traffic from before the first scrape until the end, and Prometheus scraping both instances. */
async function scrapeUnderTraffic(cleanup: Cleanup, { dir, upstream, main, peer }: Servers): Promise<Prometheus> {
  const mix = new TrafficMix(main, peer, upstream);
  await mix.round(); // every series exists from the first scrape on
  const traffic = startTraffic(mix);
  cleanup.add('stop traffic', () => traffic.stop());
  const prometheus = await startPrometheus([main, peer].map((proxy) => `127.0.0.1:${proxy.port}`), dir);
  cleanup.add('stop prometheus', () => prometheus.stop());
  const enough = async () => (await scrapeCount(prometheus.url)) >= MIN_SCRAPES || traffic.error() !== undefined;
  await waitFor(enough, 30_000, `${MIN_SCRAPES} scrapes`);
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

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
