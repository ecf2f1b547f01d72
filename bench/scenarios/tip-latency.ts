/**
 * Scenario tipLatency (issue 16): how soon after the upstream announces a block the proxy serves
 * a tip-class answer that reflects it, with the push feed (the default) and with polling alone
 * (live.push.enabled false), side by side in the same run. Each variant is a proxy process with
 * the default settings against a fake upstream of its own that pushes (its JSON-RPC channel), so
 * each fake counts only its proxy's requests. Blocks come at random intervals (1.5 to 2.5 s, a
 * seeded draw: never in step with the 1 s poll); at each block both fakes advance together (the
 * one first alternates block by block) and a client per proxy asks `GET /extended/v2/blocks/latest`
 * back to back until the answer names the new height. Latency: from the fake's announcement (its
 * notification is sent inside advanceTip) to that answer's arrival. Upstream requests per block:
 * everything each fake received during the measured blocks (tip polls and cross-checks, the
 * tracker's checks, the client's refetch of the block), divided by the blocks.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { startFakeUpstream, stopChild, type FakeUpstream } from '../../testkit/index.js';
import { seededRandom } from '../../testkit/seeded-random.js';
import { scrape, sumSeries } from '../lib/metrics.js';
import { startProxy, type Server } from '../lib/proc.js';
import type { Row, Section } from '../lib/report.js';
import type { Context } from './context.js';

const LATEST = '/extended/v2/blocks/latest';
/** A block not reflected within this long counts as missed (the poll alone takes at most a second). */
const GIVE_UP_MS = 10_000;
const BLOCK_GAP_MS = { min: 1_500, max: 2_500 };

interface Variant {
  id: 'push' | 'poll';
  label: string;
  upstream: FakeUpstream;
  proxy: Server & { adminUrl: string };
  latencies: number[];
  missed: number;
}

const quantile = (sorted: number[], q: number): number | undefined =>
  sorted.length === 0 ? undefined : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number);
const ms = (value: number | undefined): string => (value === undefined ? 'n/a' : `${Math.round(value)} ms`);

async function latestHeight(proxyUrl: string): Promise<number> {
  const response = await fetch(proxyUrl + LATEST);
  const body = (await response.json()) as { height?: unknown };
  return typeof body.height === 'number' ? body.height : -1;
}

/** Asks until the answer names `height`: the time from `announced` to that answer, or undefined. */
async function reflected(proxyUrl: string, height: number, announced: number): Promise<number | undefined> {
  while (performance.now() - announced < GIVE_UP_MS) {
    if ((await latestHeight(proxyUrl)) >= height) return performance.now() - announced;
    await sleep(1);
  }
  return undefined;
}

async function believed(variant: Variant): Promise<boolean> {
  return sumSeries(await scrape(variant.proxy.adminUrl), 'stacks_proxy_push_feed_believed') === 1;
}

export async function tipLatency({ options }: Context): Promise<Section> {
  const blocks = Number(process.env.TIP_LATENCY_BLOCKS ?? (options.quick ? 12 : 15 * options.rounds));
  const random = seededRandom(16);
  const upstreams = await Promise.all([startFakeUpstream({ rpcChannel: true }), startFakeUpstream({ rpcChannel: true })]);
  const children: Server[] = [];
  try {
    const [pushUpstream, pollUpstream] = upstreams as [FakeUpstream, FakeUpstream];
    const [pushProxy, pollProxy] = await Promise.all([
      startProxy({ upstreamUrl: pushUpstream.url, logLevel: 'warn', config: { live: { push: { enabled: true } } } }),
      startProxy({ upstreamUrl: pollUpstream.url, logLevel: 'warn', config: { live: { push: { enabled: false } } } }),
    ]);
    children.push(pushProxy, pollProxy);
    const variants: Variant[] = [
      { id: 'push', label: 'push feed (default: cross-check poll every 5 s)', upstream: pushUpstream, proxy: pushProxy, latencies: [], missed: 0 },
      { id: 'poll', label: 'polling alone (live.push.enabled false, poll every 1 s)', upstream: pollUpstream, proxy: pollProxy, latencies: [], missed: 0 },
    ];
    const [push] = variants as [Variant, Variant];
    const deadline = performance.now() + 15_000;
    while (!(await believed(push))) {
      if (performance.now() > deadline) throw new Error('tipLatency: the push feed was not believed within 15 s');
      await sleep(50);
    }
    for (const v of variants) await latestHeight(v.proxy.url);
    for (const v of variants) v.upstream.resetCounts();

    for (let block = 0; block < blocks; block++) {
      await sleep(BLOCK_GAP_MS.min + random() * (BLOCK_GAP_MS.max - BLOCK_GAP_MS.min));
      const order = block % 2 === 0 ? variants : [...variants].reverse();
      const waits = order.map((v) => {
        v.upstream.advanceTip();
        return reflected(v.proxy.url, v.upstream.tip().height, performance.now());
      });
      const results = await Promise.all(waits);
      order.forEach((v, i) => {
        const latency = results[i];
        if (latency === undefined) v.missed += 1;
        else v.latencies.push(latency);
      });
    }

    const figures = variants.map((v) => {
      const sorted = [...v.latencies].sort((a, b) => a - b);
      return {
        id: v.id,
        label: v.label,
        blocks,
        missed: v.missed,
        p50Ms: quantile(sorted, 0.5),
        p95Ms: quantile(sorted, 0.95),
        maxMs: sorted.at(-1),
        upstreamPerBlock: Math.round((v.upstream.count() / blocks) * 100) / 100,
        tipPollsPerBlock: Math.round((v.upstream.count('/extended') / blocks) * 100) / 100,
        wsConnections: v.upstream.rpc.connections,
      };
    });
    const rows: Row[] = figures.map((f) => ({
      scenario: '10 tip latency',
      name: f.label,
      note: `block announced → tip-class answer: p50 ${ms(f.p50Ms)}, p95 ${ms(f.p95Ms)}, max ${ms(f.maxMs)} over ${f.blocks} blocks (${f.missed} missed); upstream ${f.upstreamPerBlock} requests per block (${f.tipPollsPerBlock} tip polls), ${f.wsConnections} WebSocket`,
    }));
    const [p, q] = figures as [(typeof figures)[number], (typeof figures)[number]];
    return {
      id: 'tipLatency',
      rows,
      findings: [
        `Tip latency (a block every ${BLOCK_GAP_MS.min / 1000}-${BLOCK_GAP_MS.max / 1000} s, ${blocks} blocks): push ${ms(p.p50Ms)} p50 / ${ms(p.p95Ms)} p95 (target p50 <= 150 ms), polling alone ${ms(q.p50Ms)} p50 / ${ms(q.p95Ms)} p95; ` +
          `upstream requests per block: push ${p.upstreamPerBlock} (${p.tipPollsPerBlock} tip polls) against ${q.upstreamPerBlock} (${q.tipPollsPerBlock}) polling alone.`,
      ],
      data: {
        blocks,
        blockGapMs: BLOCK_GAP_MS,
        figures,
        latencies: Object.fromEntries(variants.map((v) => [v.id, v.latencies.map((l) => Math.round(l * 10) / 10)])),
      },
    };
  } finally {
    for (const child of children) await stopChild(child.child);
    await Promise.all(upstreams.map((u) => u.close()));
  }
}
