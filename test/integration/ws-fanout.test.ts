/**
 * The /extended/v1/ws fan-out through the real proxy, with real `ws` clients, against the fake
 * upstream's JSON-RPC channel (a real ws server written from the upstream's source): one
 * upstream connection for many clients, notifications and replies byte for byte as a client
 * connected to the upstream directly gets them, only to the clients of a topic, an upstream
 * that drops mid-stream, and the bounds (slow clients, subscriptions, message rate, frame size,
 * rate-limit admission of the upgrade, total clients), and shutdown.
 */
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { c32address } from 'c32check';
import type { ProxyServer } from '../../src/composition-root.js';
import { UpstreamLinks } from '../../src/live/upstream-links.js';
import { createWsRpcFanout, MAX_PENDING_BYTES, type WsRpcFanout } from '../../src/live/ws-rpc-fanout.js';
import { MAX_TOPIC_LENGTH } from '../../src/live/client-bounds.js';
import { noopTelemetry } from '../../src/telemetry/telemetry.js';
import { RECORDED, startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { exchangeRaw, parseResponses } from '../support/raw-socket.js';

const ADDRESS_A = c32address(22, `${'00'.repeat(19)}01`);
const ADDRESS_B = c32address(22, `${'00'.repeat(19)}02`);
const TX_ID = `0x${'cd'.repeat(32)}`;

/** A WebSocket client that records every text frame it receives and how it closed. */
interface Peer {
  ws: WebSocket;
  frames: string[];
  closed: Promise<number>;
  isClosed: () => boolean;
  /** Sends a frame and resolves with the next frame received. */
  ask(text: string | Buffer): Promise<string>;
}

async function connect(baseUrl: string, options: WebSocket.ClientOptions = {}): Promise<Peer> {
  const ws = new WebSocket(`${baseUrl.replace('http', 'ws')}/extended/v1/ws`, options);
  const frames: string[] = [];
  let closedFlag = false;
  const closed = new Promise<number>((resolve) =>
    ws.once('close', (code) => {
      closedFlag = true;
      resolve(code);
    }),
  );
  ws.on('error', () => undefined);
  ws.on('message', (data: Buffer) => frames.push(data.toString()));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade answered ${res.statusCode}`)));
    ws.once('error', reject);
  });
  const ask = (text: string | Buffer): Promise<string> => {
    const seen = frames.length;
    ws.send(text, { binary: Buffer.isBuffer(text) });
    return expect
      .poll(() => frames.length, { timeout: 5_000 })
      .toBeGreaterThan(seen)
      .then(() => frames[seen] as string);
  };
  return { ws, frames, closed, isClosed: () => closedFlag, ask };
}

const subscribe = (id: number, params: Record<string, unknown>): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'subscribe', params });
const unsubscribe = (id: number, params: Record<string, unknown>): string => JSON.stringify({ jsonrpc: '2.0', id, method: 'unsubscribe', params });

const upgradeHead = (path = '/extended/v1/ws'): string =>
  `GET ${path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`;

describe('WebSocket fan-out of /extended/v1/ws', () => {
  const { defer } = useCleanups();

  const upstreamWithChannel = async (): Promise<FakeUpstream> => {
    const upstream = await startFakeUpstream({ rpcChannel: true });
    defer(() => upstream.close());
    return upstream;
  };

  const proxyFor = async (upstream: FakeUpstream, overrides: Record<string, unknown> = {}, now?: () => number): Promise<ProxyServer> => {
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides, now });
    defer(() => proxy.close());
    return proxy;
  };

  const peer = async (url: string, options?: WebSocket.ClientOptions): Promise<Peer> => {
    const client = await connect(url, options);
    defer(async () => client.ws.terminate());
    return client;
  };

  it('serves many block subscribers from ONE upstream connection, each notification with the bytes a direct client gets', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream);
    const direct = await peer(upstream.url);
    const directReply = await direct.ask(subscribe(1, { event: 'block' }));
    const clients = await Promise.all(Array.from({ length: 40 }, () => peer(proxy.url)));
    const replies = await Promise.all(clients.map((client) => client.ask(subscribe(1, { event: 'block' }))));
    expect(new Set(replies)).toEqual(new Set([directReply]));
    // The direct client and the proxy's one link.
    expect(upstream.rpc.connections).toBe(2);
    expect(upstream.rpc.subscribers('block')).toBe(2);

    upstream.advanceTip();
    await expect.poll(() => direct.frames.length).toBe(2);
    const notification = direct.frames[1] as string;
    expect(JSON.parse(notification)).toMatchObject({ jsonrpc: '2.0', method: 'block', params: { height: upstream.tip().height } });
    for (const client of clients) await expect.poll(() => client.frames.length).toBe(2);
    expect(new Set(clients.map((client) => client.frames[1]))).toEqual(new Set([notification]));
    expect(upstream.rpc.connections).toBe(2);
    expect(await metricValue(proxy, 'stacks_proxy_ws_clients', { channel: 'rpc' })).toBe(40);
    expect(await metricValue(proxy, 'stacks_proxy_ws_subscriptions', { channel: 'rpc', event: 'block' })).toBe(40);
    expect(await metricValue(proxy, 'stacks_proxy_ws_messages_total', { channel: 'rpc', direction: 'upstream_in' })).toBe(1);
    // 40 replies and 40 notifications.
    expect(await metricValue(proxy, 'stacks_proxy_ws_messages_total', { channel: 'rpc', direction: 'out' })).toBe(80);
  });

  it('sends an address_tx_update only to the clients of that address', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream);
    const [a, b, both] = await Promise.all([peer(proxy.url), peer(proxy.url), peer(proxy.url)]);
    expect(await a.ask(subscribe(1, { event: 'address_tx_update', address: ADDRESS_A }))).toBe(`{"jsonrpc":"2.0","id":1,"result":{"address":"${ADDRESS_A}"}}`);
    await b.ask(subscribe(1, { event: 'address_tx_update', address: ADDRESS_B }));
    await both.ask(
      JSON.stringify([
        JSON.parse(subscribe(1, { event: 'address_tx_update', address: ADDRESS_A })),
        JSON.parse(subscribe(2, { event: 'address_tx_update', address: ADDRESS_B })),
      ]),
    );
    expect(upstream.rpc.subscribers('principalTransactions', ADDRESS_A)).toBe(1);
    expect(upstream.rpc.subscribers('principalTransactions', ADDRESS_B)).toBe(1);

    expect(upstream.rpc.publish('address_tx_update', { address: ADDRESS_A, tx_id: TX_ID, tx_status: 'success' })).toBe(1);
    expect(upstream.rpc.publish('address_tx_update', { address: ADDRESS_B, tx_id: TX_ID, tx_status: 'pending' })).toBe(1);
    await expect.poll(() => both.frames.length).toBe(3);
    await expect.poll(() => a.frames.length).toBe(2);
    await expect.poll(() => b.frames.length).toBe(2);
    // Each got its own address's notification first, so none got the other's.
    expect(JSON.parse(a.frames[1] as string).params.address).toBe(ADDRESS_A);
    expect(JSON.parse(b.frames[1] as string).params.address).toBe(ADDRESS_B);
    expect(both.frames.slice(1).map((frame) => JSON.parse(frame).params.address)).toEqual([ADDRESS_A, ADDRESS_B]);
    expect(upstream.rpc.connections).toBe(1);
  });

  it('unsubscribes: the reply is the upstream’s, and the last client to leave a topic lets go of it upstream', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream);
    const direct = await peer(upstream.url);
    const [first, second] = await Promise.all([peer(proxy.url), peer(proxy.url)]);
    await first.ask(subscribe(1, { event: 'tx_update', tx_id: TX_ID }));
    await second.ask(subscribe(1, { event: 'tx_update', tx_id: TX_ID }));
    await direct.ask(subscribe(1, { event: 'tx_update', tx_id: TX_ID }));
    expect(upstream.rpc.subscribers('transaction', TX_ID)).toBe(2);
    const directReply = await direct.ask(unsubscribe(2, { event: 'tx_update', tx_id: TX_ID.toUpperCase().replace('0X', '') }));
    expect(await first.ask(unsubscribe(2, { event: 'tx_update', tx_id: TX_ID.toUpperCase().replace('0X', '') }))).toBe(directReply);
    // The second client still holds it: the link stays subscribed and the second client gets its update.
    expect(upstream.rpc.subscribers('transaction', TX_ID)).toBe(1);
    expect(upstream.rpc.publish('tx_update', { tx_id: TX_ID, tx_status: 'success' })).toBe(1);
    await expect.poll(() => second.frames.length).toBe(2);
    expect(first.frames).toHaveLength(2);
    await second.ask(unsubscribe(3, { event: 'tx_update', tx_id: TX_ID }));
    await expect.poll(() => upstream.rpc.subscribers('transaction', TX_ID)).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_ws_subscriptions', { channel: 'rpc', event: 'tx_update' })).toBe(0);
  });

  it('answers every message byte for byte as the upstream does, errors included', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream);
    const direct = await peer(upstream.url);
    const client = await peer(proxy.url);
    const messages: Array<string | Buffer> = [
      '{not json',
      subscribe(1, { event: 'tx_update', tx_id: '0x1234' }),
      subscribe(2, { event: 'tx_update', tx_id: `0X${'AB'.repeat(32)}` }),
      subscribe(3, { event: 'blocks' }),
      subscribe(4, {}),
      subscribe(5, { event: 'address_balance_update', address: 'SP123' }),
      subscribe(6, { event: 'address_balance_update', address: `${ADDRESS_A}.my-contract` }),
      JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ping' }),
      JSON.stringify({ jsonrpc: '2.0', id: 8, result: 1 }),
      JSON.stringify({ id: 9, method: 'subscribe' }),
      '[]',
      JSON.stringify([
        JSON.parse(subscribe(10, { event: 'mempool' })),
        { jsonrpc: '2.0', method: 'subscribe', params: { event: 'block' } },
        JSON.parse(subscribe(11, { event: 'nft_asset_event', asset_identifier: 'SP1.nft::x', value: '0x01' })),
        JSON.parse(subscribe(12, { event: 'nope' })),
        'x',
      ]),
      JSON.stringify([{ jsonrpc: '2.0', method: 'subscribe', params: { event: 'block' } }]),
      Buffer.from(subscribe(13, { event: 'block' })),
      unsubscribe(14, { event: 'mempool' }),
      // Handlers that throw on an object whose toString is not a function: the whole message fails, id null.
      subscribe(15, { event: 'nft_asset_event', asset_identifier: { toString: 1 }, value: '0x01' }),
      subscribe(16, { event: 'nft_collection_event', asset_identifier: { toString: 1 } }),
    ];
    for (const message of messages) {
      const label = message.toString();
      expect(await client.ask(message), label).toBe(await direct.ask(message));
    }
  });

  it('keeps clients connected when the upstream drops mid-stream, and delivers again once resubscribed', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream);
    const clients = await Promise.all(Array.from({ length: 5 }, () => peer(proxy.url)));
    await Promise.all(clients.map((client) => client.ask(subscribe(1, { event: 'block' }))));
    await Promise.all(clients.map((client, i) => client.ask(subscribe(2, { event: 'address_balance_update', address: i % 2 === 0 ? ADDRESS_A : ADDRESS_B }))));
    upstream.advanceTip();
    for (const client of clients) await expect.poll(() => client.frames.length).toBe(3);

    upstream.rpc.dropAll();
    await expect.poll(() => upstream.rpc.connectionsOpened, { timeout: 10_000 }).toBe(2);
    await expect.poll(() => upstream.rpc.subscribers('block'), { timeout: 10_000 }).toBe(1);
    await expect.poll(() => upstream.rpc.subscribers('principalStxBalance', ADDRESS_B), { timeout: 10_000 }).toBe(1);
    expect(clients.some((client) => client.isClosed())).toBe(false);

    upstream.advanceTip();
    upstream.rpc.publish('address_balance_update', { address: ADDRESS_B, balance: '10' });
    for (const [i, client] of clients.entries()) await expect.poll(() => client.frames.length).toBe(i % 2 === 0 ? 4 : 5);
    expect(JSON.parse(clients[0]?.frames[3] as string).params.height).toBe(upstream.tip().height);
    expect(clients.some((client) => client.isClosed())).toBe(false);
    expect(await metricValue(proxy, 'stacks_proxy_ws_clients', { channel: 'rpc' })).toBe(5);
  });

  it('drops a client that cannot keep up (1013) while the others go on', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream, { live: { fanout: { maxBufferedBytesPerClient: 256 * 1024 } } });
    const [slow, fast] = await Promise.all([peer(proxy.url), peer(proxy.url)]);
    await slow.ask(subscribe(1, { event: 'block' }));
    await fast.ask(subscribe(1, { event: 'block' }));
    // The slow client stops reading: the proxy's writes pile up behind its socket.
    (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const filler = 'x'.repeat(64 * 1024);
    let sent = 0;
    while ((await metricValue(proxy, 'stacks_proxy_ws_client_drops_total', { channel: 'rpc', reason: 'slow' })) === 0) {
      if (sent >= 2_000) throw new Error('the slow client was never dropped');
      upstream.rpc.publish('block', { height: sent, filler });
      sent += 1;
      await expect.poll(() => fast.frames.length).toBe(sent + 1);
    }
    upstream.rpc.publish('block', { height: -1 });
    await expect.poll(() => fast.frames.length).toBe(sent + 2);
    expect(JSON.parse(fast.frames.at(-1) as string).params.height).toBe(-1);
    expect(fast.isClosed()).toBe(false);
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    expect([1013, 1006]).toContain(await slow.closed);
    await expect.poll(() => metricValue(proxy, 'stacks_proxy_ws_clients', { channel: 'rpc' })).toBe(1);
  });

  it('refuses a subscribe beyond live.fanout.maxSubscriptionsPerClient, and keeps the client', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream, { live: { fanout: { maxSubscriptionsPerClient: 2 } } });
    const client = await peer(proxy.url);
    await client.ask(subscribe(1, { event: 'block' }));
    await client.ask(subscribe(2, { event: 'mempool' }));
    // The same topic again is not one more.
    expect(await client.ask(subscribe(3, { event: 'block' }))).toBe('{"jsonrpc":"2.0","id":3,"result":{}}');
    expect(await client.ask(subscribe(4, { event: 'microblock' }))).toBe(
      '{"jsonrpc":"2.0","id":4,"error":{"message":"Too many subscriptions","code":-32000,"data":"one connection may hold at most 2 subscriptions"}}',
    );
    expect(upstream.rpc.subscribers('microblock')).toBe(0);
    await client.ask(unsubscribe(5, { event: 'mempool' }));
    expect(await client.ask(subscribe(6, { event: 'microblock' }))).toBe('{"jsonrpc":"2.0","id":6,"result":{}}');
    expect(client.isClosed()).toBe(false);
    expect(await metricValue(proxy, 'stacks_proxy_ws_client_drops_total', { channel: 'rpc', reason: 'subscriptions' })).toBe(1);
  });

  it('closes a client that sends faster than live.fanout.maxMessagesPerSecondPerClient (1008)', async () => {
    const upstream = await upstreamWithChannel();
    // A clock that does not move: the 10 s burst (10 messages at 1 a second) is all the client has.
    const proxy = await proxyFor(upstream, { live: { fanout: { maxMessagesPerSecondPerClient: 1 } } }, () => Date.UTC(2026, 0, 1));
    const client = await peer(proxy.url);
    for (let id = 1; id <= 10; id++) await client.ask(subscribe(id, { event: 'block' }));
    client.ws.send(subscribe(11, { event: 'block' }));
    expect(await client.closed).toBe(1008);
    expect(client.frames).toHaveLength(10);
    expect(await metricValue(proxy, 'stacks_proxy_ws_client_drops_total', { channel: 'rpc', reason: 'rate' })).toBe(1);
  });

  it('refuses a topic longer than MAX_TOPIC_LENGTH with a JSON-RPC error: never held, never sent upstream, the client kept', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream);
    const client = await peer(proxy.url);
    const assetIdentifier = `${RECORDED.contractId}::token`;
    // The topic key is `nft_asset_event:<asset_identifier>+<value>`: `fits` makes it exactly the bound.
    const fits = 'a'.repeat(MAX_TOPIC_LENGTH - `nft_asset_event:${assetIdentifier}+`.length);
    const refusal = (id: number): string =>
      `{"jsonrpc":"2.0","id":${id},"error":{"message":"Topic too long","code":-32000,"data":"a topic may be at most ${MAX_TOPIC_LENGTH} characters"}}`;
    expect(await client.ask(subscribe(1, { event: 'nft_asset_event', asset_identifier: assetIdentifier, value: `${fits}a` }))).toBe(refusal(1));
    // In a batch, only the long topic is refused.
    const batch = JSON.parse(
      await client.ask(
        `[${subscribe(2, { event: 'nft_collection_event', asset_identifier: `${assetIdentifier}${'b'.repeat(2_000)}` })},${subscribe(3, { event: 'block' })}]`,
      ),
    );
    expect(batch).toEqual([JSON.parse(refusal(2)), { jsonrpc: '2.0', id: 3, result: {} }]);
    expect(await client.ask(subscribe(4, { event: 'nft_asset_event', asset_identifier: assetIdentifier, value: fits }))).toBe(
      JSON.stringify({ jsonrpc: '2.0', id: 4, result: { asset_identifier: assetIdentifier, value: fits } }),
    );
    // Upstream: the topic at the bound, nothing longer.
    const nftSubscribes = upstream.rpc.requests.filter(
      (request) => request.method === 'subscribe' && String((request.params as { event?: unknown }).event).startsWith('nft_'),
    );
    expect(nftSubscribes.map((request) => request.params)).toEqual([{ event: 'nft_asset_event', asset_identifier: assetIdentifier, value: fits }]);
    expect(upstream.rpc.subscribers('nftAssetEvent', `${assetIdentifier}+${fits}`)).toBe(1);
    expect(upstream.rpc.subscribers('nftCollectionEvent', `${assetIdentifier}${'b'.repeat(2_000)}`)).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_ws_subscriptions', { channel: 'rpc', event: 'nft_collection_event' })).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_ws_client_drops_total', { channel: 'rpc', reason: 'topic_length' })).toBe(2);
    expect(client.isClosed()).toBe(false);
  });

  it('answers 100 pipelined subscribes, every one in order, without closing the client', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream);
    const client = await peer(proxy.url);
    const txId = (i: number): string => `0x${i.toString(16).padStart(64, '0')}`;
    // Sent at once, as a wallet watching 100 transactions may: all within the 10 s burst of the message rate.
    for (let id = 0; id < 100; id += 1) client.ws.send(subscribe(id, { event: 'tx_update', tx_id: txId(id) }));
    await expect.poll(() => client.frames.length >= 100 || client.isClosed(), { timeout: 15_000 }).toBe(true);
    expect(client.isClosed()).toBe(false);
    expect(client.frames).toEqual(Array.from({ length: 100 }, (_, id) => JSON.stringify({ jsonrpc: '2.0', id, result: { tx_id: txId(id) } })));
    expect(upstream.rpc.subscribers('transaction', txId(99))).toBe(1);
  });

  it('closes (1008) a client whose unanswered messages pass MAX_PENDING_BYTES while the upstream does not answer', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream, { live: { fanout: { maxMessagesPerSecondPerClient: 1_000, maxSubscriptionsPerClient: 10_000 } } });
    // A subscribe waits for the upstream's confirmation; a silent upstream leaves every one unanswered for 5 s.
    const first = await peer(proxy.url);
    await first.ask(subscribe(1, { event: 'block' }));
    upstream.rpc.setSilent(true);
    const client = await peer(proxy.url);
    const padded = (id: number): string => subscribe(id, { event: 'tx_update', tx_id: `0x${id.toString(16).padStart(64, '0')}`, pad: 'p'.repeat(60_000) });
    const frames = Math.ceil(MAX_PENDING_BYTES / 60_000) + 1;
    for (let id = 0; id < frames; id += 1) client.ws.send(padded(id));
    expect(await client.closed).toBe(1008);
    expect(client.frames).toHaveLength(0);
    expect(await metricValue(proxy, 'stacks_proxy_ws_client_drops_total', { channel: 'rpc', reason: 'pending' })).toBe(1);
  });

  it('delivers a notification larger than maxBufferedBytesPerClient to a client that reads', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream, { live: { fanout: { maxBufferedBytesPerClient: 65_536 } } });
    const client = await peer(proxy.url);
    await client.ask(subscribe(1, { event: 'block' }));
    const txs = Array.from({ length: 2_000 }, (_, i) => `0x${i.toString(16).padStart(64, '0')}`);
    upstream.rpc.publish('block', { height: 1, txs });
    upstream.rpc.publish('block', { height: 2, txs });
    await expect.poll(() => client.frames.length >= 3 || client.isClosed(), { timeout: 5_000 }).toBe(true);
    expect(client.isClosed()).toBe(false);
    expect(client.frames.slice(1).map((frame) => JSON.parse(frame).params.height)).toEqual([1, 2]);
    expect(await metricValue(proxy, 'stacks_proxy_ws_client_drops_total', { channel: 'rpc', reason: 'slow' })).toBe(0);
  });

  it('closes a client whose frame is over the bound (1009)', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream);
    const client = await peer(proxy.url);
    client.ws.send('x'.repeat(65 * 1024));
    expect(await client.closed).toBe(1009);
  });

  it('admits upgrades like tunnels (a miss charged each; over the budget, a 429) without an upstream upgrade', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream, {
      rateLimit: { enabled: true, windowMs: 60_000, anonymous: { limit: 2 }, keyed: { limit: 10 }, hitCost: 1, missCost: 1 },
    });
    await peer(proxy.url);
    await peer(proxy.url);
    const [refused] = parseResponses(await exchangeRaw(proxy.port, upgradeHead()));
    expect(refused?.status).toBe(429);
    expect(refused?.headers['ratelimit-remaining']).toBe('0');
    // Nobody subscribed: the fan-out has not needed the upstream at all.
    expect(upstream.count((r) => r.method === 'UPGRADE')).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_rate_limit_requests_total', { tier: 'anonymous', result: 'refused' })).toBe(1);
  });

  it('answers 503 in the upstream’s shape when live.fanout.maxClients are connected, and admits again once one leaves', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream, { live: { fanout: { maxClients: 2 } } });
    const first = await peer(proxy.url);
    await peer(proxy.url);
    const [full] = parseResponses(await exchangeRaw(proxy.port, upgradeHead()));
    expect(full?.status).toBe(503);
    expect(JSON.parse(full?.body ?? '')).toEqual({
      statusCode: 503,
      error: 'Service Unavailable',
      message: 'The proxy holds as many WebSocket clients as it may (live.fanout.maxClients); retry shortly',
    });
    first.ws.close();
    await first.closed;
    // The slot comes back when the proxy sees the socket close.
    const admitted = async (): Promise<boolean> => {
      try {
        (await peer(proxy.url)).ws.close();
        return true;
      } catch {
        return false;
      }
    };
    await expect.poll(admitted, { timeout: 5_000 }).toBe(true);
  });

  it('answers 400 on a path that only starts with /extended/v1/ws, as the upstream’s ws server does', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream);
    const [answer] = parseResponses(await exchangeRaw(proxy.port, upgradeHead('/extended/v1/wsx')));
    expect(answer?.status).toBe(400);
    await peer(`${proxy.url}`);
  });

  it('routes other upgrades to the passthrough as before, and /socket.io/ to its own fan-out', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream);
    const [notFound] = parseResponses(await exchangeRaw(proxy.port, upgradeHead('/extended/v1/nope')));
    expect(notFound?.status).toBe(404);
    // /socket.io/ is the Socket.IO fan-out's: the proxy's own Engine.IO opens the session, and
    // the upstream sees no upgrade until a room is subscribed.
    const socket = new WebSocket(`${proxy.url.replace('http', 'ws')}/socket.io/?EIO=4&transport=websocket`);
    defer(async () => socket.terminate());
    const opened = new Promise<string>((resolve) => socket.once('message', (data: Buffer) => resolve(data.toString())));
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    expect(await opened).toMatch(/^0\{"sid":/);
    expect(upstream.count((r) => r.method === 'UPGRADE' && r.url.startsWith('/socket.io/'))).toBe(0);
  });

  it('answers other upgrades itself when the passthrough is off, and still fans out', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await proxyFor(upstream, { passthrough: { enabled: false } });
    const [notFound] = parseResponses(await exchangeRaw(proxy.port, upgradeHead('/extended/v2/ws')));
    expect(notFound?.status).toBe(404);
    const [refused] = parseResponses(await exchangeRaw(proxy.port, upgradeHead('/extended/v1/ws/%zz')));
    expect(refused?.status).toBe(400);
    expect(upstream.count((r) => r.method === 'UPGRADE')).toBe(0);
    const client = await peer(proxy.url);
    expect(await client.ask(subscribe(1, { event: 'block' }))).toBe('{"jsonrpc":"2.0","id":1,"result":{}}');
    // The one upgrade the upstream saw is the link's.
    expect(upstream.count((r) => r.method === 'UPGRADE')).toBe(1);
  });

  it('closes every client with 1001 at shutdown', async () => {
    const upstream = await upstreamWithChannel();
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url] });
    const clients = await Promise.all([connect(proxy.url), connect(proxy.url)]);
    await clients[0]?.ask(subscribe(1, { event: 'block' }));
    await proxy.close();
    expect(await Promise.all(clients.map((client) => client.closed))).toEqual([1001, 1001]);
    await expect.poll(() => upstream.rpc.connections).toBe(0);
  });
});

describe('the fan-out on its own server (heartbeat, moving to another upstream)', () => {
  const { defer } = useCleanups();

  /** A fan-out behind a plain HTTP server, with a short heartbeat and a preferred upstream the test chooses. */
  async function fanoutServer(preferred: () => string, heartbeatMs = 60_000): Promise<{ url: string; fanout: WsRpcFanout }> {
    const links = new UpstreamLinks((origin) => ({
      origin,
      headers: () => ({}),
      pingIntervalMs: 60_000,
      reconnectMinMs: 20,
      reconnectMaxMs: 100,
      maxSubscriptions: 100,
      telemetry: noopTelemetry,
    }));
    const fanout = createWsRpcFanout({
      links,
      preferredOrigin: preferred,
      maxSubscriptionsPerClient: 10,
      maxMessagesPerSecondPerClient: 100,
      maxBufferedBytesPerClient: 1024 * 1024,
      telemetry: noopTelemetry,
      clock: () => Date.now(),
      heartbeatMs,
    });
    const server = createServer();
    server.on('upgrade', (req, socket, head) => fanout.upgrade(req, socket as Socket, head));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    defer(async () => {
      await fanout.close();
      await links.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, fanout };
  }

  const upstreamWithChannel = async (): Promise<FakeUpstream> => {
    const upstream = await startFakeUpstream({ rpcChannel: true });
    defer(() => upstream.close());
    return upstream;
  };

  it('drops a client that does not answer pings, and keeps one that does', async () => {
    const upstream = await upstreamWithChannel();
    const { url, fanout } = await fanoutServer(() => upstream.url, 50);
    const silent = await connect(url, { autoPong: false });
    const answering = await connect(url);
    defer(async () => (silent.ws.terminate(), answering.ws.terminate()));
    let pings = 0;
    answering.ws.on('ping', () => (pings += 1));
    expect(await silent.closed).toBe(1006);
    // Several heartbeats later the answering client is still there.
    await expect.poll(() => pings).toBeGreaterThanOrEqual(4);
    expect(answering.isClosed()).toBe(false);
    expect(fanout.clientCount).toBe(1);
  });

  it('moves the topics to the newly preferred upstream while the link is down, and delivers from there', async () => {
    const [first, second] = [await upstreamWithChannel(), await upstreamWithChannel()];
    let preferred = first.url;
    const { url, fanout } = await fanoutServer(() => preferred);
    const client = await connect(url);
    defer(async () => client.ws.terminate());
    await client.ask(subscribe(1, { event: 'block' }));
    expect(first.rpc.subscribers('block')).toBe(1);

    preferred = second.url;
    first.rpc.dropAll();
    await expect.poll(() => second.rpc.subscribers('block'), { timeout: 10_000 }).toBe(1);
    second.advanceTip();
    await expect.poll(() => client.frames.length).toBe(2);
    expect(JSON.parse(client.frames[1] as string).params.height).toBe(second.tip().height);
    // The first upstream's link came back without the topic.
    await expect.poll(() => first.rpc.connectionsOpened, { timeout: 10_000 }).toBe(2);
    expect(first.rpc.subscribers('block')).toBe(0);
    expect(fanout.topicCount).toBe(1);
    expect(client.isClosed()).toBe(false);
  });

  it('moves the topics when the upstream stays down and another becomes the preferred one later', async () => {
    const [first, second] = [await startFakeUpstream({ rpcChannel: true }), await upstreamWithChannel()];
    let preferred = first.url;
    const { url } = await fanoutServer(() => preferred, 50);
    const client = await connect(url);
    defer(async () => client.ws.terminate());
    await client.ask(subscribe(1, { event: 'address_tx_update', address: ADDRESS_A }));
    await first.close();
    // Health gives up on the first upstream only later: the heartbeat notices.
    preferred = second.url;
    await expect.poll(() => second.rpc.subscribers('principalTransactions', ADDRESS_A), { timeout: 10_000 }).toBe(1);
    second.rpc.publish('address_tx_update', { address: ADDRESS_A, tx_id: TX_ID });
    await expect.poll(() => client.frames.length).toBe(2);
    expect(client.isClosed()).toBe(false);
  });
});
