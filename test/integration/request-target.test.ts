/**
 * One reading of every path, through real HTTP on raw sockets: the proxy routes, caches and
 * forwards the same decided target, or refuses it with the upstream's 400, and the passthrough
 * forwards only the upstream's public API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';
import { startTestProxy } from '../support/proxy-harness.js';
import { parseResponses, rawGet } from '../support/raw-socket.js';
import type { ProxyServer } from '../../src/composition-root.js';

let upstream: FakeUpstream;
let proxy: ProxyServer;

beforeAll(async () => {
  upstream = await startFakeUpstream();
  // What the passthrough receives: /v2/info and /extended, its examples here, are route families the wider read surface would cache.
  proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides: { surface: { enabled: false } } });
});
afterAll(async () => {
  await proxy.close();
  await upstream.close();
});

async function get(target: string, headers: Record<string, string> = {}) {
  const [response, ...more] = parseResponses(await rawGet(proxy.port, target, headers));
  expect(more).toHaveLength(0);
  if (!response) throw new Error(`no answer to ${target}`);
  return response;
}

const badUrlBody = (path: string): string =>
  JSON.stringify({ statusCode: 400, code: 'FST_ERR_BAD_URL', error: 'Bad Request', message: `'${path}' is not a valid url component` });

describe('targets that name one of the 13 routes', () => {
  it('serves every spelling of a route as that route, from the cache, without an upstream request', async () => {
    const canonical = await get('/extended/v2/blocks/1');
    expect(canonical.status).toBe(200);
    upstream.resetCounts();
    for (const target of [
      '//extended/v2/blocks/1',
      '/extended//v2///blocks/1',
      '/extended/v2/./blocks/1',
      '/extended/v2/blocks/x/../1',
      '/extended/v2/blocks/x/%2e%2E/1',
      '/extended/v2/blocks/x/.%2e/1',
      '/extended/v2/%2E/blocks/1',
      '/%65xtended/v2/blocks/%31',
      '/../extended/v2/blocks/1',
      'http://elsewhere.example/extended/v2/blocks/1',
      'HTTP://elsewhere.example:8080/extended/v2/./blocks/1',
    ]) {
      const answer = await get(target);
      expect(answer.status, target).toBe(200);
      expect(answer.headers['x-cache'], target).toBe('HIT');
      expect(answer.body, target).toBe(canonical.body);
    }
    expect(upstream.count()).toBe(0);
  });

  it('validates a route reached through dot segments like any other request to it', async () => {
    upstream.resetCounts();
    const answer = await get('/extended/v1/tx/x/../0xnothex');
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ statusCode: 400, error: 'Bad Request' });
    expect(upstream.count()).toBe(0);
  });
});

describe('targets with more than one reading', () => {
  it.each([
    ['/extended/v1/tx\\..\\tx/0x1234', '/extended/v1/tx\\..\\tx/0x1234'],
    ['/extended/v2/blocks/1\\', '/extended/v2/blocks/1\\'],
    ['/v2/info%zz', '/v2/info%zz'],
    ['/v2/info%ff', '/v2/info%ff'],
    ['/v2/info%', '/v2/info%'],
    ['*', '*'],
    ['ftp://elsewhere.example/v2/info', 'ftp://elsewhere.example/v2/info'],
    ['/v2/info#/../../metrics', '/v2/info#/../../metrics'],
  ])("refuses %s with the upstream's 400 and asks no upstream", async (target, quoted) => {
    upstream.resetCounts();
    const answer = await get(target, { 'x-request-id': 'bad-target' });
    expect(answer.status).toBe(400);
    expect(answer.body).toBe(badUrlBody(quoted));
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.headers['x-request-id']).toBe('bad-target');
    expect(upstream.count()).toBe(0);
  });
});

describe('targets node:http refuses before the proxy sees them', () => {
  it.each(['elsewhere.example:443', 'http://elsewhere.example\\v2/info', '/v2/in fo', '/v2/info\u00e9'])(
    '%s gets a 400 and asks no upstream',
    async (target) => {
      upstream.resetCounts();
      expect(parseResponses(await rawGet(proxy.port, target))[0]?.status).toBe(400);
      expect(upstream.count()).toBe(0);
    },
  );
});

/** What reached the upstream for the client request with this id. */
const sentFor = (requestId: string): string[] => upstream.requests.filter((r) => r.headers['x-request-id'] === requestId).map((r) => r.url);

describe('the passthrough forwards the decided target byte for byte', () => {
  it.each([
    ['//v2/info', '/v2/info'],
    ['/v2//info', '/v2/info'],
    ['/v2/./info', '/v2/info'],
    ['/v2/x/%2e%2e/info?a=1', '/v2/info?a=1'],
    ['/extended/v1/a/../../../v2/info', '/v2/info'],
    ['/v2/info?x=a\\b&y=%2e%2e/..', '/v2/info?x=a\\b&y=%2e%2e/..'],
    ['/v2/info%5Cx', '/v2/info%5Cx'],
    ['/v2/info%2Fx', '/v2/info%2Fx'],
    ['/%76%32/info', '/v2/info'],
    ['http://elsewhere.example/v2/info?q=%2e', '/v2/info?q=%2e'],
    ['http://elsewhere.example?', null],
    ['/extended/v1/no-such-route/', '/extended/v1/no-such-route/'],
    ['/extended/v1/no-such-route/.', '/extended/v1/no-such-route/'],
  ])('%s reaches the upstream as %s', async (target, expected) => {
    const id = `forward ${target}`;
    const answer = await get(target, { 'x-request-id': id });
    if (expected === null) {
      expect(answer.status).toBe(404);
      expect(sentFor(id)).toEqual([]);
      return;
    }
    expect(answer.headers['x-cache']).toBe('BYPASS');
    expect(sentFor(id)).toEqual([expected]);
  });
});

describe('the passthrough allow-list', () => {
  it.each(['/', '/x', '/extendedx', '/v2', '/v4/info', '/admin/../secret', '/extended/../debug/pprof', '/rosetta', '/socket.ioX/'])(
    "answers %s with the upstream's 404 locally",
    async (target) => {
      upstream.resetCounts();
      const answer = await get(target);
      expect(answer.status).toBe(404);
      expect(JSON.parse(answer.body)).toEqual({ message: expect.stringMatching(/^Route GET:\/\S* not found$/), error: 'Not Found', statusCode: 404 });
      expect(answer.headers['x-cache']).toBeUndefined();
      expect(upstream.count()).toBe(0);
    },
  );

  it('quotes the decided target in the local 404', async () => {
    const answer = await get('/admin/./x/../secret?k=v');
    expect(answer.body).toBe('{"message":"Route GET:/admin/secret?k=v not found","error":"Not Found","statusCode":404}');
  });

  it.each(['/extended', '/extended/', '/extended/v1/status', '/v1/anything', '/v2/info', '/v3/x', '/rosetta/v1/network/list', '/socket.io/socket.io.js?v=4'])(
    'forwards %s',
    async (target) => {
      const id = `allowed ${target}`;
      const answer = await get(target, { 'x-request-id': id });
      expect(answer.headers['x-cache']).toBe('BYPASS');
      expect(sentFor(id)).toEqual([target]);
    },
  );

  it('follows passthrough.allowedPrefixes', async () => {
    const narrow = await startTestProxy({ upstreamUrls: [upstream.url], overrides: { passthrough: { allowedPrefixes: ['/v2/info'] } } });
    try {
      const id = { 'x-request-id': 'narrow' };
      expect(parseResponses(await rawGet(narrow.port, '/v2/info', id))[0]?.status).toBe(200);
      expect(parseResponses(await rawGet(narrow.port, '/v2/info/x', id))[0]?.headers['x-cache']).toBe('BYPASS');
      expect(parseResponses(await rawGet(narrow.port, '/v2/infox', id))[0]?.status).toBe(404);
      expect(parseResponses(await rawGet(narrow.port, '/extended/v1/status', id))[0]?.status).toBe(404);
      expect(sentFor('narrow')).toEqual(['/v2/info', '/v2/info/x']);
    } finally {
      await narrow.close();
    }
  });
});
