/**
 * Baseline 3: baseline 2's handler served from inside a proxy's own process. The bench starts a
 * proxy with `node --import <this file>`, so this module runs in the proxy's process (before
 * main.ts, and again after its heap relaunch: execve closes the first listener) and listens on
 * BARE_PORT beside the proxy. What it measures is node:http and the same bytes in the proxy's
 * process (its heap, its code, its timers and connections), without the proxy's own work: the
 * proxy's hit against it is that work, it against the standalone baseline 2 is the process.
 *
 * BARE_HEADERS_FILE: a JSON array of [name, value] pairs, the head of one of the proxy's hits,
 * written by the bench once the proxy answers (read at the first request). BARE_REDIS_URL and
 * BARE_KEY: answer with one auto-pipelined ioredis getBuffer of BARE_KEY per request (the Redis
 * tier's baseline); else BARE_BODY (base64) from memory. Nothing is done without BARE_PORT.
 */
import { readFileSync } from 'node:fs';
import { createServer, type RequestListener } from 'node:http';
import { Redis } from 'ioredis';

const port = process.env.BARE_PORT;
if (port) {
  let head: string[] | undefined;
  const headOf = (bodyLength: number): string[] => {
    head ??= (JSON.parse(readFileSync(process.env.BARE_HEADERS_FILE ?? '', 'utf8')) as Array<[string, string]>)
      .filter(([name]) => name !== 'content-length')
      .flat();
    return [...head, 'content-length', String(bodyLength)];
  };
  const redisUrl = process.env.BARE_REDIS_URL;
  let handler: RequestListener;
  if (redisUrl) {
    const redis = new Redis(redisUrl, { enableAutoPipelining: true });
    const key = process.env.BARE_KEY ?? 'bench:body';
    handler = (_req, res) => {
      redis.getBuffer(key).then(
        (body) => {
          if (!body) {
            res.writeHead(404).end();
            return;
          }
          res.writeHead(200, headOf(body.length));
          res.end(body);
        },
        () => res.writeHead(503).end(),
      );
    };
  } else {
    const body = Buffer.from(process.env.BARE_BODY ?? '', 'base64');
    handler = (_req, res) => {
      res.writeHead(200, headOf(body.length));
      res.end(body);
    };
  }
  createServer(handler).listen(Number(port), '127.0.0.1');
}
