/**
 * The upstream client's attempts, through real HTTP to two counting servers: POST reads (the
 * body arrives byte for byte, with its length, its content-type and the operator's headers, and
 * is retried on the other upstream like a GET), and the reader's verdict on each answer
 * (upstream-exchange.ts): an answer the reader rejects as invalid counts against its upstream
 * and the same ask goes on to the next one, within the retry budget of two sends.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { askAndAdmit } from '../../src/cache/upstream-exchange.js';
import { noopTelemetry, type Telemetry } from '../../src/telemetry/telemetry.js';
import { UpstreamClient, type UpstreamAsk } from '../../src/upstream/client.js';
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

/** A server that records every request it receives, body included, and answers as `answer` says. */
async function countingServer(answer: (received: Received) => { status: number; body: string; contentType?: string }) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      received.push(request);
      const { status, body, contentType } = answer(request);
      res.writeHead(status, { 'content-type': contentType ?? 'application/json' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  defer(() => new Promise((resolve) => server.close(resolve)));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

/** Upstream failures and answers, as the client reports them to telemetry. */
function recordingTelemetry() {
  const failed: Array<{ upstream: string; kind: string }> = [];
  const answered: Array<{ upstream: string; status: number }> = [];
  const telemetry: Telemetry = Object.assign(Object.create(noopTelemetry) as Telemetry, {
    upstreamFailed: (upstream: string, _route: string, error: { kind: string }) => failed.push({ upstream, kind: error.kind }),
    upstreamAnswered: (upstream: string, _route: string, status: number) => answered.push({ upstream, status }),
  });
  return { telemetry, failed, answered };
}

function clientFor(urls: string[], telemetry: Telemetry = noopTelemetry, upstream: Record<string, unknown> = {}) {
  const config = testConfig({ upstreamUrls: urls, overrides: { upstream: { apiKey: 'operator-key', ...upstream } } });
  const health = new UpstreamHealth(
    config.upstream.urls.map((url) => new URL(url).origin),
    config.upstream,
    Date.now,
    telemetry,
  );
  const client = new UpstreamClient(config.upstream, health, Date.now, telemetry);
  defer(() => client.close());
  return { client, health };
}

// A call-read body as stacks.js sends it; multi-byte characters so the length is counted in bytes.
const CALL_READ_BODY = Buffer.from(
  JSON.stringify({ sender: 'SP000000000000000000002Q6VF78', arguments: ['0x0100000000000000000000000000000001'], note: 'µ€' }),
);
const CALL_READ: UpstreamAsk = {
  method: 'POST',
  path: '/v2/contracts/call-read/SP000000000000000000002Q6VF78/pox-4/get-pox-info',
  body: CALL_READ_BODY,
  headers: { 'content-type': 'application/json' },
};
const OKAY = JSON.stringify({ okay: true, result: '0x09' });

describe('POST reads through the upstream client', () => {
  it("send the body byte for byte with its length, its content-type and the operator's headers", async () => {
    const upstream = await countingServer(() => ({ status: 200, body: OKAY }));
    const { client } = clientFor([upstream.url]);
    const { response } = await askAndAdmit(client, CALL_READ, 'call_read', () => ({ kind: 'pass-on' as const }));
    expect([response.status, response.body.toString()]).toEqual([200, OKAY]);
    expect(upstream.received).toHaveLength(1);
    const [sent] = upstream.received;
    expect(sent?.method).toBe('POST');
    expect(sent?.url).toBe(CALL_READ.path);
    expect(sent?.body.equals(CALL_READ_BODY)).toBe(true);
    expect(sent?.headers['content-length']).toBe(String(CALL_READ_BODY.length));
    expect(CALL_READ_BODY.length).toBeGreaterThan(CALL_READ_BODY.toString().length);
    expect(sent?.headers['content-type']).toBe('application/json');
    expect(sent?.headers['x-api-key']).toBe('operator-key');
    expect(sent?.headers['transfer-encoding']).toBeUndefined();
  });

  it('retry a 502 on the other upstream with the same body, once', async () => {
    const failing = await countingServer(() => ({ status: 502, body: '<html>bad gateway</html>', contentType: 'text/html' }));
    const healthy = await countingServer(() => ({ status: 200, body: OKAY }));
    const { client } = clientFor([failing.url, healthy.url]);
    const { response } = await askAndAdmit(client, CALL_READ, 'call_read', () => ({ kind: 'pass-on' as const }));
    expect([response.status, response.upstream]).toEqual([200, healthy.url]);
    expect([failing.received.length, healthy.received.length]).toEqual([1, 1]);
    for (const sent of [...failing.received, ...healthy.received]) {
      expect(sent.method).toBe('POST');
      expect(sent.body.equals(CALL_READ_BODY)).toBe(true);
      expect(sent.headers['content-length']).toBe(String(CALL_READ_BODY.length));
    }
  });

  it('pass the last 502 on when both upstreams answer it, after exactly two sends', async () => {
    const first = await countingServer(() => ({ status: 502, body: 'one', contentType: 'text/plain' }));
    const second = await countingServer(() => ({ status: 502, body: 'two', contentType: 'text/plain' }));
    const { client } = clientFor([first.url, second.url]);
    const admitted: string[] = [];
    const { response, admission } = await askAndAdmit(client, CALL_READ, 'call_read', (answer) => {
      admitted.push(answer.upstream);
      return { kind: 'pass-on' as const };
    });
    expect([response.status, response.body.toString(), admission]).toEqual([502, 'two', undefined]);
    // A server error is the reader's to handle (stale copy or passed on): never admitted.
    expect(admitted).toEqual([]);
    expect(first.received.length + second.received.length).toBe(2);
  });
});

describe("the reader's verdict on each answer", () => {
  const wrongResource = (upstream: string) => new UpstreamError('invalid', upstream, `an answer about another resource from ${upstream}`);

  it('an answer the reader rejects counts against its upstream, and the same ask goes to the next one', async () => {
    const lying = await countingServer(() => ({ status: 200, body: JSON.stringify({ okay: true, result: '0xdead' }) }));
    const honest = await countingServer(() => ({ status: 200, body: OKAY }));
    const { telemetry, failed, answered } = recordingTelemetry();
    // One failure opens a breaker: the rejection must have counted for the lying upstream to be shut.
    const { client, health } = clientFor([lying.url, honest.url], telemetry, { failureThreshold: 1 });
    const { response, admission } = await askAndAdmit(client, CALL_READ, 'call_read', (answer) =>
      answer.upstream === lying.url ? { kind: 'failure' as const, error: wrongResource(answer.upstream) } : { kind: 'pass-on' as const },
    );
    expect([response.upstream, response.body.toString(), admission?.kind]).toEqual([honest.url, OKAY, 'pass-on']);
    expect([lying.received.length, honest.received.length]).toEqual([1, 1]);
    expect(honest.received[0]?.body.equals(CALL_READ_BODY)).toBe(true);
    expect(failed).toEqual([{ upstream: lying.url, kind: 'invalid' }]);
    expect(answered).toEqual([{ upstream: honest.url, status: 200 }]);
    const status = new Map(health.status().map((s) => [s.origin, s]));
    expect(status.get(lying.url)?.breaker).toBe('open');
    expect(status.get(honest.url)?.breaker).toBe('closed');
  });

  it('two rejected answers end the ask with the rejection, after exactly two sends', async () => {
    const first = await countingServer(() => ({ status: 200, body: 'not json', contentType: 'application/json' }));
    const second = await countingServer(() => ({ status: 200, body: 'not json either', contentType: 'application/json' }));
    const { client } = clientFor([first.url, second.url]);
    const ask: UpstreamAsk = { method: 'GET', path: '/v2/info' };
    const outcome = askAndAdmit(client, ask, 'info', (answer) => ({ kind: 'failure' as const, error: wrongResource(answer.upstream) }));
    await expect(outcome).rejects.toMatchObject({ kind: 'invalid', upstream: second.url });
    expect([first.received.length, second.received.length]).toEqual([1, 1]);
  });

  it('an answer the reader keeps ends the attempts: one send, and a success for its upstream', async () => {
    const only = await countingServer(() => ({ status: 200, body: OKAY }));
    const other = await countingServer(() => ({ status: 200, body: OKAY }));
    const { telemetry, failed, answered } = recordingTelemetry();
    const { client } = clientFor([only.url, other.url], telemetry);
    const { response } = await askAndAdmit(client, CALL_READ, 'call_read', () => ({ kind: 'pass-on' as const }));
    expect(response.upstream).toBe(only.url);
    expect([only.received.length, other.received.length]).toEqual([1, 0]);
    expect([failed, answered]).toEqual([[], [{ upstream: only.url, status: 200 }]]);
  });
});
