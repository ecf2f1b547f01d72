/**
 * Scenario `wallet-mix` (issue 15): the traffic wallets, explorers and dApps actually send,
 * against the surface upstream (testkit/surface-upstream: the whole read surface, the
 * upstream's ETag kinds, `/v2` node RPC without ETags, a block every 4 s, a moving mempool).
 * About 200 wallets on Leather's cadence (read-surface.md §2.2, intervals ÷ 10), explorer page
 * loads, dApp read-only calls, and send flows (nonce, fee estimate, broadcast of a real signed
 * transaction, nonce again, pending-tx polling).
 *
 * Four variants side by side, each on a fresh upstream with the same seed: direct to the
 * upstream, the proxy at the baseline commit (main before issue 15's caching: ab10517, built
 * under /tmp, or BENCH_BASELINE_DIR), this checkout's proxy with principal activity off
 * (`revalidation`: route families and the upstream's ETags alone), and this checkout's proxy. Reported per variant: client
 * requests; the share served without a full upstream fetch (X-Cache HIT/STALE; 304
 * revalidations apart); upstream requests per 1,000 client requests, in total (tip polls and
 * any watcher included: everything the upstream received) and per route family
 * (testkit/surface-upstream/families.ts); answers the upstream never gave within two tip polls
 * (the oracle); stale nonces after the sender's own broadcast; broadcasts rejected for a bad nonce.
 *
 * Settings (env): WALLET_MIX_SECONDS (60; --quick 20), WALLET_MIX_WALLETS (200; --quick 50),
 * WALLET_MIX_DEPRECATED_GONE=1 (the upstream answers deprecated routes 410, as with
 * ENABLE_DEPRECATED_ENDPOINTS=false), WALLET_MIX_VARIANTS (direct,baseline,revalidation,proxy; also url-cache: a server caching by URL for 30 s, to see the oracle flag it), WALLET_MIX_WINDOW_MS (2000: how old an answer may be), BENCH_BASELINE_COMMIT (ab10517), BENCH_BASELINE_DIR (or
 * --baseline-dir=DIR: a checkout with dist/ built).
 * The per-family tables go to bench/results/wallet-mix.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stopChild } from '../../testkit/index.js';
import {
  ClientMix,
  familyOf,
  judgeExchanges,
  servedFigures,
  startSurfaceUpstream,
  startUrlCache,
  type Exchange,
  type OracleVerdict,
  type SendStats,
  type CountedRequest,
} from '../../testkit/surface-upstream/index.js';
import { baselineBuild } from '../lib/baseline-build.js';
import { ROOT, startProxy } from '../lib/proc.js';
import type { Row, Section } from '../lib/report.js';
import type { Context } from './context.js';

const BLOCK_EVERY_MS = 4_000;
const BACKGROUND_TX_EVERY_MS = 500;
/**
 * How old an answer may be: two of the proxy's default tip polls (chainTip.pollIntervalMs 1 s).
 * WALLET_MIX_WINDOW_MS overrides it (a loaded machine delays polls).
 */
const WINDOW_MS = Number(process.env.WALLET_MIX_WINDOW_MS ?? 2_000);
const TIME_SCALE = 10;

type Variant = 'direct' | 'baseline' | 'revalidation' | 'proxy' | 'url-cache';

interface VariantResult {
  variant: Variant;
  label: string;
  clients: number;
  failed: number;
  fromCache: number;
  revalidated: number;
  upstreamTotal: number;
  upstreamNotModified: number;
  tipPolls: number;
  verdict: Pick<OracleVerdict, 'checked' | 'unverifiable' | 'byFamily'> & { staleBodies: number; olderBodies: number; wrongStatus: number; examples: string[] };
  sends: SendStats;
  p50Ms: number;
  p99Ms: number;
  families: Array<{ family: string; cls?: string; clients: number; fromCachePct: number; revalidatedPct: number; upstreamPer1000: number; mismatches: number }>;
  /** Some upstream requests no family matched (to extend families.ts). */
  otherSamples: string[];
  /** Served from cache, by kind of client. */
  actors: Record<string, { clients: number; fromCache: number; revalidated: number }>;
}

const pct = (n: number, of: number): number => Math.round((n / Math.max(1, of)) * 1000) / 10;
const per1000 = (n: number, of: number): number => Math.round((n / Math.max(1, of)) * 10_000) / 10;

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

async function runVariant(variant: Variant, label: string, root: string | undefined, seconds: number, wallets: number): Promise<VariantResult> {
  const upstream = await startSurfaceUpstream({
    seed: 'wallet-mix',
    wallets,
    bots: 30,
    blockEveryMs: BLOCK_EVERY_MS,
    backgroundTxEveryMs: BACKGROUND_TX_EVERY_MS,
    historyMs: (seconds + 60) * 1000,
    deprecatedGone: process.env.WALLET_MIX_DEPRECATED_GONE === '1',
  });
  // `revalidation`: this checkout with principal activity off (no broadcast marks, block learning
  // or mempool watcher): the route families and the upstream's ETags alone, to measure what
  // activity adds against revalidation alone (issue 15, "Beyond revalidation").
  const config = variant === 'revalidation' ? { activity: { enabled: false } } : undefined;
  const proxy =
    variant === 'direct' || variant === 'url-cache'
      ? undefined
      : await startProxy({ upstreamUrl: upstream.url, logLevel: 'warn', ...(root ? { root } : {}), ...(config ? { config } : {}) });
  const urlCache = variant === 'url-cache' ? await startUrlCache(upstream.url) : undefined;
  try {
    const mix = new ClientMix({
      baseUrl: proxy?.url ?? urlCache?.url ?? upstream.url,
      cast: upstream.cast,
      wallets,
      explorers: Math.max(2, Math.round(wallets / 20)),
      dapps: Math.max(3, Math.round(wallets / 10)),
      timeScale: TIME_SCALE,
      sendsPerSecond: wallets / 130,
      seed: 15,
      concurrency: 128,
    });
    upstream.resetCounts();
    process.stderr.write(`bench: wallet-mix ${label}: ${wallets} wallets for ${seconds} s\n`);
    await mix.runFor(seconds * 1000);
    const received: CountedRequest[] = [...upstream.requests];
    if (proxy) await stopChild(proxy.child);
    return summarise(variant, label, mix.exchanges, mix.sends, received, judgeExchanges(upstream, mix.exchanges, { windowMs: WINDOW_MS }));
  } finally {
    if (proxy) await stopChild(proxy.child);
    await urlCache?.close();
    await upstream.close();
  }
}

function summarise(
  variant: Variant,
  label: string,
  exchanges: Exchange[],
  sends: SendStats,
  received: CountedRequest[],
  verdict: OracleVerdict,
): VariantResult {
  const served = servedFigures(exchanges);
  const clients = exchanges.length;
  const upstreamByFamily = new Map<string, number>();
  const classes = new Map<string, string>();
  for (const r of received) {
    upstreamByFamily.set(r.family, (upstreamByFamily.get(r.family) ?? 0) + 1);
    classes.set(r.family, r.cls);
  }
  for (const e of exchanges) if (!classes.has(e.family)) classes.set(e.family, familyOf(e.method, e.url).cls);
  const families = [...new Set([...Object.keys(served.byFamily), ...upstreamByFamily.keys()])].sort().map((family) => {
    const f = served.byFamily[family] ?? { clients: 0, fromCache: 0, revalidated: 0 };
    return {
      family,
      cls: classes.get(family),
      clients: f.clients,
      fromCachePct: pct(f.fromCache, f.clients),
      revalidatedPct: pct(f.revalidated, f.clients),
      upstreamPer1000: per1000(upstreamByFamily.get(family) ?? 0, clients),
      mismatches: verdict.byFamily[family] ?? 0,
    };
  });
  const actors: VariantResult['actors'] = {};
  for (const actor of ['wallet', 'explorer', 'dapp', 'send']) {
    const own = servedFigures(exchanges.filter((e) => e.actor === actor));
    actors[actor] = { clients: own.clients, fromCache: own.fromCache, revalidated: own.revalidated };
  }
  const examples = verdict.mismatches
    .slice(0, 5)
    .map((m) => `${m.kind}${m.older ? '/older' : ''} ${m.exchange.method} ${m.exchange.url.slice(0, 90)} → ${m.exchange.status}`);
  return {
    variant,
    label,
    clients,
    failed: exchanges.filter((e) => e.status === 0 || e.status >= 500).length,
    fromCache: served.fromCache,
    revalidated: served.revalidated,
    upstreamTotal: received.length,
    upstreamNotModified: received.filter((r) => r.notModified).length,
    tipPolls: received.filter((r) => r.family === 'status').length,
    verdict: {
      checked: verdict.checked,
      unverifiable: verdict.unverifiable,
      byFamily: verdict.byFamily,
      staleBodies: verdict.mismatches.filter((m) => m.kind === 'body').length,
      olderBodies: verdict.mismatches.filter((m) => m.older).length,
      wrongStatus: verdict.mismatches.filter((m) => m.kind === 'status').length,
      examples,
    },
    sends,
    p50Ms: quantile(
      exchanges.map((e) => e.tRecv - e.tSend),
      0.5,
    ),
    p99Ms: quantile(
      exchanges.map((e) => e.tRecv - e.tSend),
      0.99,
    ),
    families,
    actors,
    otherSamples: [...new Set(received.filter((r) => r.family === 'other').map((r) => `${r.method} ${r.url.split('?')[0]}`))].slice(0, 5),
  };
}

function headline(r: VariantResult): string {
  return (
    `${r.label}: ${r.clients.toLocaleString('en-US')} client requests (${r.failed} failed); served without a full upstream fetch ${pct(r.fromCache, r.clients)}% ` +
    `(${Object.entries(r.actors)
      .map(([a, f]) => `${a}s ${pct(f.fromCache, f.clients)}%`)
      .join(', ')}), revalidated by 304 ${pct(r.revalidated, r.clients)}%; upstream ${per1000(r.upstreamTotal, r.clients)} req per 1,000 client requests ` +
    `(${per1000(r.upstreamNotModified, r.clients)} answered 304, ${per1000(r.tipPolls, r.clients)} tip polls); oracle: ${r.verdict.checked} judged, ${r.verdict.staleBodies} stale or different bodies ` +
    `(${r.verdict.olderBodies} older upstream answers), ${r.verdict.wrongStatus} wrong statuses; sends ${r.sends.accepted}/${r.sends.broadcasts} accepted, ${r.sends.staleNonces} stale nonces after own broadcast, ${r.sends.badNonce} rejected for a bad nonce`
  );
}

function familyTable(results: VariantResult[]): string {
  const families = [...new Set(results.flatMap((r) => r.families.map((f) => f.family)))].sort();
  const classOf = new Map<string, string>();
  for (const r of results) for (const f of r.families) if (f.cls) classOf.set(f.family, f.cls);
  const head = `| family | class | ${results.map((r) => `${r.variant} clients | ${r.variant} cache % | ${r.variant} 304 % | ${r.variant} upstream/1k | ${r.variant} mismatches`).join(' | ')} |`;
  const rule = `|---|---|${results.map(() => '---|---|---|---|---').join('|')}|`;
  const rows = families.map((family) => {
    const cells = results.map((r) => {
      const f = r.families.find((x) => x.family === family);
      return f ? `${f.clients} | ${f.fromCachePct} | ${f.revalidatedPct} | ${f.upstreamPer1000} | ${f.mismatches}` : ' | | | | ';
    });
    return `| ${family} | ${classOf.get(family) ?? ''} | ${cells.join(' | ')} |`;
  });
  const totals = `| **total** | | ${results.map((r) => `${r.clients} | ${pct(r.fromCache, r.clients)} | ${pct(r.revalidated, r.clients)} | ${per1000(r.upstreamTotal, r.clients)} | ${r.verdict.staleBodies + r.verdict.wrongStatus}`).join(' | ')} |`;
  return [head, rule, ...rows, totals].join('\n');
}

export async function walletMix({ options }: Context): Promise<Section> {
  const seconds = Number(process.env.WALLET_MIX_SECONDS ?? (options.quick ? 20 : 60));
  const wallets = Number(process.env.WALLET_MIX_WALLETS ?? (options.quick ? 50 : 200));
  const variants = (process.env.WALLET_MIX_VARIANTS ?? 'direct,baseline,revalidation,proxy').split(',') as Variant[];
  const baselineCommit = process.env.BENCH_BASELINE_COMMIT ?? 'ab10517';
  const results: VariantResult[] = [];
  for (const variant of variants) {
    if (variant === 'baseline') {
      const root =
        process.argv.find((a) => a.startsWith('--baseline-dir='))?.slice('--baseline-dir='.length) ??
        process.env.BENCH_BASELINE_DIR ??
        baselineBuild(baselineCommit);
      results.push(await runVariant(variant, `proxy at ${baselineCommit}${baselineCommit === 'ab10517' ? ' (before issue 15)' : ''}`, root, seconds, wallets));
    } else if (variant === 'proxy') results.push(await runVariant(variant, 'proxy (this checkout)', undefined, seconds, wallets));
    else if (variant === 'revalidation')
      results.push(await runVariant(variant, 'proxy (this checkout), principal activity off: revalidation alone', undefined, seconds, wallets));
    else if (variant === 'url-cache') results.push(await runVariant(variant, 'wrong on purpose: caching by URL for 30 s', undefined, seconds, wallets));
    else results.push(await runVariant(variant, 'direct to the upstream', undefined, seconds, wallets));
  }
  const table = familyTable(results);
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'wallet-mix.md'),
    `# wallet-mix: ${wallets} wallets, ${seconds} s, a block every ${BLOCK_EVERY_MS / 1000} s\n\n${results.map((r) => `- ${headline(r)}`).join('\n')}\n\n${table}\n`,
  );
  const rows: Row[] = results.map((r) => ({
    scenario: '9 wallet mix',
    name: r.label,
    run: { requestsPerSecond: Math.round(r.clients / seconds), p50Ms: r.p50Ms, p99Ms: r.p99Ms, errors: r.failed, non2xx: 0, requests: r.clients },
    note: `without full fetch ${pct(r.fromCache, r.clients)}% (+${pct(r.revalidated, r.clients)}% 304), upstream ${per1000(r.upstreamTotal, r.clients)}/1,000, stale ${r.verdict.staleBodies + r.verdict.wrongStatus}, stale nonces ${r.sends.staleNonces}, bad-nonce rejections ${r.sends.badNonce}`,
  }));
  return {
    id: 'walletMix',
    rows,
    findings: [
      ...results.map(headline),
      'Per route family (clients, % from cache, % 304, upstream requests per 1,000 client requests, oracle mismatches): bench/results/wallet-mix.md.',
    ],
    data: { seconds, wallets, blockEveryMs: BLOCK_EVERY_MS, timeScale: TIME_SCALE, windowMs: WINDOW_MS, results },
  };
}
