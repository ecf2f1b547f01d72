/**
 * Scenario 4: a Zipf mix (s = 1.0) over about 10,000 distinct URLs on the 13 routes at a fixed
 * request rate while a new block arrives every 5 s and the mempool changes in between: hit ratio
 * and upstream requests per 1,000 client requests once warm, conditional revalidations
 * (If-None-Match) apart, and where the upstream requests come from (route, class, X-Cache).
 */
import autocannon from 'autocannon';
import { stopChild } from '../../testkit/index.js';
import { byLabel, scrape, sumSeries } from '../lib/metrics.js';
import { startProxy } from '../lib/proc.js';
import type { Section } from '../lib/report.js';
import { MixBreakdown } from '../lib/mix-breakdown.js';
import { seededRandom, shuffle, zipfSampler } from '../lib/zipf.js';
import { urlMix } from '../lib/url-mix.js';
import type { Context } from './context.js';

const DISTINCT_URLS = 10_000;
const BLOCK_EVERY_MS = 5_000;
/**
 * Client requests per second, fixed: what share of requests needs the upstream depends on how
 * many requests arrive between two blocks (each tip entry costs about one upstream request per
 * block however often it is read), so an unthrottled run's figure would follow the machine's
 * speed and load (85% at 3,100 req/s, 93% at 12,900 in two runs of the same code).
 * BENCH_ZIPF_RATE overrides it; 0: as fast as the proxy answers.
 */
const RATE = Number(process.env.BENCH_ZIPF_RATE ?? 3_000);

export async function zipfMix({ options, upstream }: Context): Promise<Section> {
  const random = seededRandom(10);
  const urls = shuffle(urlMix(DISTINCT_URLS, random), random);
  const draw = zipfSampler(urls.length, 1.0, random);
  // URLs drawn so far: a miss on a URL never asked before is compulsory (the long tail), not churn.
  const seen = new Set<string>();
  let firstSightings = 0;
  // Filled only while measuring: every client answer by route, class and X-Cache.
  let breakdown: MixBreakdown | undefined;
  interface Asked {
    path?: string;
    first?: boolean;
  }
  const requests: autocannon.Request[] = [
    {
      method: 'GET',
      setupRequest: (req, context) => {
        const path = urls[draw()] as string;
        const first = !seen.has(path);
        if (first) {
          seen.add(path);
          firstSightings++;
        }
        Object.assign(context as Asked, { path, first });
        return { ...req, path };
      },
      onResponse: (_status, _body, context, headers) => {
        const asked = context as Asked;
        breakdown?.answered(asked.path ?? '', headers as Record<string, unknown>, asked.first === true);
      },
    },
  ];
  const warmSeconds = options.quick ? 1 : 15;
  const measureSeconds = options.quick ? 3 : 30;
  const proxy = await startProxy({ upstreamUrl: upstream.url });
  // The chain moves as a live one does: between two blocks a transaction enters the mempool (a
  // mempool change, and an activity change of its sender and recipient), and the next block mines it.
  let pending: string | undefined;
  const blocks = setInterval(() => {
    if (pending === undefined) upstream.advanceTip();
    else upstream.confirmTx(pending);
    pending = undefined;
  }, BLOCK_EVERY_MS);
  let mempool: NodeJS.Timeout | undefined;
  const mempoolStart = setTimeout(() => (mempool = setInterval(() => (pending = upstream.addPendingTx()), BLOCK_EVERY_MS)), BLOCK_EVERY_MS / 2);
  const load = { url: proxy.url, connections: options.connections, requests, ...(RATE > 0 ? { overallRate: RATE } : {}) };
  try {
    process.stderr.write(`bench: zipf mix over ${urls.length} URLs: ${warmSeconds} s warm-up, ${measureSeconds} s measured\n`);
    await autocannon({ ...load, duration: warmSeconds });
    const beforeText = await scrape(proxy.adminUrl);
    const before = byLabel(beforeText, 'stacks_proxy_http_requests_total', 'cache');
    const notModifiedBefore = sumSeries(beforeText, 'stacks_proxy_revalidations_total', { result: 'not_modified' });
    upstream.resetCounts();
    const firstSightingsBefore = firstSightings;
    breakdown = new MixBreakdown();
    const result = await autocannon({ ...load, duration: measureSeconds });
    const afterText = await scrape(proxy.adminUrl);
    const after = byLabel(afterText, 'stacks_proxy_http_requests_total', 'cache');
    const notModified = sumSeries(afterText, 'stacks_proxy_revalidations_total', { result: 'not_modified' }) - notModifiedBefore;
    const firstAsked = firstSightings - firstSightingsBefore;
    const measured = breakdown;
    breakdown = undefined;
    measured.fetched(upstream.requests);
    const fetched = upstream.requests.filter((r) => r.path !== '/extended'); // the tip poll is not client traffic
    const tipPolls = upstream.requests.length - fetched.length;
    const conditional = fetched.filter((r) => r.headers['if-none-match'] !== undefined).length;
    const byCache = Object.fromEntries(Object.keys(after).map((k) => [k, (after[k] ?? 0) - (before[k] ?? 0)]));
    const clients = Object.values(byCache).reduce((a, b) => a + b, 0);
    const perThousand = (n: number) => Math.round((n / Math.max(1, clients)) * 10_000) / 10;
    const hitRatio = Math.round(((byCache.HIT ?? byCache.hit ?? 0) / Math.max(1, clients)) * 1000) / 10;
    const withoutUpstream = Math.round((1 - fetched.length / Math.max(1, clients)) * 1000) / 10;
    // "Once warm": the share again with the first requests for a URL (each costs one upstream
    // request however the cache works) left out of both counts.
    const warmShare = Math.round((1 - Math.max(0, fetched.length - firstAsked) / Math.max(1, clients - firstAsked)) * 1000) / 10;
    const s = '4 Zipf mix';
    const rateNote = RATE > 0 ? `at ${RATE.toLocaleString('en-US')} req/s offered: ` : '';
    return {
      id: 'zipfMix',
      rows: [
        {
          scenario: s,
          name: `proxy, ${urls.length.toLocaleString('en-US')} URLs, Zipf s=1, block every 5 s`,
          run: {
            requestsPerSecond: Math.round(result.requests.average),
            p50Ms: result.latency.p50,
            p99Ms: result.latency.p99,
            errors: result.errors + result.timeouts,
            non2xx: result.non2xx,
            requests: result.requests.total,
          },
          note:
            `${rateNote}hit ${hitRatio}%, ${perThousand(fetched.length)} upstream req per 1,000 (${perThousand(conditional)} conditional, ${perThousand(notModified)} answered 304), ` +
            `${withoutUpstream}% without upstream; ${perThousand(firstAsked)} per 1,000 asked for the first time (${warmShare}% without them); tip polls ${perThousand(tipPolls)} per 1,000 (not counted)`,
        },
      ],
      findings: [
        `Zipf mix once warm (${warmSeconds} s warm-up, ${measureSeconds} s measured, ${clients.toLocaleString('en-US')} client requests): hit ratio ${hitRatio}% (X-Cache HIT), ` +
          `${perThousand(fetched.length)} upstream requests per 1,000 client requests, of which ${perThousand(conditional)} conditional revalidations (If-None-Match; ${perThousand(notModified)} answered 304); ` +
          `${withoutUpstream}% of client requests served without the upstream (target >= 95%); ${warmShare}% with first requests for a URL left out. Answers by X-Cache: ${JSON.stringify(byCache)}. ` +
          `${perThousand(firstAsked)} per 1,000 measured requests asked for a URL for the first time in the run (compulsory misses of the Zipf tail, which no cache avoids; with 10,000 URLs and s=1 the tail stays cold for a long time).`,
      ],
      data: {
        breakdown: {
          answers: MixBreakdown.table(measured.answers, clients),
          firstAsked: MixBreakdown.table(measured.firstAsked, clients),
          upstream: MixBreakdown.table(measured.upstream, clients),
        },
        firstAsked,
        urls: urls.length,
        rate: RATE,
        warmSeconds,
        measureSeconds,
        clients,
        upstreamRequests: fetched.length,
        conditional,
        notModified,
        tipPolls,
        byCache,
        hitRatio,
        withoutUpstream,
        warmShare,
      },
    };
  } finally {
    clearInterval(blocks);
    clearTimeout(mempoolStart);
    clearInterval(mempool);
    await stopChild(proxy.child);
  }
}
