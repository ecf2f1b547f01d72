/**
 * Start-up as an operator meets it: a port that is taken fails with an error naming its
 * setting (through `node dist/src/main.js`), a start-up that fails part-way stops everything it
 * had started (a child process with Redis that ends by itself), the `listening` line shows the
 * address as configured, and /ready says from the first second why the proxy is not ready.
 */
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';
import { freePort, startFakeUpstream, startRedis, type FakeUpstream, type TestRedis } from '../../testkit/index.js';
import { fetchRaw } from '../support/http.js';
import { startTestProxy } from '../support/proxy-harness.js';

const root = projectRoot();
const main = join(root, 'dist', 'src', 'main.js');
let upstream: FakeUpstream;
let redis: TestRedis;
/** A port held by another listener. */
let taken: Server;
let takenPort: number;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  redis = await startRedis();
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', () => resolve()));
  takenPort = (taken.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => taken?.close(resolve));
  await upstream?.close();
  await redis?.stop();
});

interface Ended {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs node with `args` until it exits; a child alive after 20 s is killed and reported as code -1. */
function runToEnd(args: string[], env: Record<string, string> = {}): Promise<Ended> {
  const child = spawn(process.execPath, args, { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => {
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', (code) => {
      clearTimeout(guard);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

describe('a port that is taken', () => {
  it('ADMIN_PORT: the process exits 1 with an error naming the setting', async () => {
    const ended = await runToEnd([main], { PORT: '0', HOST: '127.0.0.1', ADMIN_PORT: String(takenPort), UPSTREAM_URLS: upstream.url, LOG_LEVEL: 'silent' });
    expect(ended.code).toBe(1);
    expect(ended.stderr).toContain(`listen EADDRINUSE 127.0.0.1:${takenPort}: the admin port is taken (ADMIN_PORT / admin.port)`);
    // The message says it all: no stack trace follows it.
    expect(ended.stderr).not.toMatch(/\n\s+at /);
  }, 30_000);

  it('PORT: the process exits 1 with an error naming the setting', async () => {
    const ended = await runToEnd([main], { PORT: String(takenPort), HOST: '127.0.0.1', ADMIN_PORT: '0', UPSTREAM_URLS: upstream.url, LOG_LEVEL: 'silent' });
    expect(ended.code).toBe(1);
    expect(ended.stderr).toContain(`listen EADDRINUSE 127.0.0.1:${takenPort}: the public port is taken (PORT / server.port)`);
  }, 30_000);
});

describe('a start-up that fails part-way', () => {
  it('stops what it had started (tip tracker, push feed, Redis connections, pools, the public listener): the process ends by itself', async () => {
    // Everything that holds the process open is on: Redis (cache, purge and activity channels,
    // shared rate-limit budget), the tip poll, the push feed's link, the mempool watcher.
    const settings = {
      server: { port: 0, host: '127.0.0.1' },
      admin: { port: takenPort, host: '127.0.0.1' },
      upstream: { urls: [upstream.url] },
      redis: { url: redis.url },
      rateLimit: { enabled: true },
      logLevel: 'silent',
    };
    const script = `
      import { configFrom } from './dist/src/config.js';
      import { createLogger } from './dist/src/logger.js';
      import { startProxy } from './dist/src/composition-root.js';
      const config = configFrom(${JSON.stringify(settings)});
      try {
        await startProxy(config, { logger: createLogger('silent') });
        console.log('started?');
      } catch (error) {
        console.log('rejected:', error.message);
      }
    `;
    const ended = await runToEnd(['--input-type=module', '-e', script]);
    expect(ended.stdout).toContain(`rejected: listen EADDRINUSE 127.0.0.1:${takenPort}: the admin port is taken (ADMIN_PORT / admin.port)`);
    expect(ended.code, `still alive 20 s after the failed start-up, or failed:\n${ended.stdout}${ended.stderr}`).toBe(0);
  }, 30_000);
});

describe('the listening line', () => {
  it('shows the address as configured (0.0.0.0), and the proxy answers on it', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [main], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', PORT: String(port), HOST: '0.0.0.0', ADMIN_PORT: '0', UPSTREAM_URLS: upstream.url, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const line = await new Promise<string>((resolve, reject) => {
        let seen = '';
        child.stdout.on('data', (chunk: Buffer) => {
          seen += chunk.toString();
          const found = seen.split('\n').find((l) => l.includes('"msg":"listening"'));
          if (found) resolve(found);
        });
        child.once('exit', (code) => reject(new Error(`exited ${code}: ${seen}`)));
      });
      const listening = JSON.parse(line) as { url: string; adminUrl: string };
      expect(listening.url).toBe(`http://0.0.0.0:${port}`);
      expect(listening.adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetchRaw(`http://127.0.0.1:${port}/health`)).status).toBe(200);
    } finally {
      child.kill('SIGKILL');
    }
  }, 30_000);
});

describe('/ready before any tip', () => {
  it("gives each upstream's last error from the first second", async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    upstream.setFailing({ status: 500 });
    const proxy = await startTestProxy({ upstreamUrls: [dead, upstream.url] });
    try {
      const answer = await fetchRaw(`${proxy.adminUrl}/ready`);
      expect(answer.status).toBe(503);
      const body = JSON.parse(answer.body.toString()) as {
        status: string;
        reason: string;
        details: { upstreams: { origin: string; lastError?: { message: string } }[] };
      };
      expect(body.status).toBe('not_ready');
      // Each upstream named once: the client's cause already names it.
      expect(body.reason).toMatch(new RegExp(`^chain tip not known yet \\(connect from ${dead}: .*ECONNREFUSED.*; ${upstream.url} answered 500`));
      expect(body.details.upstreams.map((u) => u.lastError?.message)).toEqual([expect.stringContaining('ECONNREFUSED'), expect.stringContaining('500')]);
      // The public port says only that it is not ready.
      expect(JSON.parse((await fetchRaw(`${proxy.url}/ready`)).body.toString())).toEqual({ status: 'not_ready' });
    } finally {
      upstream.setFailing(null);
      await proxy.close();
    }
  });

  it('names an upstream that accepts connections but never answers, before its request times out', async () => {
    // Accepts every connection and answers nothing.
    const held = new Set<Socket>();
    const silent = createServer((socket) => void held.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const hung = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const proxy = await startTestProxy({ upstreamUrls: [hung], overrides: { chainTip: { pollTimeoutMs: 300 }, upstream: { headersTimeoutMs: 3_000 } } });
    try {
      const body = JSON.parse((await fetchRaw(`${proxy.adminUrl}/ready`)).body.toString()) as { reason: string };
      expect(body.reason).toBe(`chain tip not known yet (${hung}: no answer to the chain tip poll within 300 ms (chainTip.pollTimeoutMs))`);
    } finally {
      await proxy.close();
      for (const socket of held) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
