/**
 * Baseline: a bare node:http server answering the same bytes from a Map (the ceiling for Node
 * on this machine). BODY is the body, base64; PORT and HOST as for the proxy.
 */
import { createServer } from 'node:http';

const body = Buffer.from(process.env.BODY ?? '', 'base64');
const answers = new Map<string, Buffer>([['/x', body]]);

createServer((req, res) => {
  const found = answers.get(req.url === '/health' ? '/x' : (req.url ?? ''));
  if (!found) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': found.length });
  res.end(found);
}).listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
