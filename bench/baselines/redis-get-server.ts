/**
 * Baseline for the Redis tier: a bare node:http server doing one ioredis `getBuffer` per
 * request (auto-pipelining on, as the issue suggests for the proxy) and writing the bytes.
 * REDIS_URL, KEY (holding the body), PORT and HOST.
 */
import { createServer } from 'node:http';
import { Redis } from 'ioredis';

const redis = new Redis(process.env.REDIS_URL ?? '', { enableAutoPipelining: true });
const key = process.env.KEY ?? 'bench:body';

createServer((req, res) => {
  redis.getBuffer(key).then(
    (body) => {
      if (!body) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
      res.end(body);
    },
    () => res.writeHead(503).end(),
  );
}).listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
