/**
 * The bare servers' request handlers, shared by the standalone baselines (map-server.ts,
 * redis-get-server.ts) and baseline 3 (in-process.ts, the same handler inside a proxy's process),
 * so that baseline 3 does exactly baseline 2's work. The head is asked for per request (a
 * function returning a list built once): baseline 3 learns its head only once the proxy answers.
 */
import type { RequestListener } from 'node:http';
import type { Redis } from 'ioredis';

const JSON_TYPE = 'application/json; charset=utf-8';

/** A hit's head, a JSON list of [name, value] pairs, as a flat list without content-length. */
export const headFromJson = (json: string): string[] => (JSON.parse(json) as Array<[string, string]>).filter(([name]) => name !== 'content-length').flat();

/**
 * The same bytes from a Map: `body` at /x (and /health, for the bench's readiness check), and at
 * /x/0 to /x/<entries-1>; 404 elsewhere. `head`: the whole head written, content-length included; undefined: not ready (503).
 */
export function answerFromMap(body: Buffer, head: () => string[] | undefined, entries = 0): RequestListener {
  const answers = new Map<string, Buffer>([['/x', body]]);
  // `entries` more keys, /x/0 and on, for a lookup among as many as a filled cache holds.
  for (let i = 0; i < entries; i++) answers.set(`/x/${i}`, body);
  return (req, res) => {
    const found = answers.get(req.url === '/health' ? '/x' : (req.url ?? ''));
    const headers = head();
    if (!found || !headers) {
      res.writeHead(found ? 503 : 404).end();
      return;
    }
    res.writeHead(200, headers);
    res.end(found);
  };
}

/** The minimal head of baseline 1 for a body of `length` bytes. */
export const minimalHead = (length: number): string[] => ['content-type', JSON_TYPE, 'content-length', String(length)];

/**
 * One ioredis getBuffer of `key` per request, its bytes written. `head`: the head without
 * content-length (added from the reply); undefined: the two minimal headers.
 */
export function answerFromRedis(redis: Redis, key: string, head: () => string[] | undefined): RequestListener {
  return (_req, res) => {
    redis.getBuffer(key).then(
      (body) => {
        if (!body) {
          res.writeHead(404).end();
          return;
        }
        const fixed = head();
        if (fixed) res.writeHead(200, [...fixed, 'content-length', String(body.length)]);
        else res.writeHead(200, { 'content-type': JSON_TYPE, 'content-length': body.length });
        res.end(body);
      },
      () => res.writeHead(503).end(),
    );
  };
}
