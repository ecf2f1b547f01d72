/**
 * Imported (`node --import`) into baseline 2 for its "with background work" variant: a little
 * of what a proxy does besides answering hits, four times a second each, through the same node
 * code a hit runs through: an undici request to the upstream (the tip poll), a second HTTP
 * server asked for its metrics (the admin port), and with BACKGROUND_REDIS_URL a second ioredis
 * client's SET and PUBLISH and a subscriber (the purge channel). Its own CPU is a few requests
 * a second; what it shows is how much more the hit's own path (node's streams, sockets, HTTP and
 * timers, ioredis) costs once other kinds of objects have gone through it.
 * BACKGROUND_UPSTREAM_URL: the upstream to poll; nothing is done without it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { Agent, request } from 'undici';

const EVERY_MS = 250;
const upstream = process.env.BACKGROUND_UPSTREAM_URL;

if (upstream) {
  const agent = new Agent({ connections: 4 });
  const ignore = (): void => undefined;
  setInterval(() => {
    request(`${upstream}/extended/v2/blocks?limit=1`, { dispatcher: agent })
      .then((answer) => answer.body.arrayBuffer())
      .catch(ignore);
  }, EVERY_MS);

  const redisUrl = process.env.BACKGROUND_REDIS_URL;
  if (redisUrl) {
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

  const admin = createServer((_req, res) => res.end('ok')).listen(0, '127.0.0.1', () => {
    const { port } = admin.address() as AddressInfo;
    setInterval(() => {
      fetch(`http://127.0.0.1:${port}/metrics`)
        .then((answer) => answer.text())
        .catch(ignore);
    }, EVERY_MS);
  });
}
