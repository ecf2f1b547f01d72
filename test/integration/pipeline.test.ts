/**
 * The request pipeline, end to end over real HTTP: read route, own endpoint, passthrough,
 * local 404, in that order; every answer carries a request id.
 */
import { describe, expect, it } from 'vitest';
import { useCleanups } from '../support/cleanups.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw, getLiteralPath } from '../support/http.js';
import type { ProxyServer } from '../../src/composition-root.js';

const { defer, fakeUpstream } = useCleanups();

async function proxyFor(upstreamUrl: string, passthrough: boolean): Promise<ProxyServer> {
  const proxy = await startTestProxy({ upstreamUrls: [upstreamUrl], overrides: { passthrough: { enabled: passthrough }, surface: { enabled: false } } });
  defer(() => proxy.close());
  return proxy;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('own endpoints', () => {
  it("carry X-Request-Id: the client's when it sends one, a new one otherwise", async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, true);
    // The public port's and the admin listener's (which alone serves /metrics by default).
    const endpoints = [`${proxy.url}/health`, `${proxy.url}/ready`, `${proxy.adminUrl}/health`, `${proxy.adminUrl}/ready`, `${proxy.adminUrl}/metrics`];
    for (const path of endpoints) {
      const echoed = await fetchRaw(path, { headers: { 'x-request-id': 'probe-7' } });
      expect(echoed.status, path).toBe(200);
      expect(echoed.headers.get('x-request-id'), path).toBe('probe-7');
      expect((await fetchRaw(path)).headers.get('x-request-id'), path).toMatch(UUID);
    }
  });

  it('answer /health with its JSON, and HEAD with the same headers and no body', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, true);
    const get = await fetchRaw(`${proxy.url}/health`);
    expect(get.body.toString()).toBe('{"status":"ok"}');
    expect(get.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const head = await fetchRaw(`${proxy.url}/health`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('15');
    expect(head.body.length).toBe(0);
  });

  it('are neither sent upstream nor counted as client requests', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, true);
    upstream.resetCounts();
    const counted = await metricValue(proxy, 'stacks_proxy_http_requests_total');
    for (const path of ['/health', '/ready', '/health?verbose=1']) expect((await fetchRaw(proxy.url + path)).status, path).toBe(200);
    for (const path of ['/health', '/ready', '/metrics']) expect((await fetchRaw(proxy.adminUrl + path)).status, path).toBe(200);
    expect(await metricValue(proxy, 'stacks_proxy_http_requests_total')).toBe(counted);
    expect(upstream.count()).toBe(0);
  });

  it("answer GET and HEAD on their exact paths only; anything else is off the passthrough's allow-list: a local 404", async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, true);
    upstream.resetCounts();
    for (const [method, path] of [
      ['POST', '/health'],
      ['GET', '/health/'],
      ['GET', '/HEALTH'],
    ] as const) {
      const response = await fetchRaw(proxy.url + path, { method });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body.toString(), `${method} ${path}`).toBe(`{"message":"Route ${method}:${path} not found","error":"Not Found","statusCode":404}`);
      expect(response.headers.get('x-cache'), `${method} ${path}`).toBeNull();
    }
    expect(upstream.count()).toBe(0);
  });
});

describe('without the passthrough', () => {
  it("answers an unknown path with the upstream's 404, quoting method and target as sent, and asks no upstream", async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, false);
    upstream.resetCounts();
    const get = await getLiteralPath(proxy.url, '/x?a=1&b=%zz');
    expect(get.status).toBe(404);
    expect(get.body.toString()).toBe('{"message":"Route GET:/x?a=1&b=%zz not found","error":"Not Found","statusCode":404}');
    expect(get.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(get.headers.get('x-request-id')).toMatch(UUID);
    expect(get.headers.get('x-cache')).toBeNull();
    const post = await fetchRaw(`${proxy.url}/v2/transactions`, { method: 'POST', body: '00' });
    expect(post.status).toBe(404);
    expect(post.body.toString()).toBe('{"message":"Route POST:/v2/transactions not found","error":"Not Found","statusCode":404}');
    expect(upstream.count()).toBe(0);
  });

  it('still serves the read routes and its own endpoints, and answers OPTIONS on a read route with the 404', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, false);
    expect((await fetchRaw(`${proxy.url}/extended/v2/blocks/1`)).status).toBe(200);
    expect((await fetchRaw(`${proxy.url}/health`)).status).toBe(200);
    const options = await fetchRaw(`${proxy.url}/extended/v2/blocks/1`, { method: 'OPTIONS' });
    expect(options.status).toBe(404);
    expect(options.body.toString()).toBe('{"message":"Route OPTIONS:/extended/v2/blocks/1 not found","error":"Not Found","statusCode":404}');
  });

  it('counts and logs the 404 as a client request', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, false);
    const labels = { route: 'passthrough', method: 'GET', status: '404', cache: 'NONE' };
    const before = await metricValue(proxy, 'stacks_proxy_http_requests_total', labels);
    await fetchRaw(`${proxy.url}/nowhere`);
    await expect.poll(() => metricValue(proxy, 'stacks_proxy_http_requests_total', labels)).toBe(before + 1);
  });
});

describe('with the passthrough', () => {
  it('marks answers X-Cache: BYPASS and gives them the request id', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, true);
    const response = await fetchRaw(`${proxy.url}/v2/info`, { headers: { 'x-request-id': 'trace-9' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-cache')).toBe('BYPASS');
    expect(response.headers.get('x-request-id')).toBe('trace-9');
  });

  it('answers a failed passthrough with the 502 of the failure table, request id included', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, true);
    upstream.setFailing('reset', /^\/v2\/info/);
    const response = await fetchRaw(`${proxy.url}/v2/info`, { headers: { 'x-request-id': 'trace-10' } });
    expect(response.status).toBe(502);
    expect(response.body.toString()).toBe('{"statusCode":502,"error":"Bad Gateway","message":"The upstream API is unavailable"}');
    expect(response.headers.get('x-cache')).toBe('BYPASS');
    expect(response.headers.get('x-request-id')).toBe('trace-10');
  });

  it('leaves the read routes to the cache: a second read is a hit with no upstream request', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url, true);
    await fetchRaw(`${proxy.url}/extended/v2/blocks/1`);
    upstream.resetCounts();
    const second = await fetchRaw(`${proxy.url}/extended/v2/blocks/1`);
    expect(second.headers.get('x-cache')).toBe('HIT');
    expect(upstream.count()).toBe(0);
  });
});
