/**
 * The oracle (issue 15): a few wallets, explorers, dApps and send flows go through the proxy
 * to the surface upstream while the test moves the chain; every answer the proxy gives (status
 * and body bytes) must be one the upstream gave at some moment within two tip polls, and no
 * nonce read after the sender's own broadcast may miss it. Time is scaled down: a round is one
 * tip poll (the test drives the proxy's poll), and the proxy's mempool freshness is scaled to a
 * round, as in production it is two polls (1 s poll, 2 s mempool TTL).
 *
 * The same run against a deliberately wrong "proxy" (caching by URL for 30 s) must be flagged:
 * the check can fail.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ClientMix,
  judgeExchanges,
  servedFigures,
  startSurfaceUpstream,
  startUrlCache,
  type OracleVerdict,
  type SendStats,
  type SurfaceUpstream,
} from '../../testkit/surface-upstream/index.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

const ROUNDS = 50;
const ROUND_MS = 1_000; // virtual: the clients' clock
/** Real time a round lasts at least: longer than the proxy's mempool freshness below. */
const ROUND_MIN_REAL_MS = 120;
const MEMPOOL_FRESH_MS = 100;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

interface RunResult {
  verdict: OracleVerdict;
  sends: SendStats;
  served: ReturnType<typeof servedFigures>;
  requests: number;
}

/** Runs the mix in rounds: move the chain, let the proxy poll its tip, run the clients' due requests. */
/** How the chain moves each round: a block every third round, each in its own new burn block. */
type ChainMover = (upstream: SurfaceUpstream, round: number) => void;
const blockEveryThirdRound: ChainMover = (upstream, round) => {
  if (round % 3 === 0) upstream.mine();
};

/**
 * A Nakamoto chain's shape: each Bitcoin block is announced a round before its tenure's first
 * Stacks block, while the old tenure's miner still adds a block (so a new Stacks tip comes with
 * the status's burn tip one ahead of its anchor: what a conditional poll does show); the model
 * puts a new burn block under every `burnEvery` blocks otherwise; and every 15 rounds a stall of
 * 4 Bitcoin blocks with no Stacks block.
 */
const burnTipLeading: ChainMover = (upstream, round) => {
  const phase = round % 15;
  if (phase === 0) upstream.mineBurn(4);
  else if (phase % 3 === 1) {
    // The Bitcoin block is announced, and the old tenure's miner still adds a block under it.
    upstream.mineBurn(1);
    upstream.mine({ lateInTenure: true });
  } else upstream.mine();
};

async function runRounds(
  upstream: SurfaceUpstream,
  baseUrl: string,
  pollTip: () => Promise<void>,
  rounds = ROUNDS,
  moveChain: ChainMover = blockEveryThirdRound,
): Promise<RunResult & { gone: number }> {
  const mix = new ClientMix({ baseUrl, cast: upstream.cast, wallets: 16, explorers: 2, dapps: 3, timeScale: 10, sendsPerSecond: 0.6, seed: 7 });
  const marks: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const began = Date.now();
    moveChain(upstream, round);
    await upstream.backgroundTx();
    await pollTip();
    marks.push(Date.now());
    await mix.runUntil(round * ROUND_MS);
    const left = ROUND_MIN_REAL_MS - (Date.now() - began);
    if (left > 0) await sleep(left);
  }
  // Two tip polls: an answer may date from the poll before the last one before it was sent.
  const windowStart = (tSend: number): number => {
    let k = marks.length - 1;
    while (k > 0 && (marks[k] as number) > tSend) k--;
    return marks[Math.max(0, k - 1)] as number;
  };
  return {
    verdict: judgeExchanges(upstream, mix.exchanges, { windowStart }),
    sends: mix.sends,
    served: servedFigures(mix.exchanges),
    requests: mix.exchanges.length,
    gone: mix.exchanges.filter((e) => e.status === 410).length,
  };
}

function describeMismatches(verdict: OracleVerdict): string {
  return verdict.mismatches
    .slice(0, 5)
    .map(
      (m) => `${m.kind}${m.older ? ' (older answer)' : ''}: ${m.exchange.method} ${m.exchange.url} → ${m.exchange.status} ${m.exchange.answer.slice(0, 120)}`,
    )
    .join('\n');
}

/** A proxy in front of `upstream`, its mempool freshness scaled to a round (closed after the test). */
async function oracleProxy(upstream: SurfaceUpstream) {
  const proxy = await startTestProxy({
    upstreamUrls: [upstream.url],
    overrides: { cache: { ttl: { mempoolMs: MEMPOOL_FRESH_MS, staleWhileRevalidateMs: 0 } } },
  });
  cleanups.push(() => proxy.close());
  return proxy;
}

describe('surface oracle: the proxy answers as the upstream did, within two tip polls', () => {
  it('every proxy answer equals an upstream answer in the window, and no nonce after a broadcast is stale', async () => {
    const upstream = await startSurfaceUpstream({ wallets: 16, bots: 4, historyMs: 600_000 });
    cleanups.push(() => upstream.close());
    const proxy = await oracleProxy(upstream);
    const result = await runRounds(upstream, proxy.url, () => proxy.tracker.pollOnce());
    const { served } = result;
    // The figure this test reports (it asserts correctness, not a ratio).
    console.info(
      `surface oracle: ${result.requests} client requests, ${result.verdict.checked} judged; served without a full fetch ${((served.fromCache / Math.max(1, served.clients)) * 100).toFixed(1)}% ` +
        `(+${((served.revalidated / Math.max(1, served.clients)) * 100).toFixed(1)}% revalidated by 304); sends ${JSON.stringify(result.sends)}`,
    );
    expect(result.requests).toBeGreaterThan(800);
    expect(result.verdict.unverifiable).toBe(0);
    expect(result.sends.accepted).toBeGreaterThan(5);
    expect(result.sends.nonceChecks).toBe(result.sends.accepted);
    expect(describeMismatches(result.verdict)).toBe('');
    expect(result.sends.staleNonces).toBe(0);
    expect(result.sends.badNonce).toBe(0);
  }, 90_000);

  it('with the burn tip leading the tip block’s anchor (Nakamoto tenures, stalls): the same, no answer an error, the breaker closed', async () => {
    const upstream = await startSurfaceUpstream({ wallets: 16, bots: 4, historyMs: 600_000 });
    cleanups.push(() => upstream.close());
    const proxy = await oracleProxy(upstream);
    const result = await runRounds(upstream, proxy.url, () => proxy.tracker.pollOnce(), ROUNDS, burnTipLeading);
    console.info(
      `surface oracle, burn tip leading: ${result.requests} client requests, ${result.verdict.checked} judged, ${result.verdict.mismatches.length} mismatches`,
    );
    expect(result.requests).toBeGreaterThan(800);
    expect(describeMismatches(result.verdict)).toBe('');
    expect(result.sends.staleNonces).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_chain_disagreements_total')).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_breaker_open')).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total')).toBe(0);
  }, 90_000);

  it('passes on 410 Gone when the upstream switches deprecated routes off', async () => {
    const upstream = await startSurfaceUpstream({ wallets: 16, bots: 4, historyMs: 600_000, deprecatedGone: true });
    cleanups.push(() => upstream.close());
    const proxy = await oracleProxy(upstream);
    const result = await runRounds(upstream, proxy.url, () => proxy.tracker.pollOnce(), 20);
    expect(result.gone).toBeGreaterThan(50);
    expect(describeMismatches(result.verdict)).toBe('');
  }, 90_000);

  it('flags a proxy that caches by URL for 30 s: stale answers and stale nonces', async () => {
    const upstream = await startSurfaceUpstream({ wallets: 16, bots: 4, historyMs: 600_000 });
    cleanups.push(() => upstream.close());
    const wrong = await startUrlCache(upstream.url);
    cleanups.push(() => wrong.close());
    const result = await runRounds(upstream, wrong.url, async () => undefined);
    expect(result.verdict.mismatches.filter((m) => m.older).length).toBeGreaterThan(20);
    expect(result.sends.staleNonces).toBeGreaterThan(0);
  }, 90_000);
});
