/**
 * Every route of the upstream stays reachable through the proxy, over real HTTP: each path of the
 * upstream's published surface (real-looking values, and the upstream's own static segments in
 * parameter positions) reaches the route the upstream's router would pick. A cached route is
 * counted under its route id; anything else reaches the (counting) fake upstream exactly as
 * sent, through the passthrough, with X-Cache: BYPASS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECORDED, startFakeUpstream, testConfig, type FakeUpstream } from '../../testkit/index.js';
import { ROUTES } from '../../src/routes/route-table.js';
import { isAllowedPath } from '../../src/http/forward-policy.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { caches } from '../../src/surface/families.js';
import { matchSurface } from '../../src/surface/plan.js';
import { parseResponses, rawGet } from '../support/raw-socket.js';
import { fetchRaw } from '../support/http.js';
import {
  clientSchemaGetPaths,
  instantiate,
  readSurfacePaths,
  upstreamRouting,
  v7OpenApiGetPaths,
  v9OpenApiGetPaths,
  type Destination,
} from '../support/upstream-surface.js';
import type { ProxyServer } from '../../src/composition-root.js';

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

const routing = upstreamRouting();
const WALLET = 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7';

const servedBy = (route: string) => metricValue(proxy, 'stacks_proxy_http_requests_total', { route });
const servedByCachedRoutes = async () => (await Promise.all(ROUTES.map((r) => servedBy(r.id)))).reduce((a, b) => a + b, 0);

/** The route family of the wider read surface that caches `path` (issue 15), if any. */
function familyOf(path: string): string | undefined {
  const mark = path.indexOf('?');
  const match = mark < 0 ? matchSurface('GET', path, '') : matchSurface('GET', path.slice(0, mark), path.slice(mark + 1));
  return match && caches(match.family) ? match.family.id : undefined;
}

/**
 * Sends `path` as is and says what happened to it, or why it did not go where `expected` says.
 * Beyond the 13 routes (`passthrough` in the upstream's routing) a path either passes through, or
 * is read through its route family: counted under the family, and asked of the upstream as sent
 * unless the family's entry answered it (a path the published surface names twice).
 */
async function check(path: string, expected: Destination): Promise<string | undefined> {
  const family = expected === 'passthrough' ? familyOf(path) : undefined;
  const counter = family ?? (expected === 'passthrough' ? undefined : expected);
  const before = { cached: await servedByCachedRoutes(), route: counter === undefined ? 0 : await servedBy(counter), seen: upstream.requests.length };
  const [answer] = parseResponses(await rawGet(proxy.port, path));
  if (!answer) return `${path}: no answer`;
  if (expected !== 'passthrough') {
    const counted = (await servedBy(expected)) - before.route;
    return counted === 1 ? undefined : `${path}: not served as ${expected} (status ${answer.status}, X-Cache ${answer.headers['x-cache']})`;
  }
  const received = upstream.requests.slice(before.seen).map((r) => r.url);
  if ((await servedByCachedRoutes()) !== before.cached) return `${path}: counted under a cached route`;
  if (family !== undefined) {
    if ((await servedBy(family)) - before.route !== 1) return `${path}: not served as family ${family} (X-Cache ${answer.headers['x-cache']})`;
    const hit = answer.headers['x-cache'] === 'HIT';
    return hit || received[0] === path ? undefined : `${path}: family ${family}, the upstream received ${JSON.stringify(received)}`;
  }
  if (received.length !== 1 || received[0] !== path) return `${path}: the upstream received ${JSON.stringify(received)}`;
  if (answer.headers['x-cache'] !== 'BYPASS') return `${path}: X-Cache ${answer.headers['x-cache']}`;
  return undefined;
}

describe('every upstream route stays reachable', () => {
  it('sends the wallet routes /tx/mempool and /blocks/average-times to the upstream as sent', async () => {
    const paths = [
      '/extended/v1/tx/mempool',
      '/extended/v1/tx/mempool?limit=20',
      `/extended/v1/tx/mempool?address=${WALLET}`,
      `/extended/v1/tx/mempool?address=${WALLET}&limit=50&offset=0`,
      '/extended/v1/tx/mempool/',
      '/extended/v2/blocks/average-times',
    ];
    const failures = [];
    for (const path of paths) failures.push(await check(path, 'passthrough'));
    expect(failures.filter(Boolean)).toEqual([]);
  });

  it("answers them with the upstream's own mempool list and block times", async () => {
    for (const path of [`/extended/v1/tx/mempool?address=${RECORDED.principal}&limit=5`, '/extended/v2/blocks/average-times']) {
      const direct = await fetchRaw(upstream.url + path);
      const proxied = await fetchRaw(proxy.url + path);
      expect(proxied.status, path).toBe(200);
      expect(proxied.body.equals(direct.body), path).toBe(true);
    }
    const list = JSON.parse((await fetchRaw(`${proxy.url}/extended/v1/tx/mempool`)).body.toString()) as { results: { tx_id: string }[] };
    expect(list.results.map((tx) => tx.tx_id)).toContain(RECORDED.pendingTxId);
  });

  it('still serves the cached routes next to them', async () => {
    const failures = [
      await check('/extended/v1/tx/mempool/stats', 'mempool_stats'),
      await check('/extended/v2/blocks/latest', 'block'),
      await check('/extended/v1/tx/0xcba511741b230bd85cb5b3b10d26e0b92695d4a83f95c260cad82a40cd764235', 'tx_by_id'),
    ];
    expect(failures.filter(Boolean)).toEqual([]);
  });

  it("reaches the upstream's pick for every path of its published surface", async () => {
    const templates = [...clientSchemaGetPaths(), ...v9OpenApiGetPaths(), ...v7OpenApiGetPaths(), ...readSurfacePaths()];
    // `/` (the upstream's 301 to /extended) and `/v2` are off the passthrough's allow-list: a local 404 by design.
    const allowed = testConfig({ upstreamUrls: [upstream.url] }).passthrough.allowedPrefixes;
    const paths = instantiate(templates, routing).filter(({ path }) => isAllowedPath(path, allowed));
    expect(paths.length).toBeGreaterThan(200);
    const destinations = new Set<Destination>();
    const failures: string[] = [];
    for (const { path, from } of paths) {
      const expected = routing.destination(path);
      destinations.add(expected);
      const failure = await check(path, expected);
      if (failure) failures.push(`${failure} (from ${from})`);
    }
    expect(failures).toEqual([]);
    // Every cached route and the passthrough were among the destinations.
    expect([...destinations].sort()).toEqual([...ROUTES.map((r) => r.id), 'passthrough'].sort());
  });
});
