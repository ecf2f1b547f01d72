/**
 * The passthrough's framing at the byte level (issue 14): an upstream that parses every
 * request itself and records it per connection (testkit/framing-upstream.ts) shows that the
 * upstream parses exactly the requests the clients sent, whatever a client puts in Connection
 * or in a body; and that an answer the client did not ask for (a 101) or one that never ends
 * is cut off in bounded time.
 */
import { createServer, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startFramingUpstream, waitFor, type FramingUpstream } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { exchangeRaw, openSocket, parseResponses, readUntilClosed } from '../support/raw-socket.js';
import { fetchRaw } from '../support/http.js';

const { defer } = useCleanups();

async function setup(overrides: Record<string, unknown> = {}) {
  const upstream = await startFramingUpstream();
  defer(() => upstream.close());
  const proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides });
  defer(() => proxy.close());
  upstream.reset();
  return { upstream, proxy };
}

/**
 * What the upstream parsed for clients: one line per request, with the bytes of its body, in
 * sorted order (the proxy works on a connection's pipelined requests side by side).
 */
const parsed = (upstream: FramingUpstream): string[] =>
  upstream
    .clientRequests()
    .map((r) => `${r.method} ${r.target} ${JSON.stringify(r.body.toString('latin1'))}`)
    .sort();

const SMUGGLED = 'GET /extended/v1/SMUGGLED/../__internal HTTP/1.1\r\nHost: up\r\nX-API-Key: forged\r\nX-Forwarded-For: 10.0.0.1\r\n\r\n';

const head = (method: string, path: string, headers: string[]): string => `${[`${method} ${path} HTTP/1.1`, 'Host: p', ...headers].join('\r\n')}\r\n\r\n`;

describe('passthrough request framing', () => {
  it('forwards a GET whose Connection names Content-Length as that one GET, and never its body', async () => {
    const { upstream, proxy } = await setup();
    const attack = head('GET', '/extended/v1/info', ['Connection: keep-alive, content-length', `Content-Length: ${SMUGGLED.length}`]) + SMUGGLED;
    const socket = await openSocket(proxy.port);
    const received = readUntilClosed(socket);
    // The same client connection goes on with an innocent request, which must get its own answer.
    socket.write(attack + head('GET', '/v2/info', ['Connection: close']), 'latin1');
    const answers = parseResponses(await received);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect(answers.map((a) => JSON.parse(a.body).target)).toEqual(['/extended/v1/info', '/v2/info']);
    expect(parsed(upstream)).toEqual(['GET /extended/v1/info ""', 'GET /v2/info ""'].sort());
    expect(upstream.unparsed).toEqual([]);
  });

  it.each(['GET', 'HEAD', 'TRACE', 'DELETE', 'OPTIONS'])('drops the body of a %s, Content-Length or chunked, whatever Connection names', async (method) => {
    const { upstream, proxy } = await setup();
    const connections = ['keep-alive, content-length', 'content-length, transfer-encoding', 'keep-alive'];
    for (const connection of connections) {
      await exchangeRaw(
        proxy.port,
        head(method, '/v2/info', [`Connection: ${connection}`, `Content-Length: ${SMUGGLED.length}`]) +
          SMUGGLED +
          head('GET', '/v2/after', ['Connection: close']),
      );
      const chunked = `${SMUGGLED.length.toString(16)}\r\n${SMUGGLED}\r\n0\r\n\r\n`;
      await exchangeRaw(
        proxy.port,
        head(method, '/v2/info', [`Connection: ${connection}`, 'Transfer-Encoding: chunked']) + chunked + head('GET', '/v2/after', ['Connection: close']),
      );
    }
    const once = [`${method} /v2/info ""`, 'GET /v2/after ""'];
    expect(parsed(upstream)).toEqual(
      Array.from({ length: connections.length * 2 }, () => once)
        .flat()
        .sort(),
    );
    for (const request of upstream.clientRequests()) {
      expect(request.headers['content-length'], request.method).toBeUndefined();
      expect(request.headers['transfer-encoding'], request.method).toBeUndefined();
    }
    expect(upstream.unparsed).toEqual([]);
  });

  it('forwards a POST body framed by the length Node parsed, whatever Connection names, and the next request after it', async () => {
    const { upstream, proxy } = await setup();
    const body = `{"tx":"${'ab'.repeat(40)}"}`;
    const post =
      head('POST', '/v2/transactions', [
        'Connection: keep-alive, content-length, transfer-encoding',
        'Content-Type: application/json',
        `Content-Length: ${body.length}`,
      ]) + body;
    const chunkedPost =
      head('POST', '/v2/transactions', ['Connection: transfer-encoding', 'Content-Type: application/json', 'Transfer-Encoding: chunked']) +
      `5\r\n${body.slice(0, 5)}\r\n${(body.length - 5).toString(16)}\r\n${body.slice(5)}\r\n0\r\n\r\n`;
    const answers = parseResponses(await exchangeRaw(proxy.port, post + chunkedPost + head('GET', '/v2/info', ['Connection: close'])));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(parsed(upstream)).toEqual(
      [`POST /v2/transactions ${JSON.stringify(body)}`, `POST /v2/transactions ${JSON.stringify(body)}`, 'GET /v2/info ""'].sort(),
    );
    expect(upstream.unparsed).toEqual([]);
  });
});

describe('passthrough answers the client did not ask for', () => {
  it('answers 502 to a 101 on a request that asked for no upgrade, and counts it', async () => {
    const { upstream, proxy } = await setup();
    upstream.respondWith((request, socket) => {
      if (request.target !== '/v2/upgrade-anyway') return false;
      socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
      return true;
    });
    const [answer, ...more] = parseResponses(await exchangeRaw(proxy.port, head('GET', '/v2/upgrade-anyway', ['Connection: close'])));
    expect(more).toEqual([]);
    expect(answer?.status).toBe(502);
    expect(JSON.parse(answer?.body ?? '')).toEqual({ statusCode: 502, error: 'Bad Gateway', message: 'The upstream API is unavailable' });
    expect(answer?.headers['x-cache']).toBe('BYPASS');
    expect(await metricValue(proxy, 'stacks_proxy_upstream_requests_total', { route: 'passthrough', status: 'error' })).toBe(1);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { kind: 'invalid' })).toBe(1);
  });

  it('never hands an answer the upstream sent unasked to the next client', async () => {
    const { upstream, proxy } = await setup();
    upstream.respondWith((request, socket) => {
      if (request.target !== '/v2/twice') return false;
      const ghost = '{"target":"/v2/ghost"}';
      socket.write(`HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\nContent-Length: ${ghost.length}\r\n\r\n${ghost}`);
      return true;
    });
    const [first] = parseResponses(await exchangeRaw(proxy.port, head('GET', '/v2/twice', ['Connection: close'])));
    expect(first?.body).toBe('{}');
    // Fresh client connections, one after the other: each gets the answer to its own request.
    for (let i = 0; i < 3; i++) {
      const [answer] = parseResponses(await exchangeRaw(proxy.port, head('GET', `/v2/info?n=${i}`, ['Connection: close'])));
      expect(JSON.parse(answer?.body ?? '').target).toBe(`/v2/info?n=${i}`);
    }
  });

  it('answers 504 in the upstream error shape when no answer starts before passthrough.answerDeadlineMs', async () => {
    const { upstream, proxy } = await setup({ passthrough: { answerDeadlineMs: 300 } });
    upstream.respondWith((request) => request.target === '/v2/never');
    const [answer] = parseResponses(await exchangeRaw(proxy.port, head('GET', '/v2/never', ['Connection: close'])));
    expect(answer?.status).toBe(504);
    expect(JSON.parse(answer?.body ?? '')).toEqual({ statusCode: 504, error: 'Gateway Timeout', message: 'The upstream API did not answer in time' });
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { kind: 'timeout' })).toBe(1);
  });

  it('cuts the client connection when a trickling body outlasts passthrough.answerDeadlineMs, and counts it', async () => {
    const { upstream, proxy } = await setup({ passthrough: { answerDeadlineMs: 300 } });
    const declared = 100;
    upstream.respondWith((request, socket) => {
      if (request.target !== '/v2/trickle') return false;
      // The head and one byte of the body now; the rest never comes (the upstream's slowest is a trickle).
      socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n{`);
      return true;
    });
    // Keep-alive: only a cut ends this connection, since the answer never completes.
    const stream = await exchangeRaw(proxy.port, head('GET', '/v2/trickle', []));
    expect(stream).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(stream.slice(stream.indexOf('\r\n\r\n') + 4).length).toBeLessThan(declared);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total', { kind: 'timeout' })).toBe(1);
  });

  it('closes the upstream connection of an answer whose client went away, before its head or mid-body, and counts no failure', async () => {
    const { upstream, proxy } = await setup({ passthrough: { answerDeadlineMs: 600_000 } });
    const upstreamClosed: Record<string, Promise<void>> = {};
    upstream.respondWith((request, socket) => {
      if (request.target !== '/v2/no-head' && request.target !== '/v2/mid-body') return false;
      upstreamClosed[request.target] = new Promise((resolve) => socket.once('close', () => resolve()));
      // The head and one byte of a body that never ends, or nothing at all: only the proxy can end this exchange.
      if (request.target === '/v2/mid-body') socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{');
      return true;
    });
    for (const target of ['/v2/no-head', '/v2/mid-body']) {
      const client = await openSocket(proxy.port);
      const received = new Promise<void>((resolve) => client.once('data', () => resolve()));
      client.write(head('GET', target, []));
      if (target === '/v2/mid-body') await received;
      else await waitFor(async () => upstreamClosed[target] !== undefined, { timeoutMs: 10_000, what: 'the request upstream' });
      client.destroy();
      // Not answerDeadlineMs (ten minutes): the client's going is what ends the upstream exchange.
      await upstreamClosed[target];
    }
    expect(await metricValue(proxy, 'stacks_proxy_upstream_errors_total')).toBe(0);
  });

  it("streams an answer far larger than the socket buffers whole and byte for byte, at the client's pace", async () => {
    const { upstream, proxy } = await setup();
    const size = 16 * 1024 * 1024;
    const body = Buffer.alloc(size);
    for (let i = 0; i < size; i += 4) body.writeUInt32BE(i, i);
    upstream.respondWith((request, socket) => {
      if (request.target !== '/v2/large') return false;
      socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: ${size}\r\n\r\n`);
      socket.write(body);
      return true;
    });
    const response = await fetchRaw(`http://127.0.0.1:${proxy.port}/v2/large`);
    expect(response.status).toBe(200);
    expect(response.body.length).toBe(size);
    expect(response.body.equals(body)).toBe(true);
  });

  it('passes on an answer the upstream sends before reading the body, then closes the client connection the unread body is on', async () => {
    // An upstream that answers as soon as it has a head, as a server refusing a large upload does.
    const early = createServer((socket) => {
      socket.on('error', () => undefined);
      let head = '';
      socket.on('data', (chunk: Buffer) => {
        if (head.includes('\r\n\r\n')) return;
        head += chunk.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        const status = head.startsWith('POST /v2/early ') ? '413 Payload Too Large' : '404 Not Found';
        socket.end(`HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
      });
    });
    await new Promise<void>((resolve) => early.listen(0, '127.0.0.1', () => resolve()));
    defer(() => new Promise<void>((resolve) => early.close(() => resolve())));
    const proxy = await startTestProxy({ upstreamUrls: [`http://127.0.0.1:${(early.address() as AddressInfo).port}`] });
    defer(() => proxy.close());
    const declared = 1_000_000;
    // A tenth of the body: the rest never comes, so only the proxy can end this connection.
    const stream = await exchangeRaw(
      proxy.port,
      head('POST', '/v2/early', ['Content-Type: application/json', `Content-Length: ${declared}`]) + 'x'.repeat(declared / 10),
    );
    const answers = parseResponses(stream);
    expect(answers.map((a) => [a.status, a.body])).toEqual([[413, '{}']]);
    expect(stream).toMatch(/\r\nx-cache: BYPASS\r\n/i);
  });
});
