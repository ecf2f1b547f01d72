/**
 * Baseline for a cold miss and for the passthrough: a bare node:http server that forwards each
 * request to the upstream with undici (one Pool, as many connections as the proxy's default):
 * its method, path and body (streamed, framed by the client's Content-Length), and writes the
 * answer's status and bytes, nothing else. What one process hop costs on this machine, so the
 * proxy's own share of the added latency and CPU can be told apart from the hop's.
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
  const length = req.headers['content-length'];
  const headers: Record<string, string> = { accept: 'application/json' };
  if (length !== undefined) {
    headers['content-length'] = length;
    headers['content-type'] = req.headers['content-type'] ?? 'application/octet-stream';
  }
  pool.request({ method: req.method ?? 'GET', path: req.url ?? '/', headers, body: length === undefined ? null : req }).then(
    async (answer) => {
      const body = Buffer.from(await answer.body.arrayBuffer());
      res.writeHead(answer.statusCode, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
      res.end(body);
    },
    () => res.writeHead(502).end(),
  );
}).listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
