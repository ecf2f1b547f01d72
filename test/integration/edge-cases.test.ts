/**
 * Edge cases found in review: odd upstream answers, races with new blocks, an upstream that
 * falls behind for one poll, breakers and tip polls, request ids, upgrades nobody forwards.
 */
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { useCleanups } from '../support/cleanups.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw } from '../support/http.js';
import type { ProxyServer } from '../../src/composition-root.js';

const { defer, fakeUpstream: fake } = useCleanups();

const openConnections = (proxy: ProxyServer) =>
  new Promise<number>((resolve, reject) => proxy.server.getConnections((error, count) => (error ? reject(error) : resolve(count))));

async function proxyFor(urls: string[], overrides: Record<string, unknown> = {}): Promise<ProxyServer> {
  const proxy = await startTestProxy({ upstreamUrls: urls, overrides });
  defer(() => proxy.close());
  return proxy;
}

/** A tiny upstream: the chain-tip poll answers; everything else comes from `answer`. */
async function scriptedUpstream(answer: (url: string) => { status: number; type: string; body: string }): Promise<string> {
  const server: Server = createServer((req, res) => {
    if (req.url === '/extended') {
      res.writeHead(200, { 'content-type': 'application/json', etag: '"0x01"' });
      res.end('{"chain_tip":{"block_height":1,"index_block_hash":"0x01","burn_block_height":1}}');
      return;
    }
    const { status, type, body } = answer(req.url ?? '');
    res.writeHead(status, { 'content-type': type }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  defer(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

describe('upstream answers that are not what they claim', () => {
  it('never caches a 200 that is not JSON (an error page from something in between)', async () => {
    let calls = 0;
    const url = await scriptedUpstream(() => {
      calls++;
      return { status: 200, type: 'text/html', body: '<html>maintenance</html>' };
    });
    // A high breaker threshold, so the second request reaches the upstream too.
    const proxy = await proxyFor([url], { upstream: { retryBackoffMs: 1, failureThreshold: 100 } });
    calls = 0;
    const first = await fetchRaw(`${proxy.url}/extended/v2/mempool/fees`);
    expect(first.status).toBe(502);
    expect(calls).toBe(2); // the retry budget: two sends per client request
    await fetchRaw(`${proxy.url}/extended/v2/mempool/fees`);
    expect(calls).toBe(4); // nothing was cached
  });
});

describe('new blocks while a request is in flight', () => {
  it('stamps an answer with the tip from before it was asked for, so a block that lands meanwhile makes it stale', async () => {
    const upstream = await fake();
    const proxy = await proxyFor([upstream.url]);
    upstream.setDelay(300, /blocks\/latest/);
    const pending = fetchRaw(`${proxy.url}/extended/v2/blocks/latest`);
    await expect.poll(() => upstream.count('/extended/v2/blocks/latest')).toBe(1); // it reached the upstream
    upstream.advanceTip();
    await proxy.tracker.pollOnce();
    expect((await pending).status).toBe(200);
    upstream.setDelay(0);
    // Validated under the old tip: the next request goes back to the upstream.
    const next = await fetchRaw(`${proxy.url}/extended/v2/blocks/latest`);
    // The upstream computed the answer after the block landed, so its ETag still holds: a 304.
    expect(next.headers.get('x-cache')).toBe('REVALIDATED');
    expect((JSON.parse(next.body.toString()) as { height: number }).height).toBe(proxy.tracker.tip?.height);
  });
});

describe('several upstreams and the chain tip', () => {
  it('does not take a leading upstream missing one poll for a reorg', async () => {
    const [leader, follower] = [await fake(), await fake()];
    const proxy = await proxyFor([follower.url, leader.url]);
    leader.advanceTip(2);
    await proxy.tracker.pollOnce();
    expect(proxy.tracker.tip?.height).toBe(leader.tip().height);
    leader.setFailing('reset', /^\/extended$/);
    await proxy.tracker.pollOnce();
    expect(proxy.tracker.tip?.height).toBe(leader.tip().height);
    expect(await metricValue(proxy, 'stacks_proxy_reorgs_total')).toBe(0);
  });

  it('keeps an open breaker open while its cool-down runs, even when the tip poll succeeds', async () => {
    const url = await scriptedUpstream(() => ({ status: 500, type: 'application/json', body: '{"statusCode":500}' }));
    const proxy = await proxyFor([url], { upstream: { cooldownMs: 60_000, retryBackoffMs: 1, failureThreshold: 2 } });
    await fetchRaw(`${proxy.url}/extended/v2/blocks/1`); // its two failing attempts open it
    expect(await metricValue(proxy, 'stacks_proxy_upstream_breaker_open', { upstream: url })).toBe(1);
    await proxy.tracker.pollOnce();
    expect(await metricValue(proxy, 'stacks_proxy_upstream_breaker_open', { upstream: url })).toBe(1);
  });
});

describe('request ids', () => {
  it('echoes X-Request-Id on cached answers, rejected input and passthrough, and makes one up otherwise', async () => {
    const upstream = await fake();
    const proxy = await proxyFor([upstream.url]);
    for (const path of ['/extended/v2/blocks/1', '/extended/v2/blocks/1', '/extended/v2/blocks/abc', '/v2/info']) {
      const response = await fetchRaw(proxy.url + path, { headers: { 'x-request-id': 'trace-123' } });
      expect(response.headers.get('x-request-id'), path).toBe('trace-123');
    }
    const generated = await fetchRaw(`${proxy.url}/extended/v2/blocks/1`);
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('WebSocket upgrades when WebSockets are not forwarded', () => {
  it('refuses them without letting a client reset crash the process', async () => {
    const upstream = await fake();
    const proxy = await proxyFor([upstream.url], { passthrough: { websockets: false }, live: { fanout: { enabled: false } } });
    const socket = connect(proxy.port, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const answered = new Promise<string>((resolve) => socket.once('data', (chunk: Buffer) => resolve(chunk.toString())));
    socket.write(
      'GET /extended/v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
    );
    // Not upgraded: the upstream's 404, and nothing reaches the upstream.
    expect(await answered).toMatch(/^HTTP\/1\.1 404 Not Found\r\n/);
    expect(upstream.count('/extended/v1/ws')).toBe(0);
    socket.resetAndDestroy();
    // Once the proxy holds no connection, it has handled the reset (and an error from it would have surfaced).
    await expect.poll(() => openConnections(proxy)).toBe(0);
    expect((await fetchRaw(`${proxy.url}/health`)).status).toBe(200);
  });
});
