/**
 * `npm run demo` promises a curl line for every endpoint: every cached route has an example
 * (scripts/demo-examples.ts), each example reaches the route it is listed for, and each answers
 * 200 through the proxy in front of the demo's fake upstream, then from the cache.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/composition-root.js';
import { createRouteMatcher } from '../../src/routes/route-matcher.js';
import { ROUTES } from '../../src/routes/route-table.js';
import { DEMO_EXAMPLES } from '../../scripts/demo-examples.js';
import { startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';
import { fetchRaw } from '../support/http.js';
import { startTestProxy } from '../support/proxy-harness.js';

let upstream: FakeUpstream;
let proxy: ProxyServer;
beforeAll(async () => {
  upstream = await startFakeUpstream();
  proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
});
afterAll(async () => {
  await proxy.close();
  await upstream.close();
});

describe('the demo examples', () => {
  it('cover every cached route', () => {
    expect(new Set(DEMO_EXAMPLES.map((example) => example.routeId))).toEqual(new Set(ROUTES.map((route) => route.id)));
  });

  const matchRoute = createRouteMatcher(ROUTES);
  it.each(DEMO_EXAMPLES)('$routeId: $path reaches its route and answers 200, then from the cache', async ({ routeId, path }) => {
    const found = matchRoute(path.split('?')[0]!);
    expect(found.kind === 'match' ? found.route.id : found.kind).toBe(routeId);
    await expect.poll(async () => (await fetchRaw(`${proxy.url}/ready`)).status, { timeout: 10_000 }).toBe(200);
    const first = await fetchRaw(`${proxy.url}${path}`);
    expect(first.status, first.body.toString()).toBe(200);
    const second = await fetchRaw(`${proxy.url}${path}`);
    expect(second.status).toBe(200);
    expect(second.headers.get('x-cache')).toMatch(/^(HIT|STALE)$/);
  });
});
