/**
 * The warm-up of a new block (issue 16, live.warm), on against off, side by side: two proxies
 * (in this process: what is measured is upstream round trips saved, not CPU), each in front of its own fake upstream (so each upstream counts one proxy's
 * requests) answering after UPSTREAM_MS, both fakes advancing one block at a time in lockstep.
 * Under each tip the clients ask a wallet's and an explorer's tip-class reads a few times (the
 * hot URLs); after each block, as soon as a proxy's tip metric shows the new block (its tip
 * poll runs every POLL_MS), the clients ask them once more, concurrently, plus the new block by
 * height: the first requests after a block. Blocks alternate which proxy is asked first. Figures:
 * the first requests' latency (p50, p95 over every block and URL), how many of them were hits,
 * and the upstream requests per block (tip polls left out: both proxies poll alike).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { startProxy, type ProxyServer } from '../../src/composition-root.js';
import { createLogger } from '../../src/logger.js';
import { RECORDED, startFakeUpstream, testConfig, waitFor, type FakeUpstream } from '../../testkit/index.js';
import type { Section } from '../lib/report.js';
import type { Context } from './context.js';

const UPSTREAM_MS = 20;
const POLL_MS = 100;
/** Under each tip, each hot URL is asked this many times. */
const ASKS_PER_TIP = 3;
/** After the first requests, time for warm-ups and learners to end before the next block. */
const SETTLE_MS = 300;
/**
 * When the first clients ask, after the proxy believes the block: at once (the warm-up's reads
 * are in flight: clients join them), and LATER_MS later (a client polling on its own clock).
 * Blocks alternate between the two.
 */
const LATER_MS = 50;
const DELAYS = [0, LATER_MS] as const;

const P = RECORDED.principal;
/** What wallets and explorers ask under every tip (tip-class answers the fake serves). */
const HOT = [
  `/extended/v1/address/${P}/transactions`,
  `/extended/v1/address/${P}/transactions?limit=5`,
  '/extended/v2/blocks/latest',
  `/extended/v1/contract/${RECORDED.contractId}/events`,
];

interface Variant {
  name: 'on' | 'off';
  upstream: FakeUpstream;
  proxy: ProxyServer;
  /** Per client delay: the first requests' latencies and how many were hits. */
  firsts: Map<number, { ms: number[]; hits: number }>;
  requestsPerBlock: number[];
}

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 0 : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number);
};
const median = (values: number[]): number => percentile(values, 50);
const round2 = (n: number): number => Math.round(n * 100) / 100;

async function timed(url: string): Promise<{ ms: number; cache: string | null; status: number }> {
  const started = performance.now();
  const response = await fetch(url);
  await response.arrayBuffer();
  return { ms: performance.now() - started, cache: response.headers.get('x-cache'), status: response.status };
}

async function oneBlock(variant: Variant, height: number, delayMs: number): Promise<void> {
  const { proxy } = variant;
  // The first requests after the block: once the proxy believes it, and `delayMs` more.
  await waitFor(async () => (proxy.tracker.tip?.height ?? -1) >= height, { timeoutMs: 10_000, intervalMs: 2, what: `tip ${height} (${variant.name})` });
  if (delayMs > 0) await sleep(delayMs);
  const firsts = await Promise.all([...HOT, `/extended/v2/blocks/${height}`].map((path) => timed(proxy.url + path)));
  const figures = variant.firsts.get(delayMs) ?? { ms: [], hits: 0 };
  variant.firsts.set(delayMs, figures);
  for (const first of firsts) {
    if (first.status !== 200) throw new Error(`block-warmup: a first request answered ${first.status}`);
    figures.ms.push(first.ms);
    if (first.cache === 'HIT') figures.hits += 1;
  }
  // The rest of the tip's clients: the URLs are hot for the next block.
  for (let i = 1; i < ASKS_PER_TIP; i++) await Promise.all(HOT.map((path) => timed(proxy.url + path)));
}

export async function blockWarmup({ options }: Context): Promise<Section> {
  const blocks = options.quick ? 10 : 30;
  const config = (enabled: boolean) => ({ chainTip: { pollIntervalMs: POLL_MS }, live: { warm: { enabled } } });
  const upstreams = await Promise.all([startFakeUpstream(), startFakeUpstream()]);
  const variants: Variant[] = [];
  try {
    for (const [index, name] of (['on', 'off'] as const).entries()) {
      const upstream = upstreams[index] as FakeUpstream;
      upstream.setDelay(UPSTREAM_MS);
      const settings = testConfig({ upstreamUrls: [upstream.url], overrides: config(name === 'on') });
      const proxy = await startProxy(settings, { logger: createLogger('warn'), defaultMetrics: false });
      variants.push({ name, upstream, proxy, firsts: new Map(), requestsPerBlock: [] });
    }
    // Warm-up of the bench itself: every URL asked once under the first tip.
    for (const variant of variants) for (let i = 0; i < ASKS_PER_TIP; i++) await Promise.all(HOT.map((path) => timed(variant.proxy.url + path)));
    for (let block = 0; block < blocks; block++) {
      for (const variant of variants) variant.upstream.resetCounts();
      for (const upstream of upstreams) upstream.advanceTip();
      const height = (upstreams[0] as FakeUpstream).tip().height;
      // Alternate which proxy's clients ask first: the machine's noise falls on both alike.
      const order = block % 2 === 0 ? variants : [...variants].reverse();
      const delayMs = DELAYS[block % DELAYS.length] as number;
      await Promise.all(order.map((variant) => oneBlock(variant, height, delayMs)));
      await sleep(SETTLE_MS);
      for (const variant of variants) variant.requestsPerBlock.push(variant.upstream.count((r) => r.path !== '/extended'));
    }
  } finally {
    await Promise.all(variants.map((variant) => variant.proxy.close()));
    await Promise.all(upstreams.map((upstream) => upstream.close()));
  }
  const [on, off] = variants as [Variant, Variant];
  const at = (v: Variant, delayMs: number) => {
    const f = v.firsts.get(delayMs) ?? { ms: [], hits: 0 };
    return { p50Ms: round2(median(f.ms)), p95Ms: round2(percentile(f.ms, 95)), hitShare: round2(f.hits / Math.max(1, f.ms.length)) };
  };
  const figures = (v: Variant) => ({
    atOnce: at(v, 0),
    later: at(v, LATER_MS),
    upstreamRequestsPerBlock: median(v.requestsPerBlock),
    maxUpstreamRequestsPerBlock: Math.max(...v.requestsPerBlock),
  });
  const figuresOn = figures(on);
  const figuresOff = figures(off);
  const s = `block warm-up, upstream +${UPSTREAM_MS} ms, ${blocks} blocks`;
  const pct = (share: number) => `${Math.round(share * 100)}%`;
  const row = (name: string, f: ReturnType<typeof figures>) => ({
    scenario: s,
    name,
    note:
      `first requests at once: p50 ${f.atOnce.p50Ms} ms, p95 ${f.atOnce.p95Ms} ms, ${pct(f.atOnce.hitShare)} hits; ` +
      `${LATER_MS} ms later: p50 ${f.later.p50Ms} ms, p95 ${f.later.p95Ms} ms, ${pct(f.later.hitShare)} hits; ` +
      `upstream requests per block ${f.upstreamRequestsPerBlock} (median; max ${f.maxUpstreamRequestsPerBlock}; tip polls left out)`,
  });
  return {
    id: 'blockWarmup',
    rows: [row('live.warm.enabled: false (before issue 16)', figuresOff), row('live.warm.enabled: true (maxRequestsPerBlock 8)', figuresOn)],
    findings: [
      `First requests for ${HOT.length} hot tip-class URLs and the new block, ${LATER_MS} ms after the proxy believes the block: p50 ${figuresOff.later.p50Ms} → ${figuresOn.later.p50Ms} ms, p95 ${figuresOff.later.p95Ms} → ${figuresOn.later.p95Ms} ms with the warm-up, hits ${pct(figuresOff.later.hitShare)} → ${pct(figuresOn.later.hitShare)}.`,
      `Asked the moment the proxy believes the block, they join the warm-up's reads in flight: p50 ${figuresOff.atOnce.p50Ms} → ${figuresOn.atOnce.p50Ms} ms, p95 ${figuresOff.atOnce.p95Ms} → ${figuresOn.atOnce.p95Ms} ms.`,
      `Upstream requests per block (tip polls left out, medians): ${figuresOff.upstreamRequestsPerBlock} without, ${figuresOn.upstreamRequestsPerBlock} with the warm-up: it asks what the clients would have asked, once, before them.`,
    ],
    data: { on: figuresOn, off: figuresOff, blocks, upstreamMs: UPSTREAM_MS, pollMs: POLL_MS },
  };
}
