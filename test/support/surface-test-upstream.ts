/**
 * A small upstream for the wider read surface's tests: a real node:http server that answers the
 * routes a test gives it (counting every request it receives, bodies included) and forwards
 * everything else to a fake upstream (testkit's chain model: the tip poll, blocks and
 * transactions the evidence reads ask for). The full model of the surface is branch D's
 * testkit/surface-upstream/; this one answers only what each test scripts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';

export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

export interface ScriptedAnswer {
  status?: number;
  headers?: Record<string, string>;
  body: string | Buffer;
}

/** A scripted route: the request (method and URL) it answers, and how. */
export interface ScriptedRoute {
  method?: string;
  match: RegExp;
  answer: (request: ReceivedRequest) => ScriptedAnswer;
}

export interface SurfaceTestUpstream {
  url: string;
  fake: FakeUpstream;
  /** Requests the scripted routes received (forwarded ones are the fake's: fake.requests). */
  received: ReceivedRequest[];
  count(match: RegExp, method?: string): number;
  script(route: ScriptedRoute): void;
  close(): Promise<void>;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** An answer with the upstream's strong ETag: 304 when If-None-Match names it (its permissive reading). */
export function withEtag(request: ReceivedRequest, etag: string, body: unknown, headers: Record<string, string> = {}): ScriptedAnswer {
  const sent = String(request.headers['if-none-match'] ?? '')
    .split(',')
    .map((t) => t.trim().replace(/^W\//, '').replace(/"/g, ''));
  const cache = { 'cache-control': 'public, no-cache, must-revalidate', etag: `"${etag}"` };
  if (sent.includes(etag)) return { status: 304, headers: cache, body: '' };
  return { status: 200, headers: { 'content-type': JSON_TYPE, ...cache, ...headers }, body: JSON.stringify(body) };
}

/** A node RPC answer: JSON, `no-store`, no ETag. */
export const nodeAnswer = (body: unknown, status = 200): ScriptedAnswer => ({
  status,
  headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
  body: JSON.stringify(body),
});

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startSurfaceTestUpstream(): Promise<SurfaceTestUpstream> {
  const fake = await startFakeUpstream();
  const routes: ScriptedRoute[] = [];
  const received: ReceivedRequest[] = [];

  const forward = async (request: ReceivedRequest, res: ServerResponse): Promise<void> => {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (value !== undefined && !['host', 'connection', 'content-length', 'transfer-encoding'].includes(name)) headers[name] = String(value);
    }
    const answer = await fetch(fake.url + request.url, {
      method: request.method,
      headers,
      body: request.method === 'GET' || request.method === 'HEAD' ? undefined : new Uint8Array(request.body),
    });
    const body = Buffer.from(await answer.arrayBuffer());
    const out: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (!['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'content-encoding'].includes(name)) out[name] = value;
    });
    res.writeHead(answer.status, { ...out, 'content-length': String(body.length) });
    res.end(body);
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      const request: ReceivedRequest = { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body: await readAll(req) };
      const route = routes.find((r) => (r.method ?? 'GET') === request.method && r.match.test(request.url));
      if (!route) return forward(request, res);
      received.push(request);
      const answer = route.answer(request);
      const body = typeof answer.body === 'string' ? Buffer.from(answer.body) : answer.body;
      res.writeHead(answer.status ?? 200, { ...answer.headers, 'content-length': String(body.length) });
      res.end(body);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    fake,
    received,
    count: (match, method) => received.filter((r) => match.test(r.url) && (method === undefined || r.method === method)).length,
    script: (route) => routes.unshift(route),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await fake.close();
    },
  };
}
