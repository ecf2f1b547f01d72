/**
 * Settings of the live chain (issue 16): the push feed that tells the tip tracker of a new
 * block the moment the upstream announces it, the optional Redis change notifier, the warm-up of
 * a new block, and the fan-out of clients' WebSocket subscriptions. Kept apart from config.ts so
 * that the live parts own their schema; config.ts mounts it under `live`.
 */
import { z } from 'zod';
import { parseRedisUrl } from '../cache/redis-url.js';

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();

export const LiveSchema = z
  .object({
    push: z
      .object({
        enabled: z
          .boolean()
          .describe(
            "Follow each upstream's `block` and `mempool` notifications over its `/extended/v1/ws` JSON-RPC WebSocket, and poll its tip at once when one arrives (see [Live chain](live-chain.md)); the poll stays as fallback and cross-check",
          ),
        crossCheckIntervalMs: positiveInt.describe(
          'Tip poll interval of an upstream while its push feed is believed (the poll stays as a cross-check); otherwise `chainTip.pollIntervalMs`. In [worker mode](deployment.md#worker-mode) also how often a worker that is not the tip leader polls on its own (at least `chainTip.pollIntervalMs`)',
        ),
        distrustMs: positiveInt.describe(
          'After a poll finds a block the push feed did not announce (quiet or disagreeing feed), how long that feed is not believed and the tip is polled at `chainTip.pollIntervalMs`',
        ),
        pingIntervalMs: positiveInt.describe(
          'WebSocket ping to each upstream connection; one not answered by the next ping closes it, and it reconnects. A connection open this long counts as up: after it drops, the reconnect delays start again from `live.push.reconnectMinMs`',
        ),
        reconnectMinMs: positiveInt.describe(
          'First delay before an upstream WebSocket that dropped or failed to open is tried again; each further failed attempt doubles it (with jitter over its upper half) up to `live.push.reconnectMaxMs`',
        ),
        reconnectMaxMs: positiveInt.describe(
          'Longest delay between attempts to open an upstream WebSocket (and between failed Redis notifier reads): an upstream that serves no WebSocket or refuses the upgrade (`404`, `401`, `403`, any answer but `101`) is tried this seldom in the end, and its tip polled every `chainTip.pollIntervalMs` meanwhile ([Live chain](live-chain.md#an-upstream-without-push))',
        ),
      })
      .strict()
      .refine((push) => push.reconnectMaxMs >= push.reconnectMinMs, { message: 'must not be less than live.push.reconnectMinMs', path: ['reconnectMaxMs'] }),
    redisNotifier: z
      .object({
        url: z
          .string()
          .refine((url) => parseRedisUrl(url) !== undefined, 'must be redis://, rediss://, redis+sentinel://h1:p1,h2:p2/name or redis+cluster://h1:p1,h2:p2')
          .nullable()
          .describe("The upstream's own Redis, where its change notifier (`REDIS_NOTIFIER_ENABLED`) writes applied and rolled-back blocks; `null`: not read"),
        stream: z.string().min(1).describe("The notifier's stream (the upstream's `REDIS_QUEUE`)"),
        blockMs: positiveInt.describe('Longest one `XREAD` waits for a new entry before it asks again'),
      })
      .strict(),
    warm: z
      .object({
        enabled: z.boolean().describe('When a block arrives, fetch what clients will ask for next before they ask'),
        maxRequestsPerBlock: nonNegativeInt.describe('Upstream requests one block may cost the warm-up at most'),
        hotUrls: nonNegativeInt.describe('Most-asked tip-class URLs remembered to be refreshed on a new block (`0`: only the block itself)'),
      })
      .strict(),
    fanout: z
      .object({
        enabled: z
          .boolean()
          .describe(
            "Serve clients' `/extended/v1/ws` and `/socket.io/` subscriptions from one upstream connection per channel; `false`: every client gets its own tunnel to the upstream (`passthrough.websockets`)",
          ),
        maxClients: positiveInt.describe('WebSocket and Socket.IO clients held at once; beyond, an upgrade gets `503`'),
        maxSubscriptionsPerClient: positiveInt.describe('Subscriptions one client may hold; beyond, its subscribe is refused'),
        maxMessagesPerSecondPerClient: positiveInt.describe('Messages a client may send per second (a 10 s burst allowed); beyond, it is closed (`1008`)'),
        maxBufferedBytesPerClient: positiveInt.describe(
          'Bytes waiting to be written to one client; beyond, the slow client is closed (`1013`) rather than buffered',
        ),
        maxUpstreamSubscriptions: positiveInt.describe('Distinct subscriptions held on one upstream connection; beyond, new distinct topics are refused'),
      })
      .strict(),
  })
  .strict();

export type LiveSettings = z.infer<typeof LiveSchema>;
