/**
 * `npm run bench:profile` (`-- --redis` for the Redis-tier hit): where a hit's CPU goes, from CPU
 * profiles (`node --cpu-prof`) of three servers under wrk: baseline 2 (the bare server writing
 * the same head), baseline 3 (that handler inside a proxy's process, bench/baselines/in-process.ts)
 * and the proxy's hit, each in a process of its own pinned to CPU 0, alternating rounds. Prints
 * the µs per request each spends per part (node's modules, packages, the proxy's directories,
 * garbage collection, the writev system call, ...) and the differences: baseline 3 against
 * baseline 2 is the process a hit runs in, the hit against baseline 3 the proxy's own work.
 * PROFILE_SECONDS (default 6) per run, PROFILE_ROUNDS (default 3).
 */
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, startFakeUpstream, startRedis, stopChild, type TestRedis } from '../testkit/index.js';
import { perRequest, type CpuProfile } from './lib/cpu-profile.js';
import { ROOT, baselineModule, pinSelf, startNodeServer, startProxy, type Server } from './lib/proc.js';
import { HAS_WRK, runWrk } from './lib/wrk.js';
import { HIT_PATH, hitHead } from './scenarios/context.js';

const redisTier = process.argv.includes('--redis');
const seconds = Number(process.env.PROFILE_SECONDS ?? 6);
const rounds = Number(process.env.PROFILE_ROUNDS ?? 3);
const dir = mkdtempSync(join(tmpdir(), 'scp-profile-'));
const profiled = (name: string): string[] => ['--cpu-prof', `--cpu-prof-dir=${join(dir, name)}`];

/** The largest profile a server wrote (a proxy writes a small one before its heap relaunch too). */
function profileOf(name: string): CpuProfile {
  const files = readdirSync(join(dir, name)).map((file) => join(dir, name, file));
  const largest = files.sort((a, b) => statSync(b).size - statSync(a).size)[0] as string;
  return JSON.parse(readFileSync(largest, 'utf8')) as CpuProfile;
}

async function main(): Promise<void> {
  if (!HAS_WRK) throw new Error('bench:profile needs wrk (apt-get install wrk)');
  pinSelf(1);
  const upstream = await startFakeUpstream({ principalEtags: 'exact' });
  let redis: TestRedis | undefined;
  const servers: Server[] = [];
  try {
    const hitBody = Buffer.from(await (await fetch(upstream.url + HIT_PATH)).arrayBuffer());
    if (redisTier) {
      redis = await startRedis();
      const client = new Redis(redis.url);
      await client.set('bench:body', hitBody);
      client.disconnect();
    }
    const config = redisTier ? { cache: { memory: { maxEntryBytes: 256, maxBytesWithRedis: 1024 } } } : undefined;
    const headersFile = join(dir, 'head.json');
    const inProcess = { port: await freePort(), headersFile, body: hitBody, redisUrl: redis?.url, key: 'bench:body' };
    const host = await startProxy({ upstreamUrl: upstream.url, redisUrl: redis?.url, config, inProcessBare: inProcess, nodeFlags: profiled('baseline3') });
    const proxy = await startProxy({ upstreamUrl: upstream.url, redisUrl: redis?.url, config, nodeFlags: profiled('proxy') });
    servers.push(host, proxy);
    await fetch(proxy.url + HIT_PATH).then((r) => r.arrayBuffer());
    const head = JSON.stringify(await hitHead(proxy.url + HIT_PATH));
    writeFileSync(headersFile, head);
    const env: Record<string, string> = redisTier
      ? { REDIS_URL: redis?.url ?? '', KEY: 'bench:body', HEADERS: head }
      : { BODY: hitBody.toString('base64'), HEADERS: head };
    const script = redisTier ? 'bench/baselines/redis-get-server.js' : 'bench/baselines/map-server.js';
    const baseline = await startNodeServer(script, env, '/health', 0, ROOT, [...profiled('baseline2'), '--import', baselineModule('exit-on-signal.js')]);
    servers.push(baseline);

    const targets = { baseline2: `${baseline.url}/x`, baseline3: `http://127.0.0.1:${inProcess.port}/x`, proxy: proxy.url + HIT_PATH };
    const requests: Record<keyof typeof targets, number> = { baseline2: 0, baseline3: 0, proxy: 0 };
    for (let round = 1; round <= rounds; round++) {
      for (const [name, url] of Object.entries(targets) as Array<[keyof typeof targets, string]>) {
        const run = await runWrk(url, 50, seconds);
        requests[name] += run.requests;
        process.stderr.write(`profile: ${name} (round ${round}/${rounds}): ${Math.round(run.requests / run.seconds)} req/s\n`);
      }
    }
    for (const server of servers.splice(0)) await stopChild(server.child);

    const parts = Object.fromEntries((Object.keys(targets) as Array<keyof typeof targets>).map((name) => [name, perRequest(profileOf(name), requests[name])]));
    const b2 = parts.baseline2 as ReturnType<typeof perRequest>;
    const b3 = parts.baseline3 as ReturnType<typeof perRequest>;
    const hit = parts.proxy as ReturnType<typeof perRequest>;
    const categories = [...new Set([...b2.byCategory.keys(), ...b3.byCategory.keys(), ...hit.byCategory.keys()])];
    const at = (p: ReturnType<typeof perRequest>, c: string): number => p.byCategory.get(c) ?? 0;
    const rows = categories
      .map((c) => ({ c, b2: at(b2, c), b3: at(b3, c), hit: at(hit, c) }))
      .sort((x, y) => Math.abs(y.hit - y.b2) - Math.abs(x.hit - x.b2))
      .filter((r) => Math.max(r.b2, r.b3, r.hit) >= 0.05);
    const f = (n: number): string => n.toFixed(2);
    const lines = [
      `${redisTier ? 'Redis-tier' : 'Memory'} hit, CPU profiles, ${rounds} rounds of ${seconds} s under wrk (50 connections), µs of CPU per request (the profiles include start-up: node's module loading shows as its own rows).`,
      '',
      "| part | baseline 2 | baseline 3 | proxy hit | baseline 3 - baseline 2 (the process) | hit - baseline 3 (the proxy's work) |",
      '|---|---|---|---|---|---|',
      `| **busy, all parts** | ${f(b2.busyMicros)} | ${f(b3.busyMicros)} | ${f(hit.busyMicros)} | ${f(b3.busyMicros - b2.busyMicros)} | ${f(hit.busyMicros - b3.busyMicros)} |`,
      ...rows.map((r) => `| ${r.c} | ${f(r.b2)} | ${f(r.b3)} | ${f(r.hit)} | ${f(r.b3 - r.b2)} | ${f(r.hit - r.b3)} |`),
      '',
      `Profiles kept in ${dir}.`,
    ];
    console.log(lines.join('\n'));
  } finally {
    for (const server of servers) await stopChild(server.child);
    await redis?.stop();
    await upstream.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
