/**
 * Scenario 16 (issue 29): what a memory hit costs as the work around it grows, each figure next to
 * a bare node:http server doing the same in the same rounds.
 *   - Entries: a proxy holding 1k, 100k and 1M cached answers (--quick: 1k and 10k), each asked
 *     for at random by wrk (one random target a request), against baseline 2 holding as many keys
 *     in a Map and answering the same head and body. The proxy is filled through HTTP: distinct
 *     unknown transaction ids, each a cached 404 (small answers: the entry's own cost counts most).
 *     Tip- and mempool-class lifetimes are raised to an hour for the run (an unknown transaction's
 *     404 lives as long as a mempool answer: it may be pending a moment later), so no entry
 *     expires while it is asked; the note gives the X-Cache of a sample spread over them.
 *   - Connections: the defaults' hit on one URL at 50, 500 and 5,000 connections (--quick: 50,
 *     500) against baseline 2 at the same count.
 */
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopChild } from '../../testkit/index.js';
import { alternate, type Run } from '../lib/load.js';
import { startNodeServer, startProxy, type Server } from '../lib/proc.js';
import { ratio, type Row, type Section } from '../lib/report.js';
import { HIT_PATH, hitHead, type Context } from './context.js';

/** The i-th filled target: an unknown transaction id, answered 404 and cached. */
const txPath = (i: number): string => `/extended/v1/tx/0x${i.toString(16).padStart(64, '0')}`;
const FILL_CONNECTIONS = 64;
const MiB = 2 ** 20;

/** Sends every target once, FILL_CONNECTIONS at a time; resolves with the statuses seen. */
async function fill(url: URL, count: number): Promise<Map<number, number>> {
  const agent = new Agent({ keepAlive: true, maxSockets: FILL_CONNECTIONS });
  const statuses = new Map<number, number>();
  let next = 0;
  const one = async (): Promise<void> => {
    while (next < count) {
      const req = request({ host: url.hostname, port: url.port, path: txPath(next++), agent });
      req.end();
      const [res] = (await once(req, 'response')) as [import('node:http').IncomingMessage];
      res.resume();
      await once(res, 'end');
      statuses.set(res.statusCode ?? 0, (statuses.get(res.statusCode ?? 0) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: FILL_CONNECTIONS }, one));
  agent.destroy();
  return statuses;
}

/** The X-Cache values of `sample` filled targets spread over all of them, counted. */
async function cacheStates(base: string, count: number, sample = 200): Promise<string> {
  const seen = new Map<string, number>();
  for (let k = 0; k < sample; k++) {
    const answer = await fetch(base + txPath(Math.floor((k * count) / sample)));
    await answer.arrayBuffer();
    const state = answer.headers.get('x-cache') ?? 'none';
    seen.set(state, (seen.get(state) ?? 0) + 1);
  }
  return [...seen].map(([state, n]) => `${n} ${state}`).join(', ');
}

function pathsFile(lines: (i: number) => string, count: number): string {
  const file = join(mkdtempSync(join(tmpdir(), 'scp-bench-')), 'paths.txt');
  writeFileSync(file, Array.from({ length: count }, (_v, i) => lines(i)).join('\n') + '\n');
  return file;
}

async function entriesRows(context: Context, size: number): Promise<{ rows: Row[]; finding: string; runs: Record<string, Run> }> {
  const { options, upstream } = context;
  const servers: Server[] = [];
  try {
    // Room for every entry with a wide margin (with 1 KiB an entry, a 100k-entry run cost 6-7x
    // baseline 2 a request, as misses would); it is a bound, not an allocation. Lifetimes past the run.
    const maxBytes = Math.max(128 * MiB, size * 4096);
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      config: {
        cache: { memory: { maxBytes }, ttl: { tipSafetyMs: 3_600_000, learnedMaxMs: 3_600_000, mempoolMs: 3_600_000 } },
        // Without the activity registry: with it, 144 of 200 sampled entries were misses a second after a
        // 1,000-entry fill (the mempool watcher ends mempool-class answers when the mempool changes).
        activity: { enabled: false },
      },
    });
    servers.push(proxy);
    process.stderr.write(`bench: hit scaling: filling ${size.toLocaleString('en-US')} entries\n`);
    const started = Date.now();
    const statuses = await fill(new URL(proxy.url), size);
    const fillSeconds = (Date.now() - started) / 1000;
    const states = await cacheStates(proxy.url, size);
    const sample = await fetch(proxy.url + txPath(0));
    const body = Buffer.from(await sample.arrayBuffer());
    const head = JSON.stringify(await hitHead(proxy.url + txPath(0)));
    const bare = await startNodeServer('bench/baselines/map-server.js', { BODY: body.toString('base64'), HEADERS: head, ENTRIES: String(size) }, '/health');
    servers.push(bare);
    const runs = await alternate(
      `hit among ${size} entries`,
      {
        bare: [{ url: `${bare.url}/x`, pids: [bare.pid], preferWrk: true, pathsFile: pathsFile((i) => `/x/${i}`, size) }],
        proxy: [{ url: proxy.url + txPath(0), pids: [proxy.pid], preferWrk: true, pathsFile: pathsFile(txPath, size) }],
      },
      options,
    );
    const s = '16 hit scaling';
    const label = size.toLocaleString('en-US');
    const statusText = [...statuses].map(([status, n]) => `${n.toLocaleString('en-US')} × ${status}`).join(', ');
    return {
      runs,
      rows: [
        { scenario: s, name: `baseline 2 holding ${label} keys, a random one a request`, run: runs.bare },
        {
          scenario: s,
          name: `proxy holding ${label} entries, a random one a request`,
          run: runs.proxy,
          baseline: runs.bare,
          note: `filled in ${fillSeconds.toFixed(1)} s (${statusText}); X-Cache of 200 spread over them: ${states}`,
        },
      ],
      finding: `${label} entries: ${ratio(runs.proxy?.cpuMicrosPerRequest, runs.bare?.cpuMicrosPerRequest)}x baseline 2's CPU per request (${runs.proxy?.cpuMicrosPerRequest} against ${runs.bare?.cpuMicrosPerRequest} µs), ${ratio(runs.proxy?.requestsPerSecond, runs.bare?.requestsPerSecond)}x its req/s`,
    };
  } finally {
    for (const server of servers) await stopChild(server.child);
  }
}

async function connectionRows(context: Context, counts: number[]): Promise<{ rows: Row[]; findings: string[]; runs: Record<string, Run> }> {
  const { options, upstream, hitBody } = context;
  const servers: Server[] = [];
  try {
    const proxy = await startProxy({ upstreamUrl: upstream.url });
    servers.push(proxy);
    const head = JSON.stringify(await hitHead(proxy.url + HIT_PATH));
    const bare = await startNodeServer('bench/baselines/map-server.js', { BODY: hitBody.toString('base64'), HEADERS: head }, '/health');
    servers.push(bare);
    const variants: Record<string, Array<{ url: string; pids: number[]; preferWrk: boolean; connections: number }>> = {};
    for (const connections of counts) {
      variants[`bare@${connections}`] = [{ url: `${bare.url}/x`, pids: [bare.pid], preferWrk: true, connections }];
      variants[`proxy@${connections}`] = [{ url: proxy.url + HIT_PATH, pids: [proxy.pid], preferWrk: true, connections }];
    }
    const runs = await alternate('hit by connections', variants, options);
    const s = '16 hit scaling';
    const rows: Row[] = [];
    const findings: string[] = [];
    for (const connections of counts) {
      const b = runs[`bare@${connections}`];
      const p = runs[`proxy@${connections}`];
      const label = connections.toLocaleString('en-US');
      rows.push({ scenario: s, name: `baseline 2 at ${label} connections`, run: b });
      rows.push({ scenario: s, name: `proxy hit, defaults, at ${label} connections`, run: p, baseline: b });
      findings.push(
        `${label} connections: ${ratio(p?.cpuMicrosPerRequest, b?.cpuMicrosPerRequest)}x baseline 2's CPU per request (${p?.cpuMicrosPerRequest} against ${b?.cpuMicrosPerRequest} µs), ${ratio(p?.requestsPerSecond, b?.requestsPerSecond)}x its req/s, p99 ${p?.p99Ms} against ${b?.p99Ms} ms`,
      );
    }
    return { rows, findings, runs };
  } finally {
    for (const server of servers) await stopChild(server.child);
  }
}

export async function hitScaling(context: Context): Promise<Section> {
  const quick = context.options.quick;
  const sizes = quick ? [1_000, 10_000] : [1_000, 100_000, 1_000_000];
  const counts = quick ? [50, 500] : [50, 500, 5_000];
  const rows: Row[] = [];
  const entryFindings: string[] = [];
  const data: Record<string, unknown> = {};
  for (const size of sizes) {
    const part = await entriesRows(context, size);
    rows.push(...part.rows);
    entryFindings.push(part.finding);
    data[`entries${size}`] = part.runs;
  }
  const byConnections = await connectionRows(context, counts);
  rows.push(...byConnections.rows);
  data.connections = byConnections.runs;
  return {
    id: 'hitScaling',
    rows,
    findings: [
      `CPU per hit as the cache grows (random targets, wrk): ${entryFindings.join('; ')}.`,
      `CPU per hit as connections grow (one URL, wrk, one thread): ${byConnections.findings.join('; ')}.`,
    ],
    data,
  };
}
