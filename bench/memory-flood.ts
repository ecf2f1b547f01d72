/**
 * `npm run bench:memory`: floods a proxy process with distinct requests (every one a miss that
 * makes a new cache key) against the fake upstream and reports its RSS against the configured
 * memory bound over time. The proxy runs without Redis, so the memory tier is the whole cache.
 * It is started as `npm start` starts it (node dist/src/main.js, no flags: main.ts sizes the
 * heap from the tier), and its RSS growth is judged against issue 14's limit: the tier plus
 * 48 MiB (+64 MiB for a 16 MiB tier).
 *
 * Requests cycle through keys no client would repeat, all small answers (35 to 350 bytes), where
 * what an entry costs beyond its body matters most: unknown transaction ids (404s), block and
 * burn block heights above the tip (404s), balances at distinct until_block heights, events of
 * distinct contract ids and of unknown tx ids, and tx/multiple lists of unknown ids (one entry
 * per member).
 *
 *   FLOOD_SECONDS (60)  FLOOD_TARGET (no limit: stop after this many requests)  MEMORY_MAX_BYTES (16 MiB)
 *   BENCH_CONNECTIONS (32). `npm run bench` runs it as its memory scenario (bench/scenarios/memory-million.ts).
 *   PROXY_NODE_OPTIONS: NODE_OPTIONS for the proxy only (e.g. --max-old-space-size=128)
 *   PROXY_MAIN: another build's main.js (for before/after runs; default dist/src/main.js)
 *
 * Prints one line per sample (RSS, growth over the idle baseline, the tier's own byte count and
 * entries from /metrics) and the peak (the highest sample or the kernel's high-water mark VmHWM,
 * whichever is higher); writes bench/results/memory-flood.{json,md}.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { projectRoot } from '../src/paths.js';
import { RECORDED, freePort, isAnswering, startFakeUpstream, stopChild, waitFor } from '../testkit/index.js';
import { cpuSeconds } from './lib/proc.js';

const SECONDS = Number(process.env.FLOOD_SECONDS ?? 60);
/** Stop early once this many distinct requests were sent. */
const TARGET = Number(process.env.FLOOD_TARGET ?? Number.POSITIVE_INFINITY);
const MAX_BYTES = Number(process.env.MEMORY_MAX_BYTES ?? 16 * 2 ** 20);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const SAMPLE_MS = 2_000;
const PROXY_MAIN = process.env.PROXY_MAIN ?? 'dist/src/main.js';
/** Settings merged over the flood's own (a JSON object of top-level sections), e.g. '{"heap":{"markingStartPercent":0}}'. */
const PROXY_CONFIG = JSON.parse(process.env.PROXY_CONFIG ?? '{}') as Record<string, unknown>;
/** Issue 14: RSS growth under the flood within the tier plus this (+64 MiB for a 16 MiB tier). */
const ALLOWANCE_MiB = 48;
const ROOT = projectRoot();
const MiB = 2 ** 20;

interface Sample {
  seconds: number;
  requests: number;
  rssMiB: number;
  tierMiB: number;
  tierEntries: number;
  heapUsedMiB: number;
  heapTotalMiB: number;
  externalMiB: number;
}

/** A size line of /proc/<pid>/status in bytes: VmRSS (now) or VmHWM (the peak so far). */
function statusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) * 1024 : Number.NaN;
}
const rssBytes = (pid: number): number => statusBytes(pid, 'VmRSS');

const hex = (bytes: number): string => randomBytes(bytes).toString('hex');

/** The n-th distinct request path: each one is a new cache key. */
function distinctPath(n: number): string {
  const P = RECORDED.principal;
  switch (n % 7) {
    case 0:
      return `/extended/v1/tx/0x${hex(32)}`;
    case 1:
      return `/extended/v2/blocks/${1_000_000 + n}`;
    case 2:
      return `/extended/v1/address/${P}/stx?until_block=${n + 1}`;
    case 3:
      return `/extended/v1/contract/${P}.c${n}/events`;
    case 4:
      return `/extended/v1/tx/events?tx_id=0x${hex(32)}`;
    case 5:
      return `/extended/v1/block/by_burn_block_height/${1_000_000 + n}`;
    default:
      return `/extended/v1/tx/multiple?tx_id=0x${hex(32)},0x${hex(32)},0x${hex(32)}`;
  }
}

function get(agent: Agent, port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    req.end();
  });
}

/** The memory tier's byte count and entries, from the proxy's own /metrics (on its admin listener). */
async function tierState(url: string): Promise<{ bytes: number; entries: number; heapUsed: number; heapTotal: number; external: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const read = (name: string, labels = '\\{tier="memory"\\}'): number => Number(new RegExp(`^${name}${labels} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  return {
    bytes: read('stacks_proxy_cache_bytes'),
    entries: read('stacks_proxy_cache_entries'),
    heapUsed: read('nodejs_heap_size_used_bytes', ''),
    heapTotal: read('nodejs_heap_size_total_bytes', ''),
    external: read('nodejs_external_memory_bytes', ''),
  };
}

async function main(): Promise<void> {
  const upstream = await startFakeUpstream();
  const port = await freePort();
  const adminPort = await freePort();
  const configFile = join(tmpdir(), `memory-flood-${process.pid}.json`);
  writeFileSync(configFile, JSON.stringify({ cache: { memory: { maxBytes: MAX_BYTES } }, ...PROXY_CONFIG }));
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, PROXY_MAIN)], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_PORT: String(adminPort),
      ADMIN_HOST: '127.0.0.1',
      UPSTREAM_URLS: upstream.url,
      REDIS_URL: '',
      LOG_LEVEL: 'warn',
      CONFIG_FILE: configFile,
      NODE_OPTIONS: process.env.PROXY_NODE_OPTIONS ?? '',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  // /metrics is served on the admin listener.
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const samples: Sample[] = [];
  try {
    await waitFor(() => isAnswering(`${url}/health`), { timeoutMs: 10_000, what: 'the proxy' });
    const pid = child.pid as number;
    // Idle baseline: after start-up and a warm-up of a few hundred requests to one cached path.
    for (let i = 0; i < 300; i++) await get(agent, port, `/extended/v1/tx/${RECORDED.confirmedTxId}`);
    const baseline = rssBytes(pid);
    const idle = await tierState(adminUrl);
    process.stderr.write(
      `memory flood: maxBytes ${(MAX_BYTES / MiB).toFixed(0)} MiB, idle RSS ${(baseline / MiB).toFixed(0)} MiB ` +
        `(heap ${(idle.heapUsed / MiB).toFixed(0)}/${(idle.heapTotal / MiB).toFixed(0)} MiB), ${SECONDS} s, ${CONNECTIONS} connections\n`,
    );

    let sent = 0;
    let failed = 0;
    // The proxy's CPU per request: steadier than req/s on a shared machine.
    const cpuBefore = cpuSeconds(pid);
    const started = Date.now();
    const deadline = started + SECONDS * 1_000;
    const workers = Array.from({ length: CONNECTIONS }, async () => {
      while (Date.now() < deadline && sent < TARGET) {
        const status = await get(agent, port, distinctPath(sent++));
        if (status >= 500) failed++;
      }
    });
    const sampler = (async () => {
      while (Date.now() < deadline && sent < TARGET) {
        await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
        // The fake upstream logs every request; the flood needs no log, and a long one would grow this process.
        upstream.resetCounts();
        const tier = await tierState(adminUrl);
        const sample: Sample = {
          seconds: Math.round((Date.now() - started) / 1_000),
          requests: sent,
          rssMiB: rssBytes(pid) / MiB,
          tierMiB: tier.bytes / MiB,
          tierEntries: tier.entries,
          heapUsedMiB: tier.heapUsed / MiB,
          heapTotalMiB: tier.heapTotal / MiB,
          externalMiB: tier.external / MiB,
        };
        samples.push(sample);
        process.stderr.write(
          `  ${String(sample.seconds).padStart(4)} s  ${String(sample.requests).padStart(8)} requests  RSS ${sample.rssMiB.toFixed(0)} MiB ` +
            `(+${(sample.rssMiB - baseline / MiB).toFixed(0)})  tier ${sample.tierMiB.toFixed(1)} MiB, ${sample.tierEntries} entries  ` +
            `heap ${sample.heapUsedMiB.toFixed(0)}/${sample.heapTotalMiB.toFixed(0)} MiB, external ${sample.externalMiB.toFixed(0)} MiB\n`,
        );
      }
    })();
    await Promise.all([...workers, sampler]);

    const floodSeconds = (Date.now() - started) / 1_000;
    const cpuMicrosPerRequest = Math.round(((cpuSeconds(pid) - cpuBefore) / sent) * 1e6);
    // The kernel's high-water mark catches a peak between two samples.
    const peak = Math.max(...samples.map((s) => s.rssMiB), statusBytes(pid, 'VmHWM') / MiB);
    const growth = peak - baseline / MiB;
    const limitMiB = MAX_BYTES / MiB + ALLOWANCE_MiB;
    const summary = {
      node: process.version,
      proxyNodeOptions: process.env.PROXY_NODE_OPTIONS ?? '',
      proxyMain: PROXY_MAIN,
      proxyConfig: PROXY_CONFIG,
      // What the proxy runs with after main.ts sized its heap (its command line, not this process's).
      proxyCommandLine: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).slice(1).join(' '),
      seconds: SECONDS,
      floodSeconds: Math.round(floodSeconds * 10) / 10,
      requestsPerSecond: Math.round(sent / floodSeconds),
      cpuMicrosPerRequest,
      connections: CONNECTIONS,
      maxBytesMiB: MAX_BYTES / MiB,
      requests: sent,
      serverErrors: failed,
      idleRssMiB: Math.round(baseline / MiB),
      idleHeapUsedMiB: Math.round(idle.heapUsed / MiB),
      peakRssMiB: Math.round(peak),
      growthMiB: Math.round(growth),
      growthLimitMiB: limitMiB,
      withinLimit: growth <= limitMiB,
      growthPerMaxBytes: Math.round((growth / (MAX_BYTES / MiB)) * 100) / 100,
      peakTierMiB: Math.round(Math.max(...samples.map((s) => s.tierMiB)) * 10) / 10,
      peakHeapTotalMiB: Math.round(Math.max(...samples.map((s) => s.heapTotalMiB))),
      samples,
    };
    const nodeOptions =
      (process.env.PROXY_NODE_OPTIONS ? `, proxy NODE_OPTIONS ${process.env.PROXY_NODE_OPTIONS}` : '') +
      (process.env.PROXY_CONFIG ? `, config ${process.env.PROXY_CONFIG}` : '');
    const line =
      `${summary.maxBytesMiB} MiB tier: +${summary.growthMiB} MiB RSS after ${sent.toLocaleString('en-US')} misses, limit +${limitMiB} MiB ` +
      `(${summary.withinLimit ? 'within' : 'OVER'}); RSS ${summary.idleRssMiB} MiB idle, peak ${summary.peakRssMiB} MiB, ` +
      `${summary.growthPerMaxBytes}x the tier; ${summary.requestsPerSecond} req/s over ${summary.floodSeconds} s, proxy CPU ${cpuMicrosPerRequest} µs/request, ${failed} 5xx; ` +
      `tier's own count peaked at ${summary.peakTierMiB} MiB; node ${process.version}, proxy: ${summary.proxyCommandLine}${nodeOptions}`;
    process.stdout.write(`${line}\n`);
    const dir = join(ROOT, 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'memory-flood.json'), `${JSON.stringify(summary, null, 2)}\n`);
    const table = samples.map((s) => `| ${s.seconds} | ${s.requests} | ${s.rssMiB.toFixed(0)} | ${s.tierMiB.toFixed(1)} | ${s.tierEntries} |`);
    writeFileSync(
      join(dir, 'memory-flood.md'),
      [line, '', '| s | requests | RSS MiB | tier MiB | tier entries |', '|---|---|---|---|---|', ...table, ''].join('\n'),
    );
  } finally {
    agent.destroy();
    await stopChild(child);
    await upstream.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
