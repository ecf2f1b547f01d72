/**
 * The public interface as an operator meets it: `node dist/src/main.js` (what `npm start`
 * runs) configured by environment variables, and a bad setting stopping start-up.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/paths.js';
import { youngGenerationMiB } from '../../src/runtime/heap-sizing.js';
import { startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';
import { fetchRaw } from '../support/http.js';

const root = projectRoot();
const main = join(root, 'dist', 'src', 'main.js');
let upstream: FakeUpstream;

beforeAll(async () => {
  upstream = await startFakeUpstream();
});
afterAll(async () => {
  await upstream.close();
});

const started: ChildProcess[] = [];
afterEach(() => {
  // A failed test must not leave a proxy running.
  for (const child of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

function run(env: Record<string, string>): ChildProcess {
  // ADMIN_PORT 0: processes started side by side must not race for the admin listener's default port.
  const child = spawn(process.execPath, [main], { env: { PATH: process.env.PATH ?? '', ADMIN_PORT: '0', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let seen = '';
  child.stdout?.on('data', (chunk: Buffer) => (seen += chunk.toString()));
  outputs.set(child, () => seen);
  return child;
}

const outputs = new WeakMap<ChildProcess, () => string>();
/** Everything the process has written to stdout so far. */
const output = (child: ChildProcess): string => outputs.get(child)?.() ?? '';

async function waitForLine(child: ChildProcess, pattern: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const line = seen.split('\n').find((l) => pattern.test(l));
      if (line) resolve(line);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${seen}`)));
  });
}

describe('the proxy process', () => {
  it('starts from PORT, HOST, UPSTREAM_URLS and LOG_LEVEL, serves, and stops on SIGTERM with exit 0', async () => {
    const child = run({ PORT: '0', HOST: '127.0.0.1', UPSTREAM_URLS: upstream.url, LOG_LEVEL: 'info' });
    const listening = JSON.parse(await waitForLine(child, /"msg":"listening"/)) as { url: string; cache: string };
    expect(listening.cache).toBe('memory');
    expect(output(child)).toContain('"msg":"admin API off: admin.token (ADMIN_TOKEN) is not set (/admin/* answers 404)"');
    expect((await fetchRaw(`${listening.url}/health`)).status).toBe(200);
    expect((await fetchRaw(`${listening.url}/ready`)).status).toBe(200);
    const block = await fetchRaw(`${listening.url}/extended/v2/blocks/1`);
    expect(block.status).toBe(200);
    expect(block.body.equals((await fetchRaw(`${upstream.url}/extended/v2/blocks/1`)).body)).toBe(true);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('finishes every in-flight request on SIGTERM, then exits 0', async () => {
    const child = run({ PORT: '0', HOST: '127.0.0.1', UPSTREAM_URLS: upstream.url, LOG_LEVEL: 'info' });
    const { url } = JSON.parse(await waitForLine(child, /"msg":"listening"/)) as { url: string };
    upstream.setDelay(600, /blocks\/(1[0-9])$/);
    const inFlight = Array.from({ length: 10 }, (_, i) => fetchRaw(`${url}/extended/v2/blocks/${10 + i}`));
    await expect.poll(() => upstream.count(/\/extended\/v2\/blocks\/1[0-9]$/)).toBe(10); // every request has reached the upstream
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    const responses = await Promise.all(inFlight);
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(await exited).toBe(0);
    upstream.setDelay(0);
  });

  /** Starts the proxy with `config` merged over the defaults (CONFIG_FILE); its URL. */
  async function startConfigured(config: object): Promise<{ child: ChildProcess; url: string }> {
    const dir = mkdtempSync(join(tmpdir(), 'scp-config-'));
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify(config));
    const child = run({ PORT: '0', HOST: '127.0.0.1', UPSTREAM_URLS: upstream.url, LOG_LEVEL: 'info', CONFIG_FILE: file });
    const { url } = JSON.parse(await waitForLine(child, /"msg":"listening"/)) as { url: string };
    rmSync(dir, { recursive: true });
    return { child, url };
  }

  /** Opens a WebSocket on /extended/v1/ws, sends SIGTERM, and gives the close code the client saw and the exit code. */
  async function closedOnSigterm(child: ChildProcess, url: string): Promise<{ code: number; exit: number | null }> {
    const { default: WebSocket } = await import('ws');
    const socket = new WebSocket(`${url.replace('http', 'ws')}/extended/v1/ws`);
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const closed = new Promise<number>((resolve) => socket.once('close', (code: number) => resolve(code)));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    return { code: await closed, exit: await exited };
  }

  it('closes open WebSocket tunnels on SIGTERM instead of waiting for them', async () => {
    const { child, url } = await startConfigured({ live: { fanout: { enabled: false } } });
    const { exit } = await closedOnSigterm(child, url);
    expect(exit).toBe(0);
  });

  it('closes fanned-out WebSocket clients on SIGTERM with 1001 (going away)', async () => {
    const { child, url } = await startConfigured({});
    expect(await closedOnSigterm(child, url)).toEqual({ code: 1001, exit: 0 });
  });

  describe("V8's heap, sized from the memory tier at start-up (issue 14)", () => {
    interface HeapLine {
      heapLimitMiB: number;
      flags: string[];
    }
    /** Starts the proxy with `config` merged over the defaults; its "heap" log line, command line and URL. */
    async function startWith(config: object, env: Record<string, string> = {}) {
      const dir = mkdtempSync(join(tmpdir(), 'scp-heap-'));
      const file = join(dir, 'config.json');
      writeFileSync(file, JSON.stringify(config));
      const child = run({ PORT: '0', HOST: '127.0.0.1', UPSTREAM_URLS: upstream.url, LOG_LEVEL: 'info', CONFIG_FILE: file, ...env });
      const listening = JSON.parse(await waitForLine(child, /"msg":"listening"/)) as { url: string };
      rmSync(dir, { recursive: true });
      const heapLine = output(child)
        .split('\n')
        .find((line) => line.includes('"msg":"heap"'));
      expect(heapLine, 'a "heap" line at start-up').toBeDefined();
      // The process the operator started (its pid, PID 1 in a container) is the one running with the flags.
      const commandLine = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0');
      return { child, url: listening.url, heap: JSON.parse(heapLine ?? '{}') as HeapLine, commandLine };
    }

    async function stopsWithExitZero(child: ChildProcess): Promise<void> {
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    }

    it('runs a 16 MiB tier with a 160 MiB old space and a 16 MiB semi-space, serves, and stops on SIGTERM with exit 0', async () => {
      const { child, url, heap, commandLine } = await startWith({ cache: { memory: { maxBytes: 16 * 2 ** 20 } } });
      expect(heap.flags).toEqual(['--max-old-space-size=160', '--max-semi-space-size=16', '--incremental-marking-soft-trigger=60']);
      expect(commandLine).toContain('--max-old-space-size=160');
      expect(commandLine).toContain('--max-semi-space-size=16');
      expect(commandLine).toContain('--incremental-marking-soft-trigger=60');
      // V8's own limit: the old space plus a young generation of three semi-spaces (what the
      // Kubernetes manifests' memory formula counts), not the GiBs it picks by itself.
      expect(heap.heapLimitMiB).toBe(160 + youngGenerationMiB(16));
      expect((await fetchRaw(`${url}/extended/v2/blocks/1`)).status).toBe(200);
      await stopsWithExitZero(child);
    });

    it('survives upstream answers whose parse would take more heap than a 16 MiB tier leaves (a 502, never an out-of-memory stop)', async () => {
      const { child, url } = await startWith({ cache: { memory: { maxBytes: 16 * 2 ** 20 } } });
      // 9.9 MiB of empty objects (under upstream.maxBodyBytes): JSON.parse would take over 200 MiB
      // of heap, more than this process's 160 MiB old space (it stopped the process with SIGABRT).
      const costly = `[${'{},'.repeat(Math.floor((9.9 * 2 ** 20) / 3))}{}]`;
      const ids = ['aa', 'bb', 'cc'].map((byte) => `0x${byte.repeat(32)}`);
      upstream.setFailing({ status: 200, body: costly }, /\/extended\/v1\/tx\/0x/);
      const statuses = await Promise.all(ids.map(async (id) => (await fetchRaw(`${url}/extended/v1/tx/${id}`)).status)).finally(() =>
        upstream.setFailing(null),
      );
      expect(statuses).toEqual([502, 502, 502]);
      expect(child.exitCode).toBeNull();
      expect((await fetchRaw(`${url}/health`)).status).toBe(200);
      await stopsWithExitZero(child);
    });

    it('takes heap.maxOldSpaceMiB over the derived size', async () => {
      const { child, heap } = await startWith({ heap: { maxOldSpaceMiB: 150 } });
      expect(heap.flags).toEqual(['--max-old-space-size=150', '--max-semi-space-size=16', '--incremental-marking-soft-trigger=60']);
      expect(heap.heapLimitMiB).toBe(150 + youngGenerationMiB(16));
      await stopsWithExitZero(child);
    });

    it('takes heap.maxSemiSpaceMiB as the semi-space (2 MiB: the default before issue 18)', async () => {
      const { child, heap, commandLine } = await startWith({ cache: { memory: { maxBytes: 16 * 2 ** 20 } }, heap: { maxSemiSpaceMiB: 2 } });
      expect(heap.flags).toEqual(['--max-old-space-size=160', '--max-semi-space-size=2', '--incremental-marking-soft-trigger=60']);
      expect(commandLine).toContain('--max-semi-space-size=2');
      expect(heap.heapLimitMiB).toBe(160 + youngGenerationMiB(2));
      await stopsWithExitZero(child);
    });

    it('leaves the start of marking to V8 with heap.markingStartPercent 0 (issue 18 sets 60 by default)', async () => {
      const { child, heap, commandLine } = await startWith({ cache: { memory: { maxBytes: 16 * 2 ** 20 } }, heap: { markingStartPercent: 0 } });
      expect(heap.flags).toEqual(['--max-old-space-size=160', '--max-semi-space-size=16']);
      expect(commandLine.join(' ')).not.toContain('marking');
      await stopsWithExitZero(child);
    });

    it("leaves the operator's own --max-semi-space-size in NODE_OPTIONS over heap.maxSemiSpaceMiB", async () => {
      const { child, heap, commandLine } = await startWith(
        { cache: { memory: { maxBytes: 16 * 2 ** 20 } }, heap: { maxSemiSpaceMiB: 2 } },
        { NODE_OPTIONS: '--max-semi-space-size=8' },
      );
      expect(heap.flags).toEqual(['--max-old-space-size=160', '--incremental-marking-soft-trigger=60', '--max-semi-space-size=8']);
      expect(commandLine).not.toContain('--max-semi-space-size=2');
      expect(heap.heapLimitMiB).toBe(160 + youngGenerationMiB(8));
      await stopsWithExitZero(child);
    });

    it("leaves the operator's own heap flag in NODE_OPTIONS alone and adds only the other", async () => {
      const { child, heap, commandLine } = await startWith({ cache: { memory: { maxBytes: 16 * 2 ** 20 } } }, { NODE_OPTIONS: '--max-old-space-size=200' });
      expect(heap.flags).toEqual(['--max-semi-space-size=16', '--incremental-marking-soft-trigger=60', '--max-old-space-size=200']);
      expect(commandLine).not.toContain('--max-old-space-size=160');
      expect(heap.heapLimitMiB).toBe(200 + youngGenerationMiB(16));
      await stopsWithExitZero(child);
    });
  });

  it('refuses a bad setting with a message naming it, exit code 2', async () => {
    const child = run({ UPSTREAM_URLS: 'not a url', PORT: '0' });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(2);
    expect(stderr).toContain('upstream.urls[0] (UPSTREAM_URLS)');
  });

  it('refuses an upstream URL with a path prefix at start-up, exit code 2, saying why', async () => {
    const child = run({ UPSTREAM_URLS: `${upstream.url}/api`, PORT: '0' });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(2);
    expect(stderr).toContain("upstream.urls[0] (UPSTREAM_URLS): must be an upstream's base URL without a path");
    expect(stderr).toContain('(got "/api")');
  });

  it('refuses a malformed API_KEYS_FILE at start-up, exit code 2, naming the file and the entry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'scp-keys-'));
    const file = join(dir, 'keys.json');
    writeFileSync(file, JSON.stringify([{ name: 'partner', sha256: 'not-a-hash' }]));
    const child = run({ UPSTREAM_URLS: upstream.url, PORT: '0', API_KEYS_FILE: file });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code).toBe(2);
    expect(stderr).toContain('apiKeys.0.sha256 (API_KEYS_FILE): must be the SHA-256 of the key as 64 hex digits');
    rmSync(dir, { recursive: true });
  });

  it('sends UPSTREAM_API_KEY as x-api-key and never logs it, nor ADMIN_TOKEN', async () => {
    upstream.resetCounts();
    const child = run({
      PORT: '0',
      HOST: '127.0.0.1',
      UPSTREAM_URLS: upstream.url,
      UPSTREAM_API_KEY: 'process-key-0xsecret',
      ADMIN_TOKEN: 'admin-token-0xsecret-0123456789',
      LOG_LEVEL: 'trace',
    });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const listening = JSON.parse(await waitForLine(child, /"msg":"listening"/)) as { url: string; adminUrl: string };
    expect((await fetchRaw(`${listening.url}/extended/v2/blocks/2`)).status).toBe(200);
    const stats = await fetchRaw(`${listening.adminUrl}/admin/cache`, { headers: { authorization: 'Bearer admin-token-0xsecret-0123456789' } });
    expect(stats.status).toBe(200);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    await exited;
    expect(upstream.count()).toBeGreaterThanOrEqual(2);
    expect(upstream.requests.every((r) => r.headers['x-api-key'] === 'process-key-0xsecret')).toBe(true);
    expect(output).toContain('"msg":"starting"');
    expect(output).not.toContain('0xsecret');
    expect(output).not.toContain('admin API off');
  });
});
