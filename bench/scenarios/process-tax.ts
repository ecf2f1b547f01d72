/**
 * Issue 29's bisection of the process tax: baseline 2's handler (the same head and body as a
 * memory hit, bench/baselines/bare-handlers.ts) served in processes that hold more and more of
 * what the proxy's process holds, each against the standalone baseline 2 in the same rounds:
 *   - standalone, with the proxy's heap flags, with the proxy's modules loaded (nothing started);
 *   - standalone with one background part each (an undici poll, an admin server fetched, empty
 *     timers), and with all of them in a worker thread instead (bench/baselines/background-work.ts);
 *   - inside a proxy's process (baseline 3) with every optional part off, with each part on alone
 *     (tip poll, mempool watcher, block learner, push feed), and at the defaults;
 *   - the proxy's own hit at the defaults.
 * What each costs per request is the row's CPU per request minus its neighbour's.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deepMerge, loadConfig, memoryTierBytes } from '../../src/config.js';
import { heapFlagsToAdd, heapSizingFor } from '../../src/runtime/heap-sizing.js';
import { freePort, stopChild } from '../../testkit/index.js';
import { pairedRatios, type Target } from '../lib/load.js';
import { baselineModule, startNodeServer, startProxy, type Server } from '../lib/proc.js';
import type { Row, Section } from '../lib/report.js';
import { HIT_PATH, hitHead, type Context } from './context.js';

/** The heap flags the proxy's process gives itself at the defaults without Redis, as main.ts derives them. */
const DEFAULT_CONFIG = loadConfig({});
const PROXY_HEAP_FLAGS = heapFlagsToAdd(
  heapSizingFor(
    memoryTierBytes(DEFAULT_CONFIG),
    DEFAULT_CONFIG.heap.maxOldSpaceMiB,
    DEFAULT_CONFIG.heap.maxSemiSpaceMiB,
    DEFAULT_CONFIG.heap.markingStartPercent,
  ),
  [],
);

/** Every optional part off: no activity registry (watcher, learner), no push feed, warm-up or fan-out, one tip poll an hour. */
const QUIET = {
  chainTip: { pollIntervalMs: 3_600_000 },
  activity: { enabled: false },
  live: { push: { enabled: false }, warm: { enabled: false }, fanout: { enabled: false } },
};
const withParts = (overrides: Record<string, unknown>): Record<string, unknown> => deepMerge(QUIET, overrides);

/** The proxy variants: config overrides on top of QUIET (undefined: the defaults). */
const PROXY_VARIANTS: Record<string, { config?: Record<string, unknown>; name: string }> = {
  quiet: { config: QUIET, name: 'every optional part off (one tip poll an hour, no activity, push, warm-up, fan-out)' },
  tipPoll: { config: withParts({ chainTip: { pollIntervalMs: 1000 } }), name: 'quiet + the tip poll every second' },
  watcher: {
    config: withParts({ chainTip: { pollIntervalMs: 1000 }, activity: { enabled: true, learnBlocks: false, watchMempool: true } }),
    name: 'quiet + tip poll + the activity registry and mempool watcher',
  },
  learner: {
    config: withParts({ chainTip: { pollIntervalMs: 1000 }, activity: { enabled: true, learnBlocks: true, watchMempool: false } }),
    name: 'quiet + tip poll + the activity registry and block learner',
  },
  push: { config: withParts({ chainTip: { pollIntervalMs: 1000 }, live: { push: { enabled: true } } }), name: 'quiet + tip poll + the push feed' },
  defaults: { name: 'the defaults (baseline 3 of scenario 1)' },
};

export async function processTax({ options, upstream, hitBody }: Context): Promise<Section> {
  const servers: Server[] = [];
  try {
    const body = hitBody.toString('base64');
    const headersFile = join(mkdtempSync(join(tmpdir(), 'scp-bench-')), 'head.json');
    const proxies = await Promise.all(
      Object.entries(PROXY_VARIANTS).map(async ([id, variant]) => {
        const port = await freePort();
        const proxy = await startProxy({ upstreamUrl: upstream.url, config: variant.config, inProcessBare: { port, headersFile, body: hitBody } });
        servers.push(proxy);
        return { id, proxy, bareUrl: `http://127.0.0.1:${port}/x` };
      }),
    );
    const defaults = proxies.find((p) => p.id === 'defaults')?.proxy as Server;
    await fetch(defaults.url + HIT_PATH).then((r) => r.arrayBuffer());
    const head = JSON.stringify(await hitHead(defaults.url + HIT_PATH));
    writeFileSync(headersFile, head);

    const standalone = async (id: string, env: Record<string, string>, flags: string[] = []) => {
      const server = await startNodeServer('bench/baselines/map-server.js', { BODY: body, HEADERS: head, ...env }, '/health', 0, undefined, flags);
      servers.push(server);
      return { id, server };
    };
    const background = (parts: string, thread = false) => ({
      BACKGROUND_UPSTREAM_URL: upstream.url,
      BACKGROUND_PARTS: parts,
      BACKGROUND_THREAD: thread ? '1' : '0',
    });
    const withBackground = ['--import', baselineModule('background-work.js')];
    const bares = await Promise.all([
      standalone('bare', {}),
      // The control: a second, identical baseline 2. What it measures over the first is the method's own error.
      standalone('twin', {}),
      standalone('heapFlags', {}, PROXY_HEAP_FLAGS),
      standalone('modules', {}, ['--import', baselineModule('proxy-modules.js')]),
      standalone('undici', background('undici'), withBackground),
      standalone('admin', background('admin'), withBackground),
      standalone('timers', background('timers'), withBackground),
      standalone('metrics', background('metrics'), withBackground),
      standalone('all', background('undici,admin'), withBackground),
      standalone('allInThread', background('undici,admin', true), withBackground),
    ]);

    const variants: Record<string, Target> = {};
    for (const { id, server } of bares) if (id !== 'bare') variants[id] = { url: `${server.url}/x`, pids: [server.pid], preferWrk: true };
    for (const { id, proxy, bareUrl } of proxies) variants[`proxy:${id}`] = { url: bareUrl, pids: [proxy.pid], preferWrk: true };
    variants.hit = { url: defaults.url + HIT_PATH, pids: [defaults.pid], preferWrk: true };
    const bare = bares.find((b) => b.id === 'bare')?.server as Server;
    // PROCESS_TAX_VARIANTS=twin,heapFlags,...: only these (a quicker look at a few parts).
    const only = process.env.PROCESS_TAX_VARIANTS?.split(',');
    if (only) for (const id of Object.keys(variants)) if (!only.includes(id)) delete variants[id];
    // A variant idles for a whole round (over a minute with every variant) while the baseline runs
    // every few seconds; a longer warm-up before each run narrows what idling may cost a process.
    const paired = { ...options, warmUpSeconds: options.quick ? 0.5 : 1.5 };
    const ratios = await pairedRatios('process tax', { url: `${bare.url}/x`, pids: [bare.pid], preferWrk: true }, variants, paired);

    const s = '15 process tax';
    const fmt = (id: string): string => {
      const r = ratios[id];
      return r
        ? `${r.cpu.toFixed(2)}x CPU, ${r.requestsPerSecond.toFixed(2)}x req/s (${r.cpuMicrosPerRequest} µs against ${r.baselineCpuMicrosPerRequest})`
        : 'n/a';
    };
    // A part's own cost: its ratio over its neighbour's, in µs of the baseline's CPU per request.
    const over = (id: string, neighbour: string): string => {
      const a = ratios[id];
      const b = ratios[neighbour];
      return a && b ? `${(a.cpu / b.cpu).toFixed(2)}x ${neighbour}'s (${((a.cpu - b.cpu) * a.baselineCpuMicrosPerRequest).toFixed(1)} µs)` : 'n/a';
    };
    const rows: Row[] = [];
    const line = (id: string, name: string, neighbour?: string): string => {
      const note = `${fmt(id)}${neighbour ? `; ${over(id, neighbour)}` : ''}`;
      rows.push({ scenario: s, name, note });
      return `${name}: ${note}`;
    };
    return {
      id: 'processTax',
      rows,
      findings: [
        `Each row against baseline 2 (bare node:http writing a hit's whole head and body, standalone), each variant's run next to one of the baseline's (bench/lib/load.ts pairedRatios), medians of ${options.rounds} rounds' pair ratios:`,
        line('twin', "the control, a second baseline 2 (the method's own error)"),
        line('heapFlags', `baseline 2 with the proxy's heap flags (${PROXY_HEAP_FLAGS.join(' ')})`),
        line('modules', "baseline 2 with the proxy's modules loaded, nothing started"),
        line('timers', 'baseline 2 + three empty 250 ms intervals'),
        line('metrics', "baseline 2 + prom-client's default collectors (event-loop delay, GC observer)"),
        line('undici', 'baseline 2 + an undici request to the upstream 4 a second'),
        line('admin', 'baseline 2 + a second HTTP server fetched 4 a second'),
        line('all', 'baseline 2 + both'),
        line('allInThread', 'baseline 2 + both, in a worker thread', 'all'),
        ...proxies.map(({ id }) =>
          line(`proxy:${id}`, `baseline 3 (baseline 2's handler in a proxy process), ${PROXY_VARIANTS[id]?.name}`, id === 'quiet' ? 'modules' : 'proxy:quiet'),
        ),
        line('hit', "the proxy's hit at the defaults", 'proxy:defaults'),
        `Targets: baseline 3 at the defaults within 1.05x (${ratios['proxy:defaults']?.cpu}x), the hit at most 1.10x the CPU (${ratios.hit?.cpu}x) and at least 0.9x the req/s (${ratios.hit?.requestsPerSecond}x).`,
      ],
      data: { ratios },
    };
  } finally {
    for (const server of servers) await stopChild(server.child);
  }
}
