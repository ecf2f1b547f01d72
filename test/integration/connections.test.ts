/**
 * Connections a client can abuse, through real HTTP on raw sockets: pipelining, Expect,
 * unfinished heads, WebSocket handshakes and idle tunnels, and an upstream that answers a
 * large upload before it has read it.
 */
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { useCleanups } from '../support/cleanups.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { exchangeRaw, openSocket, parseResponses, readUntilClosed } from '../support/raw-socket.js';

const { defer, fakeUpstream } = useCleanups();

// Upgrades here test the passthrough's tunnel: the fan-out (on by default) would answer /extended/v1/ws itself.
const TUNNEL = { live: { fanout: { enabled: false } } };

async function proxyFor(upstreamUrl: string, overrides: Record<string, unknown> = {}) {
  const proxy = await startTestProxy({ upstreamUrls: [upstreamUrl], overrides: { ...TUNNEL, ...overrides } });
  defer(() => proxy.close());
  return proxy;
}

const UPGRADE_HEAD = (path: string): string =>
  `GET ${path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`;

describe('pipelining', () => {
  it('handles at most server.maxPipelinedRequests of one connection at a time, and answers all in order', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, { server: { maxPipelinedRequests: 4 } });
    upstream.setDelay(50, /^\/v2\/info/);
    upstream.resetCounts();
    const count = 40;
    const requests = Array.from(
      { length: count },
      (_, i) => `GET /v2/info?n=${i} HTTP/1.1\r\nHost: x\r\nX-Request-Id: p${i}\r\n${i === count - 1 ? 'Connection: close\r\n' : ''}\r\n`,
    );
    const answers = parseResponses(await exchangeRaw(proxy.port, requests.join('')));
    expect(answers.map((a) => a.status)).toEqual(Array(count).fill(200));
    expect(answers.map((a) => a.headers['x-request-id'])).toEqual(requests.map((_, i) => `p${i}`));
    expect(upstream.count()).toBe(count);
    expect(upstream.peakInFlight).toBe(4);
  });

  it('bounds pipelined misses of the read routes the same way', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, { server: { maxPipelinedRequests: 2 } });
    upstream.setDelay(50, /^\/extended\/v2\/blocks\//);
    upstream.resetCounts();
    const heights = Array.from({ length: 12 }, (_, i) => i + 1);
    const requests = heights.map(
      (h, i) => `GET /extended/v2/blocks/${h} HTTP/1.1\r\nHost: x\r\n${i === heights.length - 1 ? 'Connection: close\r\n' : ''}\r\n`,
    );
    const answers = parseResponses(await exchangeRaw(proxy.port, requests.join('')));
    expect(answers.map((a) => JSON.parse(a.body).height)).toEqual(heights);
    expect(upstream.peakInFlight).toBe(2);
  });
});

describe('Expect: 100-continue', () => {
  it('answers a GET with its answer alone, no interim 100 before it', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url);
    for (const path of ['/extended/v2/blocks/1', '/v2/info', '/health']) {
      const stream = await exchangeRaw(proxy.port, `GET ${path} HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`);
      expect(stream, path).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
      const [answer, ...more] = parseResponses(stream);
      expect(more, path).toEqual([]);
      expect(JSON.parse(answer?.body ?? ''), path).toBeTypeOf('object');
    }
  });

  it('sends the 100 to a POST with content, forwards the body and counts the passthrough answer', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url);
    const before = await metricValue(proxy, 'stacks_proxy_upstream_requests_total', { route: 'passthrough', status: '200' });
    const socket = await openSocket(proxy.port);
    const received = readUntilClosed(socket);
    socket.write(
      'POST /v2/transactions HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: 2\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n',
    );
    const interim = await new Promise<string>((resolve) => socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1'))));
    expect(interim).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    socket.write('\x00\x01');
    const answers = parseResponses((await received).slice(interim.length));
    expect(answers.map((a) => a.status)).toEqual([200]);
    expect(upstream.requests.filter((r) => r.method === 'POST').map((r) => r.headers.expect)).toEqual([undefined]);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_requests_total', { route: 'passthrough', status: '200' })).toBe(before + 1);
  });
});

describe('an upstream that answers a large upload early', () => {
  it('passes its 413 to the client and does not count a failure', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url);
    upstream.failNext(1, { status: 413, close: true }, /^\/v2\/transactions/);
    const body = Buffer.alloc(16 * 1024 * 1024, 7);
    const answer = await new Promise<{ status: number; body: string; connection?: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: proxy.port,
          path: '/v2/transactions',
          method: 'POST',
          headers: { 'content-type': 'application/octet-stream', 'content-length': body.length },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), connection: res.headers.connection }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    expect(answer.status).toBe(413);
    // The rest of the upload is not read: the connection closes after the answer.
    expect(answer.connection).toBe('close');
    expect(JSON.parse(answer.body)).toMatchObject({ statusCode: 413 });
    expect(await metricValue(proxy, 'stacks_proxy_upstream_requests_total', { route: 'passthrough', status: '413' })).toBe(1);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_requests_total', { route: 'passthrough', status: 'error' })).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { upstream: upstream.url })).toBe(0);
  });
});

describe('request heads', () => {
  it("closes a connection whose head never ends, an upgrade request's too", async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, { server: { headersTimeoutMs: 200 } });
    const socket = await openSocket(proxy.port);
    const received = readUntilClosed(socket);
    upstream.resetCounts();
    socket.write('GET /extended/v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n');
    expect(await received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(upstream.count()).toBe(0);
  });
});

describe('WebSocket passthrough', () => {
  it('answers an upgrade off the WebSocket paths with a 404 and closes, without asking the upstream', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url);
    upstream.resetCounts();
    for (const path of ['/v2/info', '/extended/v1/tx/0x00', '/extended/v1/wsx', '/nowhere']) {
      const stream = await exchangeRaw(proxy.port, UPGRADE_HEAD(path));
      const [answer] = parseResponses(stream);
      expect(answer?.status, path).toBe(404);
      expect(answer?.body, path).toBe(`{"message":"Route GET:${path} not found","error":"Not Found","statusCode":404}`);
    }
    expect(upstream.count()).toBe(0);
  });

  it('tunnels an upgrade whose path is decided onto a WebSocket path, with the decided path', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url);
    upstream.resetCounts();
    const socket = new WebSocket(`${proxy.url.replace('http', 'ws')}/extended/v1/x/%2e%2e/ws`);
    const reply = new Promise<string>((resolve) => socket.once('message', (data) => resolve(data.toString())));
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    socket.send('hi');
    expect(await reply).toBe('echo:hi');
    socket.close();
    expect(upstream.requests.map((r) => `${r.method} ${r.url}`)).toEqual(['UPGRADE /extended/v1/ws']);
  });

  it('answers 504 and closes when the upstream does not answer the upgrade in time', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, { passthrough: { websocketHandshakeTimeoutMs: 200 } });
    upstream.failNext(1, 'hang', /^\/extended\/v1\/ws/);
    const [answer] = parseResponses(await exchangeRaw(proxy.port, UPGRADE_HEAD('/extended/v1/ws')));
    expect(answer?.status).toBe(504);
    expect(answer?.body).toBe('{"statusCode":504,"error":"Gateway Timeout","message":"The upstream API did not answer in time"}');
  });

  it('closes a tunnel idle in both directions on both sides', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, { passthrough: { websocketIdleTimeoutMs: 300 } });
    const socket = new WebSocket(`${proxy.url.replace('http', 'ws')}/extended/v1/ws`);
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('open', () => resolve()));
    expect(upstream.openWebSockets).toBe(1);
    await closed;
    await expect.poll(() => upstream.openWebSockets).toBe(0);
  });
});
