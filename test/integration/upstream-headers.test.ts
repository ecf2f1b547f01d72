/**
 * What of a client's request reaches the upstream: on misses only its request id; on the
 * passthrough and WebSocket upgrades an allow-listed set of its headers, never its
 * credentials, cookies or hop-by-hop headers, plus the operator's headers.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createPassthrough } from '../../src/http/passthrough.js';
import { noopTelemetry } from '../../src/telemetry/telemetry.js';
import { PassthroughClient } from '../../src/upstream/passthrough-client.js';
import { RECORDED, type FakeUpstream } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw } from '../support/http.js';
import { parseResponses, rawGet } from '../support/raw-socket.js';

const { defer, fakeUpstream } = useCleanups();

const CLIENT_SECRETS = { cookie: 'session=s3cr3t', authorization: 'Bearer client-token', 'x-api-key': 'client-key', 'proxy-authorization': 'Basic eDp5' };

/** The block_hash of the block RECORDED.confirmedTxId was mined in, read from the upstream directly (after the counts). */
async function blockHashOf(upstream: FakeUpstream): Promise<string> {
  const tx = await fetchRaw(`${upstream.url}/extended/v1/tx/${RECORDED.confirmedTxId}`);
  return (JSON.parse(tx.body.toString()) as { block_hash: string }).block_hash;
}

async function proxyFor(upstreamUrl: string) {
  // WebSockets here are the passthrough's tunnels (the fan-out, on by default, holds its own link).
  const proxy = await startTestProxy({ upstreamUrls: [upstreamUrl], overrides: { live: { fanout: { enabled: false } } } });
  defer(() => proxy.close());
  return proxy;
}

describe('misses on the 13 routes', () => {
  it("send the upstream the client's request id and nothing else of its headers", async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url);
    upstream.resetCounts();
    const response = await fetchRaw(`${proxy.url}/extended/v1/tx/${RECORDED.confirmedTxId}`, {
      headers: { ...CLIENT_SECRETS, 'x-request-id': 'miss-1', 'accept-language': 'fr', 'x-custom': '1' },
    });
    expect(response.headers.get('x-cache')).toBe('MISS');
    // The miss, and the tracker's check that the block the transaction names is canonical (no request id: it is shared).
    const [sent, check, ...more] = upstream.requests;
    expect(more).toEqual([]);
    expect(sent?.headers['x-request-id']).toBe('miss-1');
    expect([check?.path, check?.headers['x-request-id']]).toEqual([`/extended/v2/blocks/${await blockHashOf(upstream)}`, undefined]);
    for (const request of [sent, check]) {
      for (const name of [...Object.keys(CLIENT_SECRETS), 'accept-language', 'x-custom']) expect(request?.headers[name], name).toBeUndefined();
    }
  });

  it('send a generated request id when the client sent none, the one its answer carries', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url);
    upstream.resetCounts();
    const response = await fetchRaw(`${proxy.url}/extended/v1/tx/multiple?tx_id=${RECORDED.confirmedTxId}`);
    expect(response.status).toBe(200);
    const misses = upstream.requests.filter((r) => r.path === '/extended/v1/tx/multiple');
    expect(misses.map((r) => r.headers['x-request-id'])).toEqual([response.headers.get('x-request-id')]);
  });
});

describe('the passthrough', () => {
  it('sends the allow-listed headers, the request id and X-Forwarded-*, and no credentials, cookies or hop-by-hop headers', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url);
    upstream.resetCounts();
    const answer = await rawGet(proxy.port, '/v2/info', {
      ...CLIENT_SECRETS,
      'X-Request-Id': 'pass-1',
      Accept: 'application/json',
      'User-Agent': 'client/1',
      'Accept-Language': 'en',
      'X-Forwarded-For': '203.0.113.9',
      'Keep-Alive': 'timeout=99',
      TE: 'trailers',
      'X-Custom': 'not forwarded',
      Expect: '100-continue',
    });
    expect(parseResponses(answer)[0]?.status).toBe(200);
    const [sent] = upstream.requests;
    expect(sent?.headers).toEqual({
      host: new URL(upstream.url).host,
      accept: 'application/json',
      'user-agent': 'client/1',
      'accept-language': 'en',
      'x-forwarded-for': '203.0.113.9, 127.0.0.1',
      'x-forwarded-proto': 'http',
      'x-forwarded-host': 'proxy.test',
      'x-request-id': 'pass-1',
      connection: 'keep-alive',
    });
  });

  it("sends the operator's headers for the chosen upstream, over the client's", async () => {
    const upstream = await fakeUpstream();
    const origins: string[] = [];
    const client = new PassthroughClient({ connectTimeoutMs: 1000, answerDeadlineMs: 5000 });
    defer(() => client.close());
    const passthrough = createPassthrough({
      target: () => upstream.url,
      allowedPrefixes: ['/v2/'],
      websockets: false,
      websocketPrefixes: [],
      websocketHandshakeTimeoutMs: 1000,
      websocketIdleTimeoutMs: 1000,
      timeoutMs: 5000,
      client,
      answerDeadlineMs: 5000,
      telemetry: noopTelemetry,
      operatorHeaders: (origin) => {
        origins.push(origin);
        return { 'x-api-key': 'operator-key' };
      },
    });
    const server = createServer((req, res) => passthrough.forward(req, res, 'op-1'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    defer(() => new Promise((resolve) => server.close(resolve)));
    server.on('connection', (socket) => defer(async () => socket.destroy()));
    upstream.resetCounts();
    const { port } = server.address() as AddressInfo;
    expect((await fetchRaw(`http://127.0.0.1:${port}/v2/info`, { headers: { 'x-api-key': 'client-key' } })).status).toBe(200);
    expect(upstream.requests[0]?.headers['x-api-key']).toBe('operator-key');
    expect(upstream.requests[0]?.headers['x-request-id']).toBe('op-1');
    expect(origins).toEqual([upstream.url]);
  });
});

describe('WebSocket upgrades', () => {
  it('send the handshake, the request id and no credentials or cookies', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url);
    upstream.resetCounts();
    const socket = new WebSocket(`${proxy.url.replace('http', 'ws')}/extended/v1/ws`, { headers: { ...CLIENT_SECRETS, 'x-request-id': 'ws-1' } });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    socket.close();
    const [sent] = upstream.requests.filter((r) => r.method === 'UPGRADE');
    expect(sent?.headers['x-request-id']).toBe('ws-1');
    expect(sent?.headers.upgrade).toBe('websocket');
    expect(sent?.headers['sec-websocket-version']).toBe('13');
    expect(typeof sent?.headers['sec-websocket-key']).toBe('string');
    for (const name of Object.keys(CLIENT_SECRETS)) expect(sent?.headers[name], name).toBeUndefined();
  });
});

describe("the operator's credentials, end to end", () => {
  it("go with passthrough requests and WebSocket upgrades as with reads, replacing the client's X-API-Key", async () => {
    const upstream = await fakeUpstream();
    const proxy = await startTestProxy({
      upstreamUrls: [upstream.url],
      overrides: { upstream: { apiKey: 'operator-key', headers: { 'x-tenant': 'dapp-1' } }, live: { fanout: { enabled: false } } },
    });
    defer(() => proxy.close());
    upstream.resetCounts();
    expect((await fetchRaw(`${proxy.url}/v2/info`, { headers: { 'x-api-key': 'client-key' } })).status).toBe(200);
    const socket = new WebSocket(`${proxy.url.replace('http', 'ws')}/extended/v1/ws`, { headers: { 'x-api-key': 'client-key' } });
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    socket.close();
    await fetchRaw(`${proxy.url}/extended/v1/tx/${RECORDED.confirmedTxId}`);
    const sent = upstream.requests.filter((r) => r.path !== '/extended').map((r) => [r.method, r.path, r.headers['x-api-key'], r.headers['x-tenant']]);
    expect(sent).toEqual([
      ['GET', '/v2/info', 'operator-key', 'dapp-1'],
      ['UPGRADE', '/extended/v1/ws', 'operator-key', 'dapp-1'],
      ['GET', `/extended/v1/tx/${RECORDED.confirmedTxId}`, 'operator-key', 'dapp-1'],
      // The tracker's check of the block the transaction names carries them too.
      ['GET', `/extended/v2/blocks/${await blockHashOf(upstream)}`, 'operator-key', 'dapp-1'],
    ]);
  });
});
