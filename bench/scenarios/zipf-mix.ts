/**
 * Scenario 4: a Zipf mix (s = 1.0) over about 10,000 distinct URLs on the 13 routes while a new
 * block arrives every 5 s and the mempool changes in between: hit ratio and upstream requests
 * per 1,000 client requests once warm, conditional revalidations (If-None-Match) apart.
 */
import autocannon from 'autocannon';
import { stopChild } from '../../testkit/index.js';
import { byLabel, scrape } from '../lib/metrics.js';
import { startProxy } from '../lib/proc.js';
import type { Section } from '../lib/report.js';
import { seededRandom, shuffle, zipfSampler } from '../lib/zipf.js';
import { urlMix } from '../lib/url-mix.js';
import type { Context } from './context.js';

const DISTINCT_URLS = 10_000;
const BLOCK_EVERY_MS = 5_000;

export async function zipfMix({ options, upstream }: Context): Promise<Section> {
  const random = seededRandom(10);
  const urls = shuffle(urlMix(DISTINCT_URLS, random), random);
  const draw = zipfSampler(urls.length, 1.0, random);
  // URLs drawn so far: a miss on a URL never asked before is compulsory (the long tail), not churn.
  const seen = new Set<string>();
  let firstSightings = 0;
  const requests: autocannon.Request[] = [
    {
      method: 'GET',
      setupRequest: (req) => {
        const path = urls[draw()] as string;
        if (!seen.has(path)) {
          seen.add(path);
          firstSightings++;
        }
        return { ...req, path };
      },
    },
  ];
  const warmSeconds = options.quick ? 2 : 15;
  const measureSeconds = options.quick ? 4 : 30;
  const proxy = await startProxy({ upstreamUrl: upstream.url });
  const blocks = setInterval(() => upstream.advanceTip(), BLOCK_EVERY_MS);
  let mempool: NodeJS.Timeout | undefined;
  const mempoolStart = setTimeout(() => (mempool = setInterval(() => upstream.setMempoolChanged(), BLOCK_EVERY_MS)), BLOCK_EVERY_MS / 2);
  try {
    process.stderr.write(`bench: zipf mix over ${urls.length} URLs: ${warmSeconds} s warm-up, ${measureSeconds} s measured\n`);
    await autocannon({ url: proxy.url, connections: options.connections, duration: warmSeconds, requests });
    const before = byLabel(await scrape(proxy.adminUrl), 'stacks_proxy_http_requests_total', 'cache');
    upstream.resetCounts();
    const firstSightingsBefore = firstSightings;
    const result = await autocannon({ url: proxy.url, connections: options.connections, duration: measureSeconds, requests });
    const after = byLabel(await scrape(proxy.adminUrl), 'stacks_proxy_http_requests_total', 'cache');
    const firstAsked = firstSightings - firstSightingsBefore;
    const fetched = upstream.requests.filter((r) => r.path !== '/extended'); // the tip poll is not client traffic
    const conditional = fetched.filter((r) => r.headers['if-none-match'] !== undefined).length;
    const byCache = Object.fromEntries(Object.keys(after).map((k) => [k, (after[k] ?? 0) - (before[k] ?? 0)]));
    const clients = Object.values(byCache).reduce((a, b) => a + b, 0);
    const perThousand = (n: number) => Math.round((n / Math.max(1, clients)) * 10_000) / 10;
    const hitRatio = Math.round(((byCache.HIT ?? byCache.hit ?? 0) / Math.max(1, clients)) * 1000) / 10;
    const withoutUpstream = Math.round((1 - fetched.length / Math.max(1, clients)) * 1000) / 10;
    const s = '4 Zipf mix';
    return {
      id: 'zipfMix',
      rows: [
        {
          scenario: s,
          name: `proxy, ${urls.length.toLocaleString('en-US')} URLs, Zipf s=1, block every 5 s`,
          run: { requestsPerSecond: Math.round(result.requests.average), p50Ms: result.latency.p50, p99Ms: result.latency.p99, errors: result.errors + result.timeouts, non2xx: result.non2xx, requests: result.requests.total },
          note: `hit ${hitRatio}%, ${perThousand(fetched.length)} upstream req per 1,000 (${perThousand(conditional)} conditional), ${withoutUpstream}% without upstream; ${perThousand(firstAsked)} per 1,000 asked for the first time`,
        },
      ],
      findings: [
        `Zipf mix once warm (${warmSeconds} s warm-up, ${measureSeconds} s measured, ${clients.toLocaleString('en-US')} client requests): hit ratio ${hitRatio}% (X-Cache HIT), ` +
          `${perThousand(fetched.length)} upstream requests per 1,000 client requests, of which ${perThousand(conditional)} conditional revalidations (If-None-Match; a 304 when unchanged); ` +
          `${withoutUpstream}% of client requests served without the upstream (target >= 95%). Answers by X-Cache: ${JSON.stringify(byCache)}. ` +
          `${perThousand(firstAsked)} per 1,000 measured requests asked for a URL for the first time in the run (compulsory misses of the Zipf tail, which no cache avoids; with 10,000 URLs and s=1 the tail stays cold for a long time).`,
      ],
      data: { firstAsked, urls: urls.length, warmSeconds, measureSeconds, clients, upstreamRequests: fetched.length, conditional, byCache, hitRatio, withoutUpstream },
    };
  } finally {
    clearInterval(blocks);
    clearTimeout(mempoolStart);
    clearInterval(mempool);
    await stopChild(proxy.child);
  }
}
