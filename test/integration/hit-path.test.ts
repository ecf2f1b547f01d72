/**
 * The hit path's shortcuts (issue 10) change no answer: a URL's decided target, route and
 * validated request are memoized per URL, a hit and a miss are written by one writer, and a
 * request answered synchronously is still counted once. Over real HTTP and raw sockets.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { RECORDED } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { fetchRaw, getLiteralPath } from '../support/http.js';
import type { ProxyServer } from '../../src/composition-root.js';

const { defer, fakeUpstream } = useCleanups();

async function proxyFor(upstreamUrl: string): Promise<ProxyServer> {
  const proxy = await startTestProxy({ upstreamUrls: [upstreamUrl] });
  defer(() => proxy.close());
  return proxy;
}

/** One GET on a fresh connection; the raw response bytes as received. */
function rawGet(baseUrl: string, path: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    });
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('error', reject);
  });
}

/** What may differ between two answers of the same entry: when and how it was served. */
const normalized = (raw: string): string =>
  raw
    .replace(/^x-cache: (HIT|MISS)\r$/im, 'x-cache: *\r')
    .replace(/^age: \d+\r$/im, 'age: *\r')
    .replace(/^x-request-id: [^\r]*\r$/im, 'x-request-id: *\r')
    .replace(/^date: [^\r]*\r$/im, 'date: *\r');

describe('the hit path', () => {
  it('writes a hit byte for byte as the miss that stored it, but for X-Cache, Age and the request id', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url);
    for (const path of [`/extended/v1/tx/${RECORDED.confirmedTxId}`, '/extended/v2/blocks/1', `/extended/v1/tx/${RECORDED.unknownTxId}`]) {
      const miss = await rawGet(proxy.url, path);
      const hit = await rawGet(proxy.url, path);
      expect(miss, path).toMatch(/^x-cache: MISS\r$/im);
      expect(hit, path).toMatch(/^x-cache: HIT\r$/im);
      expect(normalized(hit), path).toBe(normalized(miss));
    }
  });

  it('answers a memoized URL per request: the same URL refused, redirected, then a 405 for a write, each time', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url);
    upstream.resetCounts();
    const bad = '/extended/v1/tx/0x12';
    const first = await fetchRaw(proxy.url + bad);
    const again = await fetchRaw(proxy.url + bad);
    expect(first.status).toBe(400);
    expect(again.status).toBe(400);
    expect(again.body.toString()).toBe(first.body.toString());
    const post = await fetchRaw(proxy.url + bad, { method: 'POST' });
    expect(post.status).toBe(405);
    const malformed = await getLiteralPath(proxy.url, '/extended/v1/tx/%zz');
    const malformedAgain = await getLiteralPath(proxy.url, '/extended/v1/tx/%zz');
    expect(malformed.status).toBe(400);
    expect(malformedAgain.body.toString()).toBe(malformed.body.toString());
    expect(upstream.count()).toBe(0);
  });

  it('keeps answering right after a flood of distinct URLs has cycled the memos', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url);
    const path = `/extended/v1/tx/${RECORDED.confirmedTxId}`;
    expect((await fetchRaw(proxy.url + path)).status).toBe(200);
    // More distinct (invalid, never-upstream) URLs than the memos hold.
    for (let i = 0; i < 5000; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => fetchRaw(`${proxy.url}/extended/v2/blocks/x${i + j}`)));
    }
    upstream.resetCounts();
    const hit = await fetchRaw(proxy.url + path);
    expect(hit.status).toBe(200);
    expect(hit.headers.get('x-cache')).toBe('HIT');
    expect(upstream.count()).toBe(0);
  });

  it('counts each request once, hits written synchronously included', async () => {
    const upstream = await fakeUpstream();
    const proxy = await proxyFor(upstream.url);
    const path = '/extended/v2/blocks/1';
    const labels = { route: 'block', cache: 'HIT', status: '200', method: 'GET' };
    await fetchRaw(proxy.url + path);
    const before = await metricValue(proxy, 'stacks_proxy_http_requests_total', labels);
    for (let i = 0; i < 5; i++) expect((await fetchRaw(proxy.url + path)).headers.get('x-cache')).toBe('HIT');
    expect(await metricValue(proxy, 'stacks_proxy_http_requests_total', labels)).toBe(before + 5);
  });
});
