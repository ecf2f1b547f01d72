/**
 * Everything outside the 13 routes reaches the upstream unchanged and uncached: other
 * /extended routes, /v2 node RPC (also POST), unknown paths, and WebSockets.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw } from '../support/http.js';
import type { ProxyServer } from '../../src/composition-root.js';

let upstream: FakeUpstream;
let proxy: ProxyServer;

/** Opens a WebSocket through the proxy and returns it with a promise of the first reply to `message`. */
async function exchange(path: string, message: string): Promise<string> {
  const socket = new WebSocket(`${proxy.url.replace('http', 'ws')}${path}`);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const reply = new Promise<string>((resolve) => socket.once('message', (data) => resolve(data.toString())));
  socket.send(message);
  try {
    return await reply;
  } finally {
    socket.close();
  }
}

beforeAll(async () => {
  upstream = await startFakeUpstream();
  // The passthrough's suite: /v2/info is its example route, which the wider read surface (on by default) would cache;
  // its WebSockets are tunnels, which the fan-out (on by default) would replace.
  proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides: { surface: { enabled: false }, live: { fanout: { enabled: false } } } });
});
afterAll(async () => {
  await proxy.close();
  await upstream.close();
});

describe('passthrough', () => {
  it('forwards an uncached route every time, with the upstream status and body', async () => {
    upstream.resetCounts();
    const direct = await fetchRaw(`${upstream.url}/v2/info`);
    for (let i = 0; i < 3; i++) {
      const response = await fetchRaw(`${proxy.url}/v2/info`);
      expect(response.status).toBe(200);
      expect(response.body.equals(direct.body)).toBe(true);
      expect(response.headers.get('x-cache')).toBe('BYPASS');
    }
    expect(upstream.count('/v2/info')).toBe(4);
  });

  it('forwards unknown routes, so the upstream gives its own 404', async () => {
    const direct = await fetchRaw(`${upstream.url}/extended/v1/no-such-route`);
    const response = await fetchRaw(`${proxy.url}/extended/v1/no-such-route`);
    expect(response.status).toBe(404);
    expect(response.body.equals(direct.body)).toBe(true);
  });

  it('forwards POST /v2/transactions with its body', async () => {
    const payload = Buffer.from('0123456789abcdef'.repeat(64), 'hex');
    const response = await fetchRaw(`${proxy.url}/v2/transactions`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream' },
      body: payload,
    });
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body.toString())).toBe(`0x${createHash('sha256').update(payload).digest('hex')}`);
    const sent = upstream.requests.filter((r) => r.method === 'POST' && r.path === '/v2/transactions');
    expect(sent).toHaveLength(1);
  });

  it('forwards WebSocket upgrades on /extended/v1/ws both ways', async () => {
    const subscribe = '{"jsonrpc":"2.0","method":"subscribe","params":{"event":"block"}}';
    expect(await exchange('/extended/v1/ws', subscribe)).toBe(`echo:${subscribe}`);
    expect(upstream.requests.some((r) => r.method === 'UPGRADE' && r.path === '/extended/v1/ws')).toBe(true);
  });

  it('forwards WebSocket upgrades on /socket.io/', async () => {
    expect(await exchange('/socket.io/?EIO=4&transport=websocket', '40')).toBe('echo:40');
  });

  it('answers 502 in the upstream error shape when the upstream is down, with the request id', async () => {
    const down = await startFakeUpstream();
    const orphan = await startTestProxy({ upstreamUrls: [down.url], overrides: { surface: { enabled: false } } });
    await down.close();
    const response = await fetchRaw(`${orphan.url}/v2/info`, { headers: { 'x-request-id': 'pass-down' } });
    expect(response.status).toBe(502);
    expect(JSON.parse(response.body.toString())).toMatchObject({ statusCode: 502, error: 'Bad Gateway' });
    expect([response.headers.get('x-request-id'), response.headers.get('x-cache')]).toEqual(['pass-down', 'BYPASS']);
    await orphan.close();
  });

  it("answers with the request id it sent upstream, the client's or a new one", async () => {
    const echoed = await fetchRaw(`${proxy.url}/v2/info`, { headers: { 'x-request-id': 'pass-2' } });
    expect(echoed.headers.get('x-request-id')).toBe('pass-2');
    const fresh = await fetchRaw(`${proxy.url}/v2/info?fresh`);
    const sent = upstream.requests.filter((r) => r.url === '/v2/info?fresh').map((r) => r.headers['x-request-id']);
    expect(sent).toEqual([fresh.headers.get('x-request-id')]);
    expect(sent[0]).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('passthrough metrics', () => {
  it('counts passthrough requests as upstream requests with their latency', async () => {
    const before = await metricValue(proxy, 'stacks_proxy_upstream_requests_total', { route: 'passthrough', status: '200' });
    await fetchRaw(`${proxy.url}/v2/info`);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_requests_total', { route: 'passthrough', status: '200', upstream: upstream.url })).toBe(before + 1);
  });
});
