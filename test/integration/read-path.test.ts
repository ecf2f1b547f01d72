/**
 * The one read path driven by a ReadSpec that is not one of the 13 routes (as the wider read
 * surface builds them): a POST read keyed by its path and body, through real HTTP to counting
 * servers. The read path looks up, decides, shares one fetch among concurrent readers,
 * revalidates with the upstream's ETag (the POST body sent again), admits each answer itself
 * and tries an answer its spec refuses on the next upstream, and serves a stale copy when every
 * upstream fails.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { bodyEtag, forwardedHeaders, stamp, type Admission } from '../../src/cache/admit.js';
import { Decider } from '../../src/cache/decider.js';
import { MemoryStore } from '../../src/cache/memory-store.js';
import { ReadPath } from '../../src/cache/read-path.js';
import type { ReadSpec } from '../../src/cache/read-spec.js';
import { TieredStore } from '../../src/cache/tiered-store.js';
import type { ChainView } from '../../src/chain/view.js';
import { noopTelemetry } from '../../src/telemetry/telemetry.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { UpstreamError } from '../../src/upstream/errors.js';
import { UpstreamHealth } from '../../src/upstream/health.js';
import { testConfig } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';

const { defer } = useCleanups();

interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

type Answer = { status: number; body?: string; etag?: string } | 'hang-up';

async function countingServer(answer: (received: Received) => Answer) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      received.push(request);
      const reply = answer(request);
      if (reply === 'hang-up') {
        req.socket.destroy();
        return;
      }
      res.writeHead(reply.status, { 'content-type': 'application/json', ...(reply.etag ? { etag: reply.etag } : {}) });
      res.end(reply.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  defer(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

const BODY = Buffer.from('{"sender":"SP000000000000000000002Q6VF78","arguments":[]}');
const RESULT = JSON.stringify({ okay: true, result: '0x0703' });

/** A read-only call as the surface would key it: tip-dependent, revalidated by the upstream's ETag. */
function callReadSpec(): ReadSpec & { confirmed: number } {
  const spec = {
    confirmed: 0,
    key: 'test:call-read:pox-4:get-pox-info:{"arguments":[],"sender":"SP000000000000000000002Q6VF78"}',
    label: 'call_read',
    ask: {
      method: 'POST',
      path: '/v2/contracts/call-read/SP000000000000000000002Q6VF78/pox-4/get-pox-info',
      body: BODY,
      headers: { 'content-type': 'application/json' },
    },
    admit(answer, asked): Admission {
      let json: unknown;
      try {
        json = JSON.parse(answer.body.toString());
      } catch {
        return { kind: 'failure', error: new UpstreamError('invalid', answer.upstream, 'not JSON') };
      }
      if ((json as { okay?: unknown }).okay !== true)
        return { kind: 'failure', error: new UpstreamError('invalid', answer.upstream, 'not an answer to the call') };
      const upstreamEtag = answer.headers.etag;
      return {
        kind: 'entry',
        entry: {
          status: answer.status,
          body: answer.body,
          headers: forwardedHeaders(answer),
          upstreamEtag,
          etag: upstreamEtag ?? bodyEtag(answer.body),
          ...stamp({ cls: 'tip' }, asked),
        },
      };
    },
    confirm(entry, asked) {
      spec.confirmed++;
      return { kind: 'entry', entry: { ...entry, ...stamp({ cls: 'tip' }, asked) } };
    },
  } satisfies ReadSpec & { confirmed: number };
  return spec;
}

function readPathFor(urls: string[]) {
  let now = 1_000_000;
  const clock = () => now;
  const chain: ChainView = { tipHash: '0xaa', tipHeight: 100, reorgs: [] };
  const config = testConfig({ upstreamUrls: urls });
  const ttl = config.cache.ttl;
  const health = new UpstreamHealth(
    config.upstream.urls.map((url) => new URL(url).origin),
    config.upstream,
    clock,
  );
  const upstream = new UpstreamClient(config.upstream, health, clock);
  defer(() => upstream.close());
  const store = new TieredStore(new MemoryStore({ maxBytes: 1 << 20, maxEntryBytes: 1 << 16, now: clock }), undefined, () => null);
  const decider = new Decider({ clock, chain: () => chain, ttl, stale: { staleIfErrorMs: config.cache.staleIfErrorMs, staleIfErrorMaxBlocks: 100 } });
  const readPath = new ReadPath({ store, upstream, decider, chain: () => chain, clock, telemetry: noopTelemetry });
  return {
    readPath,
    /** A new block: every tip entry must be asked about again. */
    newTip(hash: string) {
      chain.tipHash = hash;
      chain.tipHeight = (chain.tipHeight ?? 0) + 1;
      now += 1;
    },
  };
}

describe('the read path, for a spec of the wider read surface', () => {
  it('fetches a POST read once, then serves it from the memory lookup without asking', async () => {
    const upstream = await countingServer(() => ({ status: 200, body: RESULT, etag: '"r1"' }));
    const { readPath } = readPathFor([upstream.url]);
    const spec = callReadSpec();
    const miss = await readPath.read(spec);
    expect(miss.cacheStatus).toBe('MISS');
    expect(upstream.received).toHaveLength(1);
    expect(upstream.received[0]?.body.equals(BODY)).toBe(true);
    const lookup = readPath.lookup(spec.key);
    expect(lookup.decision.action).toBe('fresh');
    const hit = await readPath.read(spec, lookup);
    expect(hit.cacheStatus === 'HIT' && hit.entry.body.toString()).toBe(RESULT);
    expect(upstream.received).toHaveLength(1);
  });

  it('shares one upstream request among concurrent readers of one key', async () => {
    const upstream = await countingServer(() => ({ status: 200, body: RESULT }));
    const { readPath } = readPathFor([upstream.url]);
    const results = await Promise.all(Array.from({ length: 20 }, () => readPath.read(callReadSpec())));
    expect(results.every((r) => r.cacheStatus === 'MISS')).toBe(true);
    expect(upstream.received).toHaveLength(1);
  });

  it('revalidates after a new block with If-None-Match and the same body; a 304 is confirmed through the spec', async () => {
    const upstream = await countingServer((request) =>
      request.headers['if-none-match'] === '"r1"' ? { status: 304 } : { status: 200, body: RESULT, etag: '"r1"' },
    );
    const { readPath, newTip } = readPathFor([upstream.url]);
    const spec = callReadSpec();
    await readPath.read(spec);
    newTip('0xbb');
    expect(readPath.lookup(spec.key).decision.action).toBe('revalidate');
    const revalidated = await readPath.read(spec);
    expect(revalidated.cacheStatus).toBe('REVALIDATED');
    expect(revalidated.cacheStatus !== 'BYPASS' && revalidated.entry.tipHash).toBe('0xbb');
    expect(spec.confirmed).toBe(1);
    const [, second] = upstream.received;
    expect([second?.method, second?.headers['if-none-match'], second?.body.equals(BODY)]).toEqual(['POST', '"r1"', true]);
    expect(readPath.lookup(spec.key).decision.action).toBe('fresh');
  });

  it('tries an answer its spec refuses on the next upstream, and stores only the other', async () => {
    const wrong = await countingServer(() => ({ status: 200, body: JSON.stringify({ okay: false, cause: 'Unchecked(NoSuchContract)' }) }));
    const right = await countingServer(() => ({ status: 200, body: RESULT }));
    const { readPath } = readPathFor([wrong.url, right.url]);
    const spec = callReadSpec();
    const result = await readPath.read(spec);
    expect(result.cacheStatus === 'MISS' && result.entry.body.toString()).toBe(RESULT);
    expect([wrong.received.length, right.received.length]).toEqual([1, 1]);
    const held = readPath.lookup(spec.key);
    expect(held.entry?.body.toString()).toBe(RESULT);
  });

  it('serves the stored copy when every upstream fails after a new block (stale-if-error)', async () => {
    let down = false;
    const upstream = await countingServer(() => (down ? 'hang-up' : { status: 200, body: RESULT }));
    const { readPath, newTip } = readPathFor([upstream.url]);
    const spec = callReadSpec();
    await readPath.read(spec);
    newTip('0xcc');
    down = true;
    const stale = await readPath.read(spec);
    expect(stale.cacheStatus === 'STALE' && stale.entry.body.toString()).toBe(RESULT);
    expect(upstream.received).toHaveLength(3);
  });
});
