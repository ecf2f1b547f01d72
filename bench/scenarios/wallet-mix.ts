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
 * Two profiles (WALLET_MIX_PROFILE: `real`, the default; `easy`; `both` runs one after the other
 * and reports both): `easy` is issue 15's mix (a block every 4 s, 60 s, Leather's intervals ÷ 10,
 * ~1.5 sends/s, a fixed user per dApp); `real` is issue 28's, at least as hard as the traffic
 * measured on a real mix: a block every 2 s, 75 s, intervals ÷ 6, ~320 send flows in 75 s, dApp
 * bodies per random user (as `sender` and argument), half the dApp loads on one of 60 library
 * contracts, `/v2/accounts/{p}?proof=0` reads, explorer mempool fees (mix.ts PROFILES).
 *
 * The ceiling (testkit/surface-upstream/ceiling.ts): the share of client reads whose upstream
 * answer equals the upstream's answer to the previous identical request, what a proxy with
 * perfect knowledge of change could serve; the proxy's served share (HIT/STALE and 304) is
 * reported as a ratio of it. The upstream requests the proxy made on its own (per URL, those
 * beyond the client requests it did not serve from cache: tip polls, watcher pages, contract
 * lookups, block reads, WebSocket upgrades) are split
 * out by family, beside the proxy's own `stacks_proxy_own_upstream_requests_total{purpose}`
 * when its /metrics has it.
 *
 * Settings (env): WALLET_MIX_PROFILE (real), WALLET_MIX_BACKLOG (0: stuck pending transactions never mined, a mempool larger than the watcher's pages), WALLET_MIX_SECONDS (profile's: 75 real, 60 easy; --quick 20), WALLET_MIX_WALLETS (200; --quick 50),
 * WALLET_MIX_DEPRECATED_GONE=1 (the upstream answers deprecated routes 410, as with
 * ENABLE_DEPRECATED_ENDPOINTS=false), WALLET_MIX_VARIANTS (direct,baseline,revalidation,proxy; also url-cache: a server caching by URL for 30 s, to see the oracle flag it), WALLET_MIX_WINDOW_MS (2000: how old an answer may be), BENCH_BASELINE_COMMIT (ab10517), BENCH_BASELINE_DIR (or
 * --baseline-dir=DIR: a checkout with dist/ built).
 * The per-family tables go to bench/results/wallet-mix.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stopChild } from '../../testkit/index.js';
import {
  ceilingOf,
  ClientMix,
  familyOf,
  snapshotLookup,
  type Ceiling,
  type MixProfile,
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
import { ownRequests, ownRequestsByPurpose } from '../lib/own-requests.js';
import { ROOT, startProxy } from '../lib/proc.js';
import type { Row, Section } from '../lib/report.js';
import type { Context } from './context.js';

interface Profile {
  name: MixProfile;
  seconds: number;
  blockEveryMs: number;
  backgroundTxEveryMs: number;
  /** Leather's intervals are divided by this. */
  timeScale: number;
  sendsPerSecond: (wallets: number) => number;
  explorers: (wallets: number) => number;
  dapps: (wallets: number) => number;
  libraryContracts: number;
}

const PROFILES: Record<MixProfile, Profile> = {
  easy: {
    name: 'easy',
    seconds: 60,
    blockEveryMs: 4_000,
    backgroundTxEveryMs: 500,
    timeScale: 10,
    sendsPerSecond: (wallets) => wallets / 130,
    explorers: (wallets) => Math.max(2, Math.round(wallets / 20)),
    dapps: (wallets) => Math.max(3, Math.round(wallets / 10)),
    libraryContracts: 0,
  },
  // Issue 28's real mix: 320 send flows in 75 s for 200 wallets (the first starts at 2 s; a flow
  // whose wallet is still sending is skipped, hence the margin).
  real: {
    name: 'real',
    seconds: 75,
    blockEveryMs: 2_000,
    backgroundTxEveryMs: 400,
    timeScale: 6,
    sendsPerSecond: (wallets) => (320 / 66) * (wallets / 200),
    explorers: (wallets) => Math.max(2, Math.round(wallets / 20)),
    dapps: (wallets) => Math.max(3, Math.round(wallets / 12)),
    libraryContracts: 60,
  },
};
/**
 * How old an answer may be: two of the proxy's default tip polls (chainTip.pollIntervalMs 1 s).
 * WALLET_MIX_WINDOW_MS overrides it (a loaded machine delays polls).
 */
const WINDOW_MS = Number(process.env.WALLET_MIX_WINDOW_MS ?? 2_000);
/**
 * WALLET_MIX_BACKLOG (0): pending transactions that are never mined (genesis.ts stuckBacklog),
 * so the mempool is larger than the proxy's watcher reads (4 pages of 50), as on mainnet.
 */
/** `/extended/v2/mempool/fees` may lag the mempool by cache.ttl.mempoolFeesMaxAgeMs (default 5 s, issue 28): the oracle allows it. */
const MEMPOOL_FEES_LAG_MS = Number(process.env.WALLET_MIX_FEES_LAG_MS ?? 5_000);
const BACKLOG = Number(process.env.WALLET_MIX_BACKLOG ?? 0);

type Variant = 'direct' | 'baseline' | 'revalidation' | 'proxy' | 'url-cache';

interface Counted {
  clients: number;
  fromCache: number;
  revalidated: number;
  /** Reads the ceiling judged, and how many of them were servable. */
  ceilingReads: number;
  ceilingServable: number;
  /** Client requests that caused an upstream request (X-Cache neither HIT nor STALE). */
  upstreamCaused: number;
}

interface VariantResult {
  profile: MixProfile;
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
  families: Array<{
    family: string;
    cls?: string;
    clients: number;
    fromCachePct: number;
    revalidatedPct: number;
    ceilingPct: number;
    upstreamPer1000: number;
    /** Of those upstream requests, the ones on URLs no client asked (the proxy's own). */
    ownPer1000: number;
    mismatches: number;
  }>;
  ceiling: Counted;
  /** Upstream requests a client request explains, and the others (the proxy's own; ownRequests), by family. */
  upstreamClientCaused: number;
  upstreamOwn: number;
  /** Of the own requests, those on URLs clients ask too (behind answers from cache). */
  ownOnClientUrls: number;
  ownByFamily: Record<string, number>;
  /** stacks_proxy_own_upstream_requests_total by purpose, from the proxy's /metrics; undefined: absent. */
  ownByPurpose?: Record<string, number>;
  /** Some upstream requests no family matched (to extend families.ts). */
  otherSamples: string[];
  /** Served from cache, and the ceiling, by kind of client. */
  actors: Record<string, Counted>;
}

const pct = (n: number, of: number): number => Math.round((n / Math.max(1, of)) * 1000) / 10;
const per1000 = (n: number, of: number): number => Math.round((n / Math.max(1, of)) * 10_000) / 10;

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

async function scrapeOwn(urls: string[]): Promise<Record<string, number> | undefined> {
  for (const url of urls) {
    try {
      const r = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) });
      if (r.status !== 200) continue;
      const own = ownRequestsByPurpose(await r.text());
      if (own) return own;
    } catch {
      // the next place, or n/a
    }
  }
  return undefined;
}

async function runVariant(
  profile: Profile,
  variant: Variant,
  label: string,
  root: string | undefined,
  seconds: number,
  wallets: number,
): Promise<VariantResult> {
  const upstream = await startSurfaceUpstream({
    seed: 'wallet-mix',
    wallets,
    bots: 30,
    blockEveryMs: profile.blockEveryMs,
    backgroundTxEveryMs: profile.backgroundTxEveryMs,
    historyMs: (seconds + 60) * 1000,
    deprecatedGone: process.env.WALLET_MIX_DEPRECATED_GONE === '1',
    libraryContracts: profile.libraryContracts,
    stuckBacklog: BACKLOG,
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
      explorers: profile.explorers(wallets),
      dapps: profile.dapps(wallets),
      timeScale: profile.timeScale,
      sendsPerSecond: profile.sendsPerSecond(wallets),
      seed: 15,
      concurrency: 128,
      profile: profile.name,
      libraryContracts: profile.libraryContracts,
    });
    upstream.resetCounts();
    process.stderr.write(`bench: wallet-mix ${profile.name} ${label}: ${wallets} wallets for ${seconds} s\n`);
    await mix.runFor(seconds * 1000);
    const received: CountedRequest[] = [...upstream.requests];
    const ownByPurpose = proxy ? await scrapeOwn([proxy.adminUrl, proxy.url]) : undefined;
    if (proxy) await stopChild(proxy.child);
    const ceiling = ceilingOf(mix.exchanges, snapshotLookup(upstream));
    return summarise(
      profile.name,
      variant,
      label,
      mix.exchanges,
      mix.sends,
      received,
      judgeExchanges(upstream, mix.exchanges, { windowMs: WINDOW_MS, windowMsByFamily: { mempool_fees: MEMPOOL_FEES_LAG_MS } }),
      ceiling,
      ownByPurpose,
    );
  } finally {
    if (proxy) await stopChild(proxy.child);
    await urlCache?.close();
    await upstream.close();
  }
}

function counted(exchanges: Exchange[], indexOf: Map<Exchange, number>, ceiling: Ceiling): Counted {
  const served = servedFigures(exchanges);
  let ceilingReads = 0;
  let ceilingServable = 0;
  let upstreamCaused = 0;
  for (const e of exchanges) {
    const servable = ceiling.servableAt.get(indexOf.get(e) ?? -1);
    if (servable !== undefined) {
      ceilingReads++;
      if (servable) ceilingServable++;
    }
    const x = (e.xCache ?? '').toUpperCase();
    if (x !== 'HIT' && x !== 'STALE') upstreamCaused++;
  }
  return { clients: served.clients, fromCache: served.fromCache, revalidated: served.revalidated, ceilingReads, ceilingServable, upstreamCaused };
}

function summarise(
  profile: MixProfile,
  variant: Variant,
  label: string,
  exchanges: Exchange[],
  sends: SendStats,
  received: CountedRequest[],
  verdict: OracleVerdict,
  ceiling: Ceiling,
  ownByPurpose: Record<string, number> | undefined,
): VariantResult {
  const served = servedFigures(exchanges);
  const clients = exchanges.length;
  const indexOf = new Map(exchanges.map((e, i) => [e, i]));
  const upstreamByFamily = new Map<string, number>();
  const classes = new Map<string, string>();
  for (const r of received) {
    upstreamByFamily.set(r.family, (upstreamByFamily.get(r.family) ?? 0) + 1);
    classes.set(r.family, r.cls);
  }
  const { own: upstreamOwn, ownByFamily, onClientUrls: ownOnClientUrls } = ownRequests(exchanges, received);
  for (const e of exchanges) if (!classes.has(e.family)) classes.set(e.family, familyOf(e.method, e.url).cls);
  const families = [...new Set([...Object.keys(served.byFamily), ...upstreamByFamily.keys()])].sort().map((family) => {
    const f = served.byFamily[family] ?? { clients: 0, fromCache: 0, revalidated: 0 };
    const c = ceiling.byFamily[family] ?? { reads: 0, servable: 0 };
    return {
      family,
      cls: classes.get(family),
      clients: f.clients,
      fromCachePct: pct(f.fromCache, f.clients),
      revalidatedPct: pct(f.revalidated, f.clients),
      ceilingPct: pct(c.servable, f.clients),
      upstreamPer1000: per1000(upstreamByFamily.get(family) ?? 0, clients),
      ownPer1000: per1000(ownByFamily[family] ?? 0, clients),
      mismatches: verdict.byFamily[family] ?? 0,
    };
  });
  const actors: VariantResult['actors'] = {};
  for (const actor of ['wallet', 'explorer', 'dapp', 'send'])
    actors[actor] = counted(
      exchanges.filter((e) => e.actor === actor),
      indexOf,
      ceiling,
    );
  const examples = verdict.mismatches
    .slice(0, 5)
    .map((m) => `${m.kind}${m.older ? '/older' : ''} ${m.exchange.method} ${m.exchange.url.slice(0, 90)} → ${m.exchange.status}`);
  return {
    profile,
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
    ceiling: counted(exchanges, indexOf, ceiling),
    upstreamClientCaused: received.length - upstreamOwn,
    upstreamOwn,
    ownOnClientUrls,
    ownByFamily,
    ...(ownByPurpose ? { ownByPurpose } : {}),
    actors,
    otherSamples: [...new Set(received.filter((r) => r.family === 'other').map((r) => `${r.method} ${r.url.split('?')[0]}`))].slice(0, 5),
  };
}

/** Served without a full fetch (HIT/STALE and 304) as a share of the ceiling. */
const ofCeiling = (c: Counted): number => pct(c.fromCache + c.revalidated, c.ceilingServable);

function headline(r: VariantResult): string {
  const purposes = r.ownByPurpose
    ? Object.entries(r.ownByPurpose)
        .sort((a, b) => b[1] - a[1])
        .map(([p, n]) => `${p} ${n}`)
        .join(', ')
    : 'n/a';
  return (
    `${r.profile} · ${r.label}: ${r.clients.toLocaleString('en-US')} client requests (${r.failed} failed); served without a full upstream fetch ${pct(r.fromCache + r.revalidated, r.clients)}% ` +
    `(${pct(r.fromCache, r.clients)}% from cache + ${pct(r.revalidated, r.clients)}% 304; ${Object.entries(r.actors)
      .map(([a, f]) => `${a}s ${pct(f.fromCache + f.revalidated, f.clients)}%`)
      .join(', ')}); ceiling ${pct(r.ceiling.ceilingServable, r.clients)}%, reaches ${ofCeiling(r.ceiling)}% of the ceiling; ` +
    `upstream ${per1000(r.upstreamTotal, r.clients)} req per 1,000 client requests (${per1000(r.upstreamClientCaused, r.clients)} client-caused, ${per1000(r.upstreamOwn, r.clients)} the proxy's own, ${per1000(r.upstreamOwn - r.ownOnClientUrls, r.clients)} of them on URLs no client asked; ` +
    `${per1000(r.upstreamNotModified, r.clients)} answered 304, ${per1000(r.tipPolls, r.clients)} tip polls); own requests by purpose (metric): ${purposes}; ` +
    `oracle: ${r.verdict.checked} judged, ${r.verdict.staleBodies} stale or different bodies ` +
    `(${r.verdict.olderBodies} older upstream answers), ${r.verdict.wrongStatus} wrong statuses; sends ${r.sends.accepted}/${r.sends.broadcasts} accepted, ${r.sends.staleNonces} stale nonces after own broadcast, ${r.sends.badNonce} rejected for a bad nonce`
  );
}

function familyTable(results: VariantResult[]): string {
  const families = [...new Set(results.flatMap((r) => r.families.map((f) => f.family)))].sort();
  const classOf = new Map<string, string>();
  for (const r of results) for (const f of r.families) if (f.cls) classOf.set(f.family, f.cls);
  const head = `| family | class | ${results.map((r) => `${r.variant} clients | cache % | 304 % | ceiling % | upstream/1k | own/1k | mismatches`).join(' | ')} |`;
  const rule = `|---|---|${results.map(() => '---|---|---|---|---|---|---').join('|')}|`;
  const rows = families.map((family) => {
    const cells = results.map((r) => {
      const f = r.families.find((x) => x.family === family);
      return f
        ? `${f.clients} | ${f.fromCachePct} | ${f.revalidatedPct} | ${f.ceilingPct} | ${f.upstreamPer1000} | ${f.ownPer1000} | ${f.mismatches}`
        : ' | | | | | | ';
    });
    return `| ${family} | ${classOf.get(family) ?? ''} | ${cells.join(' | ')} |`;
  });
  const totals = `| **total** | | ${results
    .map(
      (r) =>
        `${r.clients} | ${pct(r.fromCache, r.clients)} | ${pct(r.revalidated, r.clients)} | ${pct(r.ceiling.ceilingServable, r.clients)} | ${per1000(r.upstreamTotal, r.clients)} | ${per1000(r.upstreamOwn, r.clients)} | ${r.verdict.staleBodies + r.verdict.wrongStatus}`,
    )
    .join(' | ')} |`;
  return [head, rule, ...rows, totals].join('\n');
}

function actorTable(results: VariantResult[]): string {
  const head = '| variant | actor | clients | cache % | 304 % | ceiling % | of ceiling % | upstream-causing/1k |';
  const rule = '|---|---|---|---|---|---|---|---|';
  const rows = results.flatMap((r) =>
    [...Object.entries(r.actors), ['**all**', r.ceiling] as const].map(
      ([actor, c]) =>
        `| ${r.variant} | ${actor} | ${c.clients} | ${pct(c.fromCache, c.clients)} | ${pct(c.revalidated, c.clients)} | ${pct(c.ceilingServable, c.clients)} | ${ofCeiling(c)} | ${per1000(c.upstreamCaused, c.clients)} |`,
    ),
  );
  return [head, rule, ...rows].join('\n');
}

function ownTable(results: VariantResult[]): string {
  const rows = results.map((r) => {
    const byFamily = Object.entries(r.ownByFamily)
      .sort((a, b) => b[1] - a[1])
      .map(([f, n]) => `${f} ${n}`)
      .join(', ');
    const byPurpose = r.ownByPurpose
      ? Object.entries(r.ownByPurpose)
          .map(([p, n]) => `${p} ${n}`)
          .join(', ')
      : 'n/a';
    return `| ${r.variant} | ${r.upstreamOwn} | ${per1000(r.upstreamOwn, r.clients)} | ${r.upstreamOwn - r.ownOnClientUrls} | ${r.ownOnClientUrls} | ${byFamily || '-'} | ${byPurpose} |`;
  });
  return [
    '| variant | own upstream requests | per 1k client | on URLs no client asked | on client URLs, behind answers from cache | by family | by purpose (stacks_proxy_own_upstream_requests_total) |',
    '|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

function profileReport(profile: Profile, wallets: number, seconds: number, results: VariantResult[]): string {
  return [
    `## ${profile.name}: ${wallets} wallets, ${seconds} s, a block every ${profile.blockEveryMs / 1000} s${BACKLOG ? `, ${BACKLOG} stuck pending transactions` : ''}`,
    '',
    results.map((r) => `- ${headline(r)}`).join('\n'),
    '',
    '### Per route family',
    '',
    "cache %: X-Cache HIT/STALE; 304 %: REVALIDATED; ceiling %: reads whose upstream answer equalled the previous identical request's (ceiling.ts); upstream/1k: upstream requests of the family per 1,000 client requests; own/1k: of those, the proxy's own (beyond one per client request of the same URL, page size aside, not answered from cache).",
    '',
    familyTable(results),
    '',
    '### Per actor',
    '',
    actorTable(results),
    '',
    "### The proxy's own upstream requests",
    '',
    ownTable(results),
    '',
  ].join('\n');
}

async function runProfile(
  profile: Profile,
  options: Context['options'],
  variants: Variant[],
  wallets: number,
): Promise<{ seconds: number; results: VariantResult[] }> {
  const seconds = Number(process.env.WALLET_MIX_SECONDS ?? (options.quick ? 20 : profile.seconds));
  const baselineCommit = process.env.BENCH_BASELINE_COMMIT ?? 'ab10517';
  const results: VariantResult[] = [];
  for (const variant of variants) {
    if (variant === 'baseline') {
      const root =
        process.argv.find((a) => a.startsWith('--baseline-dir='))?.slice('--baseline-dir='.length) ??
        process.env.BENCH_BASELINE_DIR ??
        baselineBuild(baselineCommit);
      results.push(
        await runVariant(profile, variant, `proxy at ${baselineCommit}${baselineCommit === 'ab10517' ? ' (before issue 15)' : ''}`, root, seconds, wallets),
      );
    } else if (variant === 'proxy') results.push(await runVariant(profile, variant, 'proxy (this checkout)', undefined, seconds, wallets));
    else if (variant === 'revalidation')
      results.push(await runVariant(profile, variant, 'proxy (this checkout), principal activity off: revalidation alone', undefined, seconds, wallets));
    else if (variant === 'url-cache')
      results.push(await runVariant(profile, variant, 'wrong on purpose: caching by URL for 30 s', undefined, seconds, wallets));
    else results.push(await runVariant(profile, variant, 'direct to the upstream', undefined, seconds, wallets));
  }
  return { seconds, results };
}

export async function walletMix({ options }: Context): Promise<Section> {
  const wallets = Number(process.env.WALLET_MIX_WALLETS ?? (options.quick ? 50 : 200));
  const variants = (process.env.WALLET_MIX_VARIANTS ?? 'direct,baseline,revalidation,proxy').split(',') as Variant[];
  const which = process.env.WALLET_MIX_PROFILE ?? 'real';
  const profiles = (which === 'both' ? ['real', 'easy'] : [which]).map((name) => {
    const profile = PROFILES[name as MixProfile];
    if (!profile) throw new Error(`WALLET_MIX_PROFILE=${name}: real, easy or both`);
    return profile;
  });
  const runs: Array<{ profile: Profile; seconds: number; results: VariantResult[] }> = [];
  for (const profile of profiles) runs.push({ profile, ...(await runProfile(profile, options, variants, wallets)) });
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'wallet-mix.md'),
    `# wallet-mix (${new Date().toISOString()})\n\n${runs.map((run) => profileReport(run.profile, wallets, run.seconds, run.results)).join('\n')}`,
  );
  const all = runs.flatMap((run) => run.results.map((r) => ({ r, seconds: run.seconds })));
  const rows: Row[] = all.map(({ r, seconds }) => ({
    scenario: '9 wallet mix',
    name: `${r.profile}: ${r.label}`,
    run: { requestsPerSecond: Math.round(r.clients / seconds), p50Ms: r.p50Ms, p99Ms: r.p99Ms, errors: r.failed, non2xx: 0, requests: r.clients },
    note: `without full fetch ${pct(r.fromCache + r.revalidated, r.clients)}% (${pct(r.revalidated, r.clients)}% 304), ceiling ${pct(r.ceiling.ceilingServable, r.clients)}% (reached ${ofCeiling(r.ceiling)}%), upstream ${per1000(r.upstreamTotal, r.clients)}/1,000 (own ${per1000(r.upstreamOwn, r.clients)}), stale ${r.verdict.staleBodies + r.verdict.wrongStatus}, stale nonces ${r.sends.staleNonces}, bad-nonce rejections ${r.sends.badNonce}`,
  }));
  return {
    id: 'walletMix',
    rows,
    findings: [
      ...all.map(({ r }) => headline(r)),
      "Per route family and per actor (clients, % from cache, % 304, ceiling %, upstream requests per 1,000 client requests, the proxy's own requests): bench/results/wallet-mix.md.",
    ],
    data: {
      wallets,
      windowMs: WINDOW_MS,
      profiles: runs.map((run) => ({ ...run.profile, sendsPerSecond: run.profile.sendsPerSecond(wallets), seconds: run.seconds, results: run.results })),
    },
  };
}
