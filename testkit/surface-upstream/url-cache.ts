/**
 * A deliberately wrong "proxy": caches every answer by method, URL and body for a fixed time,
 * whatever changed. The oracle test and the bench run it to show that the oracle flags stale
 * answers and stale nonces (the "caching by URL for 30 s").
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface UrlCache {
  url: string;
  close(): Promise<void>;
}

export async function startUrlCache(upstreamUrl: string, ttlMs = 30_000): Promise<UrlCache> {
  const cache = new Map<string, { at: number; status: number; body: string }>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      const key = `${req.method} ${req.url} ${body}`;
      const hit = cache.get(key);
      if (hit && Date.now() - hit.at < ttlMs) {
        res.writeHead(hit.status, { 'content-type': 'application/json', 'x-cache': 'HIT' }).end(hit.body);
        return;
      }
      const contentType = String(req.headers['content-type'] ?? 'application/json');
      fetch(upstreamUrl + (req.url ?? '/'), { method: req.method, ...(req.method === 'POST' ? { body, headers: { 'content-type': contentType } } : {}) })
        .then(async (r) => {
          const answer = { at: Date.now(), status: r.status, body: await r.text() };
          cache.set(key, answer);
          res.writeHead(answer.status, { 'content-type': 'application/json', 'x-cache': 'MISS' }).end(answer.body);
        })
        .catch(() => res.writeHead(502).end());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
