/**
 * Baseline for a cold miss: a bare node:http server that forwards each request to the upstream
 * with undici (one Pool, as many connections as the proxy's default) and writes the answer's
 * status and bytes, nothing else. What one process hop costs on this machine, so the proxy's
 * own share of a miss's added latency and CPU can be told apart from the hop's.
 * UPSTREAM_URL, PORT and HOST.
 */
import { createServer } from 'node:http';
import { Pool } from 'undici';

const pool = new Pool(process.env.UPSTREAM_URL ?? '', { connections: 64 });

createServer((req, res) => {
  if (req.url === '/health') {
    res.end('ok');
    return;
  }
  pool.request({ method: 'GET', path: req.url ?? '/', headers: { accept: 'application/json' } }).then(
    async (answer) => {
      const body = Buffer.from(await answer.body.arrayBuffer());
      res.writeHead(answer.statusCode, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
      res.end(body);
    },
    () => res.writeHead(502).end(),
  );
}).listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
