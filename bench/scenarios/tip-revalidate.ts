/**
 * The tip safety revalidation behind the answer (issue 18), before against after, side by side:
 * the proxy at the commit before the change, at the change itself (both built once under /tmp,
 * lib/baseline-build.ts: the pair differs by the change alone) and this checkout (with the
 * hit-path work since), each a child process on CPU 0 in front of its own fake upstream (this
 * process, CPU 1). Every client asks one `tip` entry, `/extended/v2/blocks/latest`, with a short
 * `cache.ttl.tipSafetyMs` so that it expires about once a second; the fake answers that route
 * UPSTREAM_MS late (a 304 to the proxy's If-None-Match: the chain tip never moves during the run,
 * so the entry stays validated at the tip the proxy believes). Before, every client that asks
 * during the 304's round trip waits for it (X-Cache REVALIDATED); after, it is answered from the
 * entry (HIT) while one revalidation runs behind the answer.
 *
 * Load: autocannon from this process, a closed loop of the run's connections, each answer's
 * X-Cache counted and its latency kept (per-response durations, to 0.01 ms). Variants alternate
 * round by round; latency and req/s are medians over rounds, answer and upstream counts sums.
 * TIP_REVALIDATE_SECONDS (default 6, `--quick` 3) sets the length of a run, BENCH_ROUNDS the
 * rounds; TIP_REVALIDATE_BASELINE another commit as before.
 */
import { execFileSync } from 'node:child_process';
import type { IncomingHttpHeaders } from 'node:http';
import autocannon from 'autocannon';
import { startFakeUpstream, stopChild, type FakeUpstream, type RecordedRequest } from '../../testkit/index.js';
import { baselineBuild } from '../lib/baseline-build.js';
import { median, warmUpSeconds, type Run } from '../lib/load.js';
import { scrape, sumSeries } from '../lib/metrics.js';
import { cpuSeconds, ROOT, rssMiB, startProxy, type Server } from '../lib/proc.js';
import type { Section } from '../lib/report.js';
import type { Context } from './context.js';

const PATH = '/extended/v2/blocks/latest';
const TIP_SAFETY_MS = 1_000;
const UPSTREAM_MS = 30;
/** The commit that added the revalidation behind the answer; its parent is "before". */
const CHANGE = '38655ab';

type CacheStatus = 'HIT' | 'REVALIDATED' | 'MISS' | 'STALE' | 'other';

interface Measured {
  run: Run;
  p999Ms: number;
  maxMs: number;
  /**
   * The answers given while a safety revalidation ran: REVALIDATED ones (they waited for it) and
   * hits older than tipSafetyMs (served behind it); how many and their latency.
   */
  window: { answers: number; p50Ms?: number; p99Ms?: number };
  seconds: number;
  answers: Record<CacheStatus, number>;
  /** Upstream requests for PATH, those with If-None-Match, and the 304s the proxy counted. */
  upstream: { all: number; conditional: number; notModified: number };
}

type VariantName = 'before' | 'change' | 'after';

interface Variant {
  name: VariantName;
  label: string;
  upstream: FakeUpstream;
  proxy: Server & { adminUrl: string };
  runs: Measured[];
}

const emptyAnswers = (): Record<CacheStatus, number> => ({ HIT: 0, REVALIDATED: 0, MISS: 0, STALE: 0, other: 0 });
const round2 = (value: number): number => Math.round(value * 100) / 100;
const at = (sorted: number[], share: number): number => round2(sorted[Math.floor(share * (sorted.length - 1))] ?? 0);
const isPath = (r: RecordedRequest): boolean => r.path === PATH;
const isConditional = (r: RecordedRequest): boolean => isPath(r) && r.headers['if-none-match'] !== undefined;

/**
 * One closed-loop run against the variant's proxy: every answer's X-Cache and latency. autocannon
 * hands a response to `onResponse` and then, synchronously on the same client, emits `response`
 * with its duration: the X-Cache seen last is that response's.
 */
async function load(
  variant: Variant,
  connections: number,
  seconds: number,
): Promise<{ result: autocannon.Result; latencies: number[]; windowLatencies: number[]; answers: Record<CacheStatus, number> }> {
  const answers = emptyAnswers();
  const latencies: number[] = [];
  const windowLatencies: number[] = [];
  let inWindow = false;
  const count = (_status: number, _body: string, _context: object, headers: IncomingHttpHeaders | undefined): void => {
    // autocannon hands the head as received: names as the server spelled them.
    const cache = headers?.['x-cache'] ?? (headers as Record<string, string> | undefined)?.['X-Cache'];
    const status: CacheStatus = cache === 'HIT' || cache === 'REVALIDATED' || cache === 'MISS' || cache === 'STALE' ? cache : 'other';
    answers[status] += 1;
    // Age is whole seconds since the entry was validated: a hit at tipSafetyMs or older was served behind a revalidation.
    inWindow = status === 'REVALIDATED' || (status === 'HIT' && Number(headers?.age ?? 0) * 1000 >= TIP_SAFETY_MS);
  };
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      { url: variant.proxy.url, connections, duration: seconds, requests: [{ method: 'GET', path: PATH, onResponse: count }] },
      (error, done) => (error ? reject(error as Error) : resolve(done)),
    );
    instance.on('response', (_client, _status, _bytes, ms: number) => {
      latencies.push(ms);
      if (inWindow) windowLatencies.push(ms);
    });
  });
  const sort = (values: number[]): number[] => values.sort((a, b) => a - b);
  return { result, latencies: sort(latencies), windowLatencies: sort(windowLatencies), answers };
}

async function measure(variant: Variant, connections: number, seconds: number, warmUp: number): Promise<Measured> {
  await load(variant, connections, warmUp);
  const notModifiedBefore = sumSeries(await scrape(variant.proxy.adminUrl), 'stacks_proxy_revalidations_total', { result: 'not_modified' });
  variant.upstream.resetCounts();
  const cpuBefore = cpuSeconds(variant.proxy.pid);
  const ownBefore = process.cpuUsage();
  const { result, latencies, windowLatencies, answers } = await load(variant, connections, seconds);
  const cpu = cpuSeconds(variant.proxy.pid) - cpuBefore;
  const own = process.cpuUsage(ownBefore);
  // Counted when the load stops: at a run's edges a revalidation may be counted without the answers that waited for it
  // (they came in the warm-up), and the 304 metric may take in one the warm-up started.
  const all = variant.upstream.count(isPath);
  const conditional = variant.upstream.count(isConditional);
  const notModified = sumSeries(await scrape(variant.proxy.adminUrl), 'stacks_proxy_revalidations_total', { result: 'not_modified' }) - notModifiedBefore;
  const requests = result.requests.total;
  return {
    run: {
      requestsPerSecond: Math.round(result.requests.average),
      p50Ms: at(latencies, 0.5),
      p99Ms: at(latencies, 0.99),
      errors: result.errors + result.timeouts,
      non2xx: result.non2xx,
      requests,
      cpuMicrosPerRequest: requests ? Math.round((cpu / requests) * 1e7) / 10 : undefined,
      rssMiB: rssMiB(variant.proxy.pid),
      generator: 'autocannon',
      generatorCpuMicrosPerRequest: requests ? Math.round(((own.user + own.system) / requests) * 10) / 10 : undefined,
    },
    p999Ms: at(latencies, 0.999),
    maxMs: round2(latencies[latencies.length - 1] ?? 0),
    window: {
      answers: windowLatencies.length,
      p50Ms: windowLatencies.length ? at(windowLatencies, 0.5) : undefined,
      p99Ms: windowLatencies.length ? at(windowLatencies, 0.99) : undefined,
    },
    seconds,
    answers,
    upstream: { all, conditional, notModified },
  };
}

/** The variant's figures: medians of the rounds' latencies and rates, sums of their counts, per minute. */
function summarise(variant: Variant) {
  const pick = (f: (m: Measured) => number | undefined): number => median(variant.runs.map(f).filter((v): v is number => v !== undefined)) || 0;
  const minutes = variant.runs.reduce((sum, m) => sum + m.seconds, 0) / 60;
  const answers = emptyAnswers();
  for (const m of variant.runs) for (const key of Object.keys(answers) as CacheStatus[]) answers[key] += m.answers[key];
  const sum = (f: (m: Measured) => number): number => variant.runs.reduce((total, m) => total + f(m), 0);
  const conditional = sum((m) => m.upstream.conditional);
  const perMinute = (n: number): number => Math.round(n / minutes);
  const run: Run = {
    requestsPerSecond: pick((m) => m.run.requestsPerSecond),
    p50Ms: pick((m) => m.run.p50Ms),
    p99Ms: pick((m) => m.run.p99Ms),
    errors: sum((m) => m.run.errors),
    non2xx: sum((m) => m.run.non2xx),
    requests: sum((m) => m.run.requests),
    cpuMicrosPerRequest: pick((m) => m.run.cpuMicrosPerRequest),
    rssMiB: pick((m) => m.run.rssMiB),
    generator: 'autocannon',
    generatorCpuMicrosPerRequest: pick((m) => m.run.generatorCpuMicrosPerRequest),
  };
  return {
    run,
    p999Ms: pick((m) => m.p999Ms),
    maxMs: pick((m) => m.maxMs),
    window: {
      answers: sum((m) => m.window.answers),
      perRevalidation: conditional ? round2(sum((m) => m.window.answers) / conditional) : 0,
      p50Ms: pick((m) => m.window.p50Ms),
      p99Ms: pick((m) => m.window.p99Ms),
    },
    answers,
    revalidatedPerMinute: perMinute(answers.REVALIDATED),
    /** Clients that waited for one safety revalidation: at the default tipSafetyMs (60 s), the "per entry per minute". */
    revalidatedPerRevalidation: conditional ? round2(answers.REVALIDATED / conditional) : 0,
    upstreamPerMinute: perMinute(sum((m) => m.upstream.all)),
    conditionalPerMinute: perMinute(conditional),
    notModifiedPerMinute: perMinute(sum((m) => m.upstream.notModified)),
    /** Each round's own figures, to see the spread behind the medians. */
    rounds: variant.runs.map((m) => ({
      requestsPerSecond: m.run.requestsPerSecond,
      p50Ms: m.run.p50Ms,
      p99Ms: m.run.p99Ms,
      p999Ms: m.p999Ms,
      cpuMicrosPerRequest: m.run.cpuMicrosPerRequest,
      revalidated: m.answers.REVALIDATED,
      conditional: m.upstream.conditional,
      window: m.window,
    })),
  };
}

/** A commit's build (under /tmp, built once) and its short name. */
function built(commitish: string): { root: string; commit: string } {
  const commit = execFileSync('git', ['-C', ROOT, 'rev-parse', commitish], { encoding: 'utf8' }).trim();
  return { root: baselineBuild(commit), commit: commit.slice(0, 7) };
}

type Summary = ReturnType<typeof summarise>;

const note = (f: Summary): string =>
  `p99.9 ${f.p999Ms} ms, max ${f.maxMs} ms; answers HIT ${f.answers.HIT.toLocaleString('en-US')}, REVALIDATED ${f.answers.REVALIDATED.toLocaleString('en-US')}` +
  `, MISS ${f.answers.MISS}, STALE ${f.answers.STALE}, other ${f.answers.other}; ` +
  `REVALIDATED ${f.revalidatedPerMinute.toLocaleString('en-US')} per minute (${f.revalidatedPerRevalidation} per revalidation); ` +
  `answered during a revalidation: ${f.window.perRevalidation} per revalidation, p50 ${f.window.p50Ms} ms, p99 ${f.window.p99Ms} ms; ` +
  `upstream ${f.upstreamPerMinute} requests/min (${f.conditionalPerMinute} If-None-Match, ${f.notModifiedPerMinute} answered 304)`;

export async function tipRevalidate({ options }: Context): Promise<Section> {
  const seconds = Number(process.env.TIP_REVALIDATE_SECONDS ?? (options.quick ? 3 : 6));
  // before: the parent of the change; change: the change alone (later hit-path work left out); after: this checkout.
  const before = built(process.env.TIP_REVALIDATE_BASELINE ?? `${CHANGE}^`);
  const change = built(CHANGE);
  const plan: Array<{ name: VariantName; root: string; label: string }> = [
    { name: 'before', root: before.root, label: `before: ${before.commit} (the commit before the change: the safety revalidation blocks)` },
    { name: 'change', root: change.root, label: `${change.commit} (the change alone: revalidated behind the answer)` },
    { name: 'after', root: ROOT, label: 'after: this build (revalidated behind the answer, with the hit-path work since)' },
  ];
  const config = { cache: { ttl: { tipSafetyMs: TIP_SAFETY_MS } } };
  const variants: Variant[] = [];
  try {
    for (const { name, root, label } of plan) {
      const upstream = await startFakeUpstream();
      // Only the route asked is slow: the tip poll and the rest answer at once.
      upstream.setDelay(UPSTREAM_MS, /\/extended\/v2\/blocks\/latest/);
      const proxy = await startProxy({ upstreamUrl: upstream.url, config, root });
      variants.push({ name, label, upstream, proxy, runs: [] });
    }
    const heights = variants.map((v) => v.upstream.tip().height);
    for (let round = 1; round <= options.rounds; round++) {
      for (const variant of variants) {
        process.stderr.write(`bench: tip revalidate: ${variant.name} (round ${round}/${options.rounds})\n`);
        variant.runs.push(await measure(variant, options.connections, seconds, warmUpSeconds(options)));
      }
    }
    // The premise: no block during the run, so the entry stayed validated at the believed tip.
    if (variants.some((v, i) => v.upstream.tip().height !== heights[i])) throw new Error('tip-revalidate: a fake upstream moved its tip');
  } finally {
    for (const variant of variants) {
      await stopChild(variant.proxy.child);
      await variant.upstream.close();
    }
  }
  const f = Object.fromEntries(variants.map((v) => [v.name, summarise(v)])) as Record<VariantName, Summary>;
  const s = `tip revalidate: one tip entry, tipSafetyMs ${TIP_SAFETY_MS}, upstream +${UPSTREAM_MS} ms on it, ${seconds} s runs`;
  const rows = variants.map((v) => ({
    scenario: s,
    name: v.label,
    run: f[v.name].run,
    baseline: v.name === 'before' ? undefined : f.before.run,
    note: note(f[v.name]),
  }));
  const arrow = (pick: (x: Summary) => number | undefined): string => `${pick(f.before)} → ${pick(f.change)} → ${pick(f.after)}`;
  return {
    id: 'tipRevalidate',
    rows,
    findings: [
      `Safety revalidation (issue 18), before → the change alone → this build, ${options.connections} connections on one tip entry expiring every ${TIP_SAFETY_MS} ms, ` +
        `its revalidation answered 304 after ${UPSTREAM_MS} ms: REVALIDATED answers ${arrow((x) => x.revalidatedPerMinute)} per minute ` +
        `(${arrow((x) => x.revalidatedPerRevalidation)} clients waiting per revalidation: at the default tipSafetyMs of 60 s, that many per entry per minute); ` +
        `the answers given while a revalidation ran (REVALIDATED, or HIT with an Age of tipSafetyMs or more): p50 ${arrow((x) => x.window.p50Ms)} ms, ` +
        `p99 ${arrow((x) => x.window.p99Ms)} ms (all answers' p50 ${arrow((x) => x.run.p50Ms)} ms); all answers' p99 ${arrow((x) => x.run.p99Ms)} ms, p99.9 ${arrow((x) => x.p999Ms)} ms, ` +
        `max ${arrow((x) => x.maxMs)} ms; upstream If-None-Match ${arrow((x) => x.conditionalPerMinute)} per minute (one per tipSafetyMs plus a round trip: ` +
        `${Math.round(60_000 / (TIP_SAFETY_MS + UPSTREAM_MS))}).`,
    ],
    data: {
      ...f,
      tipSafetyMs: TIP_SAFETY_MS,
      upstreamMs: UPSTREAM_MS,
      seconds,
      rounds: options.rounds,
      commits: { before: before.commit, change: change.commit },
    },
  };
}
