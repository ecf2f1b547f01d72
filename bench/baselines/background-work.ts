/**
 * Imported (`node --import`) into baseline 2 for its "with background work" variants: a little
 * of what a proxy does besides answering hits, four times a second each, through the same node
 * code a hit runs through. BACKGROUND_PARTS picks them (comma-separated; all of the first three
 * when unset), so the process-tax scenario can charge each on its own:
 *   undici   an undici request to the upstream (the tip poll)
 *   admin    a second HTTP server asked for its metrics over fetch (the admin port)
 *   redis    with BACKGROUND_REDIS_URL, a second ioredis client's SET and PUBLISH and a subscriber
 *   timers   three empty intervals (the timers alone, no I/O)
 *   metrics  prom-client's default collectors (event-loop delay histogram, GC observer), as the proxy registers them
 * BACKGROUND_THREAD=1 runs the same parts in a worker thread (its own V8 isolate): whether work
 * moved off the serving isolate stops taxing the hit (issue 29 asked; the proxy does not). Its own CPU is a few requests a second; what
 * the variants show is how much more the hit's own path (node's streams, sockets, HTTP and
 * timers, ioredis) costs once other kinds of objects have gone through it in the same isolate.
 * BACKGROUND_UPSTREAM_URL: the upstream to poll; nothing is done without it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker, isMainThread } from 'node:worker_threads';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';

const EVERY_MS = 250;
const upstream = process.env.BACKGROUND_UPSTREAM_URL;
const parts = new Set((process.env.BACKGROUND_PARTS ?? 'undici,admin,redis').split(',').map((part) => part.trim()));
const ignore = (): void => undefined;

function startParts(upstreamUrl: string): void {
  if (parts.has('undici')) {
    const agent = new Agent({ connections: 4 });
    setInterval(() => {
      request(`${upstreamUrl}/extended/v2/blocks?limit=1`, { dispatcher: agent })
        .then((answer) => answer.body.arrayBuffer())
        .catch(ignore);
    }, EVERY_MS);
  }

  const redisUrl = process.env.BACKGROUND_REDIS_URL;
  if (parts.has('redis') && redisUrl) {
    const client = new Redis(redisUrl, { enableAutoPipelining: true });
    const subscriber = new Redis(redisUrl);
    subscriber.subscribe('bench:background').catch(ignore);
    subscriber.on('message', ignore);
    setInterval(() => {
      client
        .set('bench:background', 'x'.repeat(100), 'PX', 1000)
        .then(() => client.publish('bench:background', '{}'))
        .catch(ignore);
    }, EVERY_MS);
  }

  if (parts.has('admin')) {
    const admin = createServer((_req, res) => res.end('ok')).listen(0, '127.0.0.1', () => {
      const { port } = admin.address() as AddressInfo;
      setInterval(() => {
        fetch(`http://127.0.0.1:${port}/metrics`)
          .then((answer) => answer.text())
          .catch(ignore);
      }, EVERY_MS);
    });
  }

  // Loaded only for this part, so that the other variants load what they did before it existed.
  if (parts.has('metrics')) {
    void import('prom-client').then(({ collectDefaultMetrics, Registry }) => collectDefaultMetrics({ register: new Registry() }));
  }

  if (parts.has('timers')) for (let i = 0; i < 3; i++) setInterval(ignore, EVERY_MS);
}

if (upstream) {
  if (isMainThread && process.env.BACKGROUND_THREAD === '1') {
    // The same module in a worker thread: there, isMainThread is false and it starts the parts.
    new Worker(new URL(import.meta.url), { env: process.env }).unref();
  } else {
    startParts(upstream);
  }
}
