/**
 * The package entry as a team with an Express app meets it: `createProxy(config)` mounted in a
 * real Express 5 app, at `/` and under a prefix, compared byte for byte with the standalone
 * server on the same fake upstream; what it leaves to the app (`next()`); its answers before the
 * tip is known; environment variables ignored; WebSockets through the app's server; and, in a
 * child process importing 'stacks-cache-proxy' by its package name, that close() leaves nothing
 * keeping the process alive.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createProxy, type EmbeddedProxy } from '../../src/index.js';
import type { ProxyServer } from '../../src/composition-root.js';
import { projectRoot } from '../../src/paths.js';
import { freePort, startFakeUpstream, testConfig, type FakeUpstream } from '../../testkit/index.js';
import { fetchRaw, type RawResponse } from '../support/http.js';
import { startTestProxy } from '../support/proxy-harness.js';

const root = projectRoot();
/** Headers that differ between any two answers (or that the app adds), left out of byte comparisons. */
const VARYING = new Set(['date', 'x-request-id', 'x-powered-by', 'connection', 'keep-alive']);

let upstream: FakeUpstream;
let standalone: ProxyServer;
let proxy: EmbeddedProxy;
/** The app with the proxy mounted at `/`, and the one with it under `/stacks`. */
let atRoot: string;
let underPrefix: string;
let appServers: Server[] = [];

/** An Express 5 app with `mount` before its own routes and a 404 of its own after. */
async function startApp(mount: (app: express.Express) => void): Promise<{ url: string; server: Server }> {
  const app = express();
  app.get('/mine', (_req, res) => void res.type('text/plain').send('the app'));
  mount(app);
  app.get('/stacks/mine', (_req, res) => void res.type('text/plain').send('the app, under the prefix'));
  app.use((req, res) => void res.status(418).type('text/plain').send(`the app's own 404 for ${req.url}`));
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  appServers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/** The settings the standalone server under test uses, as createProxy takes them (no ports: it opens none). */
const settingsFor = (urls: string[], overrides: Record<string, unknown> = {}) => testConfig({ upstreamUrls: urls, overrides });

beforeAll(async () => {
  upstream = await startFakeUpstream();
  standalone = await startTestProxy({ upstreamUrls: [upstream.url] });
  proxy = await createProxy(settingsFor([upstream.url]));
  atRoot = (await startApp((app) => app.use(proxy.middleware))).url;
  underPrefix = (await startApp((app) => app.use('/stacks', proxy.middleware))).url;
});
afterAll(async () => {
  await Promise.all(appServers.map(closeServer));
  appServers = [];
  await proxy?.close();
  await standalone?.close();
  await upstream?.close();
});

/** Status, headers (less the varying ones) and body bytes. */
function comparable(answer: RawResponse) {
  const headers = [...answer.headers.entries()].filter(([name]) => !VARYING.has(name));
  return { status: answer.status, headers, body: answer.body.toString('base64') };
}

describe('createProxy: the middleware in an Express 5 app', () => {
  it('answers the cached routes with the same bytes as the standalone server, mounted at / and under a prefix, MISS then HIT', async () => {
    for (const path of ['/extended/v2/blocks/3', '/extended/v1/block/by_height/4', '/extended/v2/blocks/3?x=1']) {
      const expected = [await fetchRaw(standalone.url + path), await fetchRaw(standalone.url + path)].map(comparable);
      const mounted = [await fetchRaw(atRoot + path), await fetchRaw(atRoot + path)].map(comparable);
      expect(mounted, path).toEqual(expected);
      // The prefix app shares the embedded proxy's cache: HIT at once, the bytes of the standalone's HIT.
      expect(comparable(await fetchRaw(`${underPrefix}/stacks${path}`)), path).toEqual(expected[1]);
    }
  });

  it('leaves the app its own routes and everything off the passthrough allow-list, with the URL as it came (next())', async () => {
    const before = upstream.requests.length;
    expect((await fetchRaw(`${atRoot}/mine`)).body.toString()).toBe('the app');
    expect((await fetchRaw(`${underPrefix}/stacks/mine`)).body.toString()).toBe('the app, under the prefix');
    const offList = await fetchRaw(`${atRoot}/not-the-proxys/..%2fx?y=1`);
    expect(offList.status).toBe(418);
    expect(offList.body.toString()).toBe("the app's own 404 for /not-the-proxys/..%2fx?y=1");
    // A target the standalone server refuses (malformed percent-encoding) is not the proxy's to answer here either.
    const refused = await fetchRaw(`${underPrefix}/stacks/elsewhere%zz`);
    expect(refused.status).toBe(418);
    expect(upstream.requests.length).toBe(before);
  });

  it('forwards the passthrough allow-list to the upstream as the standalone server does (prefix stripped)', async () => {
    const expected = comparable(await fetchRaw(`${standalone.url}/v2/info`));
    upstream.resetCounts();
    expect(comparable(await fetchRaw(`${underPrefix}/stacks/v2/info`))).toEqual(expected);
    expect(upstream.count('/v2/info')).toBe(1);
  });

  it('with passthrough off, answers only the cached routes and own endpoints; the rest goes to next()', async () => {
    const closed = await createProxy(settingsFor([upstream.url], { passthrough: { enabled: false } }));
    const { url, server } = await startApp((app) => app.use('/stacks', closed.middleware));
    try {
      upstream.resetCounts();
      const passthroughPath = await fetchRaw(`${url}/stacks/v2/info`);
      expect(passthroughPath.status).toBe(418);
      expect(upstream.count('/v2/info')).toBe(0);
      expect((await fetchRaw(`${url}/stacks/extended/v2/blocks/5`)).status).toBe(200);
      expect(JSON.parse((await fetchRaw(`${url}/stacks/health`)).body.toString())).toEqual({ status: 'ok' });
    } finally {
      await closeServer(server);
      await closed.close();
    }
  });

  it('before the tip is known answers as the standalone server does at that moment', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const deadStandalone = await startTestProxy({ upstreamUrls: [dead] });
    const deadProxy = await createProxy(settingsFor([dead]));
    const { url, server } = await startApp((app) => app.use(deadProxy.middleware));
    try {
      for (const path of ['/ready', '/extended/v2/blocks/1', '/extended/v1/tx/mempool']) {
        const expected = comparable(await fetchRaw(deadStandalone.url + path));
        expect(expected.status, path).toBeGreaterThanOrEqual(500);
        expect(comparable(await fetchRaw(url + path)), path).toEqual(expected);
      }
    } finally {
      await closeServer(server);
      await deadProxy.close();
      await deadStandalone.close();
    }
  });

  it('reads no environment variable: only its argument', async () => {
    const saved = { UPSTREAM_URLS: process.env.UPSTREAM_URLS, PORT: process.env.PORT, LOG_LEVEL: process.env.LOG_LEVEL };
    // Read, these would fail the start-up (PORT is not an integer) or point it elsewhere.
    process.env.UPSTREAM_URLS = 'http://127.0.0.1:1';
    process.env.PORT = 'not-a-port';
    process.env.LOG_LEVEL = 'no-such-level';
    try {
      const embedded = await createProxy({ upstream: { urls: [upstream.url] }, logLevel: 'silent', live: { push: { enabled: false } } });
      expect(embedded.config.upstream.urls).toEqual([upstream.url]);
      expect(embedded.config.server.port).toBe(8080);
      expect(embedded.config.logLevel).toBe('silent');
      await embedded.close();
    } finally {
      for (const [name, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('refuses settings the schema refuses, naming the key', async () => {
    await expect(createProxy({ upstream: { urls: ['not a url'] } })).rejects.toThrow(/upstream\.urls\[0\]/);
    await expect(createProxy({ server: { port: -1 } })).rejects.toThrow(/server\.port/);
  });

  it("serves WebSockets through the app's server (upgrade), and close() ends them with 1001", async () => {
    const live = await createProxy(settingsFor([upstream.url]));
    const { url, server } = await startApp((app) => app.use('/stacks', live.middleware));
    server.on('upgrade', (req, socket, head) => {
      req.url = (req.url ?? '').replace(/^\/stacks/, '');
      live.upgrade(req, socket, head);
    });
    const ws = new WebSocket(`${url.replace('http', 'ws')}/stacks/extended/v1/ws`);
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const reply = new Promise<string>((resolve) => ws.once('message', (data: Buffer) => resolve(data.toString())));
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscribe', params: { event: 'block' } }));
    expect(JSON.parse(await reply)).toMatchObject({ jsonrpc: '2.0', id: 1 });
    await live.close();
    expect(await closed).toBe(1001);
    await closeServer(server);
  });
});

describe("import { createProxy } from 'stacks-cache-proxy'", () => {
  it('resolves through package.json exports; after close() nothing keeps the process alive', async () => {
    // The child mounts the proxy in an Express app, reads one route through it, closes both
    // and then simply returns: the process must end by itself (no timer, socket or pool left).
    const script = `
      import express from 'express';
      import { createProxy } from 'stacks-cache-proxy';
      const proxy = await createProxy({ upstream: { urls: [${JSON.stringify(upstream.url)}] }, logLevel: 'silent' });
      const app = express();
      app.use('/stacks', proxy.middleware);
      const server = app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      const answer = await fetch('http://127.0.0.1:' + server.address().port + '/stacks/extended/v2/blocks/2', { headers: { connection: 'close' } });
      console.log('status', answer.status, (await answer.json()).height);
      await new Promise((resolve) => server.close(resolve));
      await proxy.close();
      console.log('closed');
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exit = await new Promise<number | null>((resolve) => {
      const guard = setTimeout(() => {
        child.kill('SIGKILL');
        resolve(-1);
      }, 20_000);
      child.once('exit', (code) => {
        clearTimeout(guard);
        resolve(code);
      });
    });
    expect(out).toContain('status 200 2');
    expect(out).toContain('closed');
    expect(exit, `the child was still alive 20 s in, or failed:\n${out}`).toBe(0);
  }, 60_000);
});
