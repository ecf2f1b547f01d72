/**
 * One upstream request per distinct node RPC read per block in worker mode (`node dist/src/main.js`,
 * WORKERS=2, real processes) against the counting surface upstream: with Redis, clients on new
 * connections (so on either worker), at once and one after another, cost one request per distinct
 * read. Without Redis the workers share the flight through the primary but not their memory
 * tiers: a read asked on another worker after the first flight ended is fetched again, so at most
 * one request per worker (docs/caching-and-freshness.md, single-flight).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../testkit/index.js';
import { startSurfaceUpstream, type SurfaceUpstream } from '../../testkit/surface-upstream/index.js';
import { startCluster, type RunningCluster } from '../support/cluster-proxy.js';
import { askedPerPath, distinctPerPath, nodeRpcReads, type NodeRpcRead } from '../support/node-rpc-reads.js';

let configDir: string;
let redis: TestRedis;
const upstreams: SurfaceUpstream[] = [];
const started: ChildProcess[] = [];

beforeAll(async () => {
  configDir = mkdtempSync(join(tmpdir(), 'scp-rpc-workers-'));
  redis = await startRedis();
});
afterAll(async () => {
  await Promise.all(upstreams.map((u) => u.close()));
  await redis.stop();
  rmSync(configDir, { recursive: true, force: true });
});
afterEach(() => {
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** One read on a connection of its own, so that the cluster hands it to a worker anew. */
function askOnNewConnection(base: string, read: NodeRpcRead): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> =
      read.body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(read.body) };
    const req = request(base + read.path, { agent: false, method: read.method, headers }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(read.body);
  });
}

async function twoWorkers(seed: string, env: Record<string, string>): Promise<{ upstream: SurfaceUpstream; proxy: RunningCluster }> {
  const upstream = await startSurfaceUpstream({ seed, wallets: 4, bots: 1 });
  upstreams.push(upstream);
  // No block comes while the test reads (the upstream mines only when told), and nothing but the clients asks for these reads.
  const config = { live: { push: { enabled: false }, warm: { enabled: false } }, cache: { keyPrefix: seed } };
  const proxy = await startCluster({ upstreamUrl: upstream.url, configDir, env: { WORKERS: '2', ...env }, config, started });
  // A worker is ready once it has polled the tip (composition-root: the first poll before listening).
  await expect.poll(() => proxy.lines().filter((line) => line.msg === 'worker ready').length, { timeout: 15_000 }).toBe(2);
  return { upstream, proxy };
}

/** 8 clients of every read at once, then 8 one after another, each on a new connection; every answer the upstream's. */
async function stampede(proxy: RunningCluster, upstream: SurfaceUpstream, reads: NodeRpcRead[]): Promise<void> {
  const check = (read: NodeRpcRead, got: { status: number; body: string }) => {
    expect(got.status).toBe(200);
    expect(got.body).toBe(upstream.answerAt(Date.now(), read.method, read.path, read.body).body);
  };
  await Promise.all(reads.flatMap((read) => Array.from({ length: 8 }, async () => check(read, await askOnNewConnection(proxy.url, read)))));
  for (let i = 0; i < 8; i++) for (const read of reads) check(read, await askOnNewConnection(proxy.url, read));
}

describe('one upstream request per distinct read per block: worker mode', () => {
  it('with Redis: one request per distinct read, whichever worker each client lands on', async () => {
    const { upstream, proxy } = await twoWorkers('rpc-workers-redis', { REDIS_URL: redis.url });
    const reads = nodeRpcReads(upstream);
    await stampede(proxy, upstream, reads);
    expect(askedPerPath(upstream, distinctPerPath(reads).keys())).toEqual(distinctPerPath(reads));
  }, 60_000);

  it('without Redis: at most one request per distinct read per worker (the memory tiers are per worker)', async () => {
    const { upstream, proxy } = await twoWorkers('rpc-workers-primary', {});
    const reads = nodeRpcReads(upstream);
    await stampede(proxy, upstream, reads);
    for (const [path, asked] of askedPerPath(upstream, distinctPerPath(reads).keys())) {
      const distinct = distinctPerPath(reads).get(path) as number;
      expect(asked).toBeGreaterThanOrEqual(distinct);
      expect(asked).toBeLessThanOrEqual(2 * distinct);
    }
  }, 60_000);
});
