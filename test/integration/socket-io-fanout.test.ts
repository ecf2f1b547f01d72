/**
 * The Socket.IO fan-out through the real proxy (issue 16), against the fake upstream's Socket.IO
 * channel (testkit/live-upstream/socket-io-channel.ts, the upstream's own rules): the official
 * client (@stacks/blockchain-api-client) and plain socket.io-client, over WebSocket and
 * polling, get what the upstream sends, byte for byte, while the upstream sees ONE connection.
 */
import { StacksApiSocketClient } from '@stacks/blockchain-api-client';
import { io, type Socket } from 'socket.io-client';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { attachSocketIoChannel, type FakeSocketIoChannel } from '../../testkit/live-upstream/socket-io-channel.js';
import { RECORDED, waitFor, type FakeUpstream } from '../../testkit/index.js';
import type { ProxyServer } from '../../src/composition-root.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';
import { MAX_TOPIC_LENGTH } from '../../src/live/client-bounds.js';
import { topicTooLongMessage } from '../../src/live/socket-io-fanout.js';
import { useCleanups } from '../support/cleanups.js';

const { defer, fakeUpstream } = useCleanups();

const WAIT = { timeoutMs: 15_000 };
const P1 = RECORDED.principal;
// Another valid principal: the recorded contract's deployer with a contract name.
const P2 = RECORDED.contractId;

interface Setup {
  fake: FakeUpstream;
  channel: FakeSocketIoChannel;
  proxy: ProxyServer;
}

async function setup(fanout: Record<string, unknown> = {}, overrides: Record<string, unknown> = {}, now?: () => number): Promise<Setup> {
  const fake = await fakeUpstream();
  const channel = attachSocketIoChannel(fake);
  defer(() => channel.close());
  const proxy = await startTestProxy({ upstreamUrls: [fake.url], overrides: { live: { fanout }, ...overrides }, now });
  defer(() => proxy.close());
  return { fake, channel, proxy };
}

/** A plain socket.io-client, connected (or refused: rejects with the connect error). */
async function connect(url: string, transports: string[], query: Record<string, string> = {}): Promise<Socket> {
  const socket = io(url, { transports, forceNew: true, query, reconnection: false });
  defer(async () => socket.close());
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', reject);
  });
  return socket;
}

/** Every event a socket receives, with its arguments. */
function recorder(socket: Socket): Array<{ event: string; args: unknown[] }> {
  const seen: Array<{ event: string; args: unknown[] }> = [];
  socket.onAny((event: string, ...args: unknown[]) => seen.push({ event, args }));
  return seen;
}

const upstreamSocketIoConnections = (fake: FakeUpstream): number => fake.count((r) => r.path.startsWith('/socket.io/'));

/** A raw engine.io WebSocket (no Socket.IO client): every text frame it receives, as sent. */
async function rawFrames(url: string, query: string): Promise<{ ws: WebSocket; frames: string[] }> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/socket.io/?EIO=4&transport=websocket${query}`);
  defer(async () => ws.terminate());
  const frames: string[] = [];
  ws.on('message', (data) => frames.push(data.toString()));
  ws.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  // Answer pings, so that the connection stays up however long the test takes.
  ws.on('message', (data) => {
    if (data.toString() === '2') ws.send('3');
  });
  ws.send('40');
  return { ws, frames };
}

const withoutSid = (frame: string): string => frame.replace(/"sid":"[^"]+"/g, '"sid":"-"');

describe('Socket.IO fan-out (/socket.io/)', () => {
  it('200 clients subscribed to block (official client over WebSocket, plain client over polling) cost the upstream one Socket.IO connection, and every client gets every block', async () => {
    const { fake, channel, proxy } = await setup();
    const received: number[] = [];
    const ready: Array<Promise<void>> = [];
    for (let i = 0; i < 100; i += 1) {
      const client = new StacksApiSocketClient({ url: proxy.url });
      defer(async () => client.socket.close());
      const index = received.push(0) - 1;
      client.subscribeBlocks(() => (received[index] = (received[index] ?? 0) + 1));
      ready.push(new Promise((resolve) => client.socket.once('connect', () => resolve())));
    }
    for (let i = 0; i < 100; i += 1) {
      const index = received.push(0) - 1;
      ready.push(
        connect(proxy.url, ['polling'], { subscriptions: 'block' }).then((socket) => {
          socket.on('block', () => (received[index] = (received[index] ?? 0) + 1));
        }),
      );
    }
    await Promise.all(ready);
    await waitFor(async () => channel.roomSize('block') === 1, { ...WAIT, what: 'the proxy subscribed to block upstream' });
    // Subscribes in flight reach the proxy before the first block: wait for all 200 to be held.
    await waitFor(async () => (await metricValue(proxy, 'stacks_proxy_ws_subscriptions', { channel: 'socket_io', event: 'block' })) === 200, {
      ...WAIT,
      what: '200 block subscriptions',
    });
    for (let height = 1; height <= 3; height += 1) channel.publish('block', { height, hash: `0x${String(height).padStart(64, '0')}` });
    await waitFor(async () => received.every((count) => count === 3), { ...WAIT, what: 'every client got 3 blocks' });
    expect(received).toHaveLength(200);
    expect(channel.connectionsEver).toBe(1);
    expect(upstreamSocketIoConnections(fake)).toBe(1);
    expect(await metricValue(proxy, 'stacks_proxy_ws_clients', { channel: 'socket_io' })).toBe(200);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_ws_connections', { channel: 'socket_io' })).toBe(1);
    expect(await metricValue(proxy, 'stacks_proxy_ws_messages_total', { channel: 'socket_io', direction: 'out' })).toBe(600);
  });

  it('sends each event as the very frame the upstream sends, and the same handshake refusal', async () => {
    const { fake, channel, proxy } = await setup();
    const direct = await rawFrames(fake.url, '&subscriptions=block');
    const proxied = await rawFrames(proxy.url, '&subscriptions=block');
    await waitFor(async () => channel.roomSize('block') === 2, { ...WAIT, what: 'both subscribed upstream' });
    // JSON the upstream's serializer writes: escapes, unicode, big and negative numbers, nesting, empty values.
    const block = {
      height: 9_007_199_254_740_991,
      hash: '0xab',
      note: 'caf\u00e9 \u2603 "q" \\ \n',
      txs: [],
      nested: { a: [1, -2.5e-7, null, true] },
      empty: '',
    };
    channel.publish('block', block);
    const eventFrame = (frames: string[]) => frames.find((frame) => frame.startsWith('42'));
    await waitFor(async () => eventFrame(direct.frames) !== undefined && eventFrame(proxied.frames) !== undefined, { ...WAIT, what: 'the block frame' });
    expect(eventFrame(proxied.frames)).toBe(eventFrame(direct.frames));
    expect(eventFrame(direct.frames)).toBe(`42${JSON.stringify(['block', block])}`);
    // The engine's open packet and the Socket.IO connect: the same options (heartbeat, payload limit), ids aside.
    expect(proxied.frames.slice(0, 2).map(withoutSid)).toEqual(direct.frames.slice(0, 2).map(withoutSid));

    const refusedDirect = await rawFrames(fake.url, '&subscriptions=block,nope,transaction:0xzz');
    const refusedProxied = await rawFrames(proxy.url, '&subscriptions=block,nope,transaction:0xzz');
    const connectError = (frames: string[]) => frames.find((frame) => frame.startsWith('44'));
    await waitFor(async () => connectError(refusedDirect.frames) !== undefined && connectError(refusedProxied.frames) !== undefined, {
      ...WAIT,
      what: 'the refusals',
    });
    expect(connectError(refusedProxied.frames)).toBe(connectError(refusedDirect.frames));
    expect(connectError(refusedDirect.frames)).toBe('44{"message":"Invalid topic: nope, transaction:0xzz"}');
  });

  it('the official client: an invalid handshake topic gets the upstream\u2019s error; subscribe and unsubscribe as the upstream answers them', async () => {
    const { fake, channel, proxy } = await setup();
    const refusal = async (url: string) =>
      new Promise<string>((resolve) => {
        const client = new StacksApiSocketClient({ url, subscriptions: ['block', 'address-transaction:nope' as never] });
        defer(async () => client.socket.close());
        client.socket.once('connect_error', (error) => resolve(error.message));
      });
    const [viaProxy, direct] = await Promise.all([refusal(proxy.url), refusal(fake.url)]);
    expect(viaProxy).toBe('Invalid topic: address-transaction:nope');
    expect(viaProxy).toBe(direct);

    // subscribe: a valid topic is acknowledged with null; an invalid one not at all (the next ack arrives, it never does).
    const answers = async (socket: Socket) => {
      const acks: string[] = [];
      socket.emit('subscribe', 'block:nope', (error: unknown) => acks.push(`invalid:${String(error)}`));
      socket.emit('subscribe', 42, (error: unknown) => acks.push(`number:${String(error)}`));
      await new Promise<void>((resolve) =>
        socket.emit('subscribe', ['mempool', `transaction:0x${'ab'.repeat(32)}`], (error: unknown) => {
          acks.push(`list:${String(error)}`);
          resolve();
        }),
      );
      await new Promise<void>((resolve) =>
        socket.emit('subscribe', '', (error: unknown) => {
          acks.push(`empty:${String(error)}`);
          resolve();
        }),
      );
      return acks;
    };
    const proxied = await connect(proxy.url, ['websocket']);
    const upstreamDirect = await connect(fake.url, ['websocket']);
    expect(await answers(proxied)).toEqual(['list:null', 'empty:null']);
    expect(await answers(upstreamDirect)).toEqual(['list:null', 'empty:null']);
    await waitFor(async () => channel.roomSize('mempool') === 2, { ...WAIT, what: 'mempool held upstream' });
    const seen = recorder(proxied);
    channel.publish('mempool', { tx_id: '0x01' });
    await waitFor(async () => seen.length === 1, { ...WAIT, what: 'the mempool event' });
    // unsubscribe: never acknowledged; the room is left, here and (last holder) upstream.
    proxied.emit('unsubscribe', 'mempool');
    await waitFor(async () => channel.roomSize('mempool') === 1, { ...WAIT, what: 'the proxy left mempool upstream' });
    expect(upstreamSocketIoConnections(fake)).toBe(3);
  });

  it('delivers a room\u2019s events only to its subscribers (handshake topics and subscribe alike)', async () => {
    const { channel, proxy } = await setup();
    const a = await connect(proxy.url, ['websocket'], { subscriptions: `address-transaction:${P1},block` });
    const b = await connect(proxy.url, ['polling']);
    await new Promise<void>((resolve) => b.emit('subscribe', [`address-transaction:${P2}`, 'block'], () => resolve()));
    const c = await connect(proxy.url, ['websocket'], { subscriptions: 'block' });
    const [seenA, seenB, seenC] = [recorder(a), recorder(b), recorder(c)];
    await waitFor(async () => channel.roomSize(`address-transaction:${P1}`) === 1 && channel.roomSize('block') === 1, { ...WAIT, what: 'rooms held upstream' });
    channel.publish(`address-transaction:${P1}`, P1, { tx: { tx_id: '0x11' } });
    channel.publish(`address-transaction:${P2}`, P2, { tx: { tx_id: '0x22' } });
    channel.publish('block', { height: 1 });
    // One upstream connection and one connection per client keep the order: the block comes last.
    await waitFor(async () => [seenA, seenB, seenC].every((seen) => seen.some((e) => e.event === 'block')), { ...WAIT, what: 'the block everywhere' });
    expect(seenA.map((e) => e.event)).toEqual([`address-transaction:${P1}`, 'block']);
    expect(seenA[0]?.args).toEqual([P1, { tx: { tx_id: '0x11' } }]);
    expect(seenB.map((e) => e.event)).toEqual([`address-transaction:${P2}`, 'block']);
    expect(seenC.map((e) => e.event)).toEqual(['block']);

    // After an unsubscribe, that room's events stop; the others go on.
    a.emit('unsubscribe', `address-transaction:${P1}`);
    await waitFor(async () => channel.roomSize(`address-transaction:${P1}`) === 0, { ...WAIT, what: 'P1 released upstream' });
    channel.publish(`address-transaction:${P1}`, P1, { tx: { tx_id: '0x33' } });
    channel.publish('block', { height: 2 });
    await waitFor(async () => seenA.filter((e) => e.event === 'block').length === 2, { ...WAIT, what: 'the second block' });
    expect(seenA.map((e) => e.event)).toEqual([`address-transaction:${P1}`, 'block', 'block']);
  });

  it('an upstream drop closes no client: the proxy reconnects, resubscribes, and clients get the events sent after that', async () => {
    const { fake, channel, proxy } = await setup();
    const official = new StacksApiSocketClient({ url: proxy.url, subscriptions: ['block'] });
    defer(async () => official.socket.close());
    const polling = await connect(proxy.url, ['polling'], { subscriptions: `block,address-stx-balance:${P1}` });
    const officialBlocks: unknown[] = [];
    official.socket.on('block', (block) => officialBlocks.push(block));
    await new Promise<void>((resolve) => (official.socket.connected ? resolve() : official.socket.once('connect', () => resolve())));
    const seen = recorder(polling);
    let disconnects = 0;
    official.socket.on('disconnect', () => (disconnects += 1));
    polling.on('disconnect', () => (disconnects += 1));
    await waitFor(async () => channel.roomSize('block') === 1 && channel.roomSize(`address-stx-balance:${P1}`) === 1, { ...WAIT, what: 'subscribed upstream' });
    channel.publish('block', { height: 1 });
    await waitFor(async () => officialBlocks.length === 1 && seen.length === 1, { ...WAIT, what: 'the first block' });

    channel.dropAll();
    await waitFor(async () => channel.connectionsEver === 2 && channel.roomSize('block') === 1 && channel.roomSize(`address-stx-balance:${P1}`) === 1, {
      ...WAIT,
      what: 'resubscribed on a new connection',
    });
    channel.publish('block', { height: 2 });
    channel.publish(`address-stx-balance:${P1}`, P1, { balance: '10' });
    await waitFor(async () => officialBlocks.length === 2 && seen.length === 3, { ...WAIT, what: 'events after the drop' });
    expect(officialBlocks).toEqual([{ height: 1 }, { height: 2 }]);
    expect(seen.map((e) => e.event)).toEqual(['block', 'block', `address-stx-balance:${P1}`]);
    expect(disconnects).toBe(0);
    expect(official.socket.connected && polling.connected).toBe(true);
    expect(proxy.socketIoFanout?.upstream.reconnects).toBe(1);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_ws_reconnects_total', { channel: 'socket_io' })).toBe(1);
    expect(channel.connections).toBe(1);
    expect(upstreamSocketIoConnections(fake)).toBe(2);
  });

  it('an event it cannot hand on unchanged (binary) is skipped, and the events after it arrive intact', async () => {
    const { channel, proxy } = await setup();
    const client = await connect(proxy.url, ['websocket'], { subscriptions: 'block,mempool' });
    const seen = recorder(client);
    await waitFor(async () => channel.roomSize('block') === 1 && channel.roomSize('mempool') === 1, { ...WAIT, what: 'subscribed upstream' });
    channel.publish('block', { height: 1, raw: Buffer.from([1, 2, 3]) });
    channel.publish('mempool', { tx_id: '0x01' });
    channel.publish('block', { height: 2 });
    await waitFor(async () => seen.length === 2, { ...WAIT, what: 'the two text events' });
    expect(seen).toEqual([
      { event: 'mempool', args: [{ tx_id: '0x01' }] },
      { event: 'block', args: [{ height: 2 }] },
    ]);
  });

  it('the upstream connection carries the operator\u2019s headers', async () => {
    const { channel, proxy } = await setup({}, { upstream: { apiKey: 'operator-key' } });
    await connect(proxy.url, ['websocket'], { subscriptions: 'block' });
    await waitFor(async () => channel.roomSize('block') === 1, { ...WAIT, what: 'subscribed upstream' });
    expect(channel.handshakeHeaders[0]?.['x-api-key']).toBe('operator-key');
  });

  it('drops a client that does not read (bytes waiting past maxBufferedBytesPerClient) and keeps serving the others', async () => {
    const { channel, proxy } = await setup({ maxBufferedBytesPerClient: 1024 * 1024 });
    const slow = await rawFrames(proxy.url, '&subscriptions=block');
    const fast = await connect(proxy.url, ['websocket'], { subscriptions: 'block' });
    let fastBlocks = 0;
    fast.on('block', () => (fastBlocks += 1));
    await waitFor(async () => channel.roomSize('block') === 1 && slow.frames.some((f) => f.startsWith('40')), { ...WAIT, what: 'subscribed' });
    let slowClosed = false;
    slow.ws.on('close', () => (slowClosed = true));
    // The slow client stops reading: what the proxy writes piles up in its socket, then in the engine.
    (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    // Events far smaller than the limit, so that a client that reads never comes near it.
    const big = 'x'.repeat(64 * 1024);
    const EVENTS = 600; // 39 MB: more than loopback socket buffers hold
    for (let height = 1; height <= EVENTS; height += 1) channel.publish('block', { height, big });
    await waitFor(async () => (await metricValue(proxy, 'stacks_proxy_ws_client_drops_total', { channel: 'socket_io', reason: 'slow' })) === 1, {
      ...WAIT,
      what: 'the slow client dropped',
    });
    await waitFor(async () => fastBlocks === EVENTS, { ...WAIT, timeoutMs: 60_000, what: 'the reading client got every block' });
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await waitFor(async () => slowClosed, { ...WAIT, what: 'the slow client\u2019s connection closed' });
    expect(fast.connected).toBe(true);
    expect(await metricValue(proxy, 'stacks_proxy_ws_clients', { channel: 'socket_io' })).toBe(1);
  });

  it('bounds: clients (shared slots: 503), subscriptions per client (refused in the ack), messages per second (closed)', async () => {
    const { proxy } = await setup({ maxClients: 2, maxSubscriptionsPerClient: 2, maxMessagesPerSecondPerClient: 1 });
    const first = await connect(proxy.url, ['websocket'], { subscriptions: 'block' });
    const acks: unknown[] = [];
    await new Promise<void>((resolve) => first.emit('subscribe', 'mempool', (error: unknown) => resolve(void acks.push(error))));
    await new Promise<void>((resolve) => first.emit('subscribe', 'microblock', (error: unknown) => resolve(void acks.push(error))));
    expect(acks).toEqual([null, 'Too many subscriptions: at most 2 per client']);
    await expect(connect(proxy.url, ['polling'], { subscriptions: 'block,mempool,nft-event' })).rejects.toThrow('Too many subscriptions: at most 2 per client');

    await connect(proxy.url, ['polling']);
    const refused = await fetch(`${proxy.url}/socket.io/?EIO=4&transport=polling`);
    expect(refused.status).toBe(503);
    await expect(connect(proxy.url, ['websocket'])).rejects.toThrow();

    // 1 message a second with a 10 s burst: the 11th message in a row closes the client.
    let disconnected = false;
    first.on('disconnect', () => (disconnected = true));
    for (let i = 0; i < 12; i += 1) first.emit('unsubscribe', 'nft-event');
    await waitFor(async () => disconnected, { ...WAIT, what: 'the flooding client closed' });
    expect(await metricValue(proxy, 'stacks_proxy_ws_client_drops_total', { channel: 'socket_io', reason: 'rate' })).toBe(1);
  });

  it('refuses a topic longer than MAX_TOPIC_LENGTH (an error acknowledgement, a refused handshake) and never subscribes it upstream', async () => {
    const { channel, proxy } = await setup();
    const socket = await connect(proxy.url, ['websocket']);
    const prefix = `nft-asset-event:${P2}::token+`;
    const longest = `${prefix}${'a'.repeat(MAX_TOPIC_LENGTH - prefix.length)}`;
    const tooLong = `${longest}a`;
    const ack = (topic: unknown): Promise<unknown> => new Promise((resolve) => socket.emit('subscribe', topic, (error: unknown) => resolve(error)));
    expect(await ack(tooLong)).toBe(topicTooLongMessage(MAX_TOPIC_LENGTH));
    // A list with one long topic is refused as a whole, as a list over the subscription limit is.
    expect(await ack(['mempool', tooLong])).toBe(topicTooLongMessage(MAX_TOPIC_LENGTH));
    expect(await ack(longest)).toBeNull();
    await expect(connect(proxy.url, ['websocket'], { subscriptions: `block,${tooLong}` })).rejects.toThrow(topicTooLongMessage(MAX_TOPIC_LENGTH));
    await waitFor(async () => channel.roomSize(longest) === 1, { ...WAIT, what: 'the topic at the bound held upstream' });
    expect(channel.subscribes).toEqual([longest]);
    expect(proxy.socketIoFanout?.upstream.rooms).toBe(1);
    expect(await metricValue(proxy, 'stacks_proxy_ws_client_drops_total', { channel: 'socket_io', reason: 'topic_length' })).toBe(3);
    expect(socket.connected).toBe(true);
  });

  it('does not act on the message that crosses the rate limit', async () => {
    // A clock that does not move: the 10 s burst (10 messages at 1 a second) is all a client has.
    const { channel, proxy } = await setup({ maxMessagesPerSecondPerClient: 1 }, {}, () => Date.UTC(2026, 0, 1));
    const flooding = await connect(proxy.url, ['websocket'], { subscriptions: 'block' });
    await waitFor(async () => channel.roomSize('block') === 1, { ...WAIT, what: 'the upstream connection subscribed' });
    let disconnected = false;
    flooding.on('disconnect', () => (disconnected = true));
    const acks: unknown[] = [];
    // The handshake's CONNECT was the first message: 9 more are admitted, the 11th crosses the rate.
    for (let i = 0; i < 9; i += 1) flooding.emit('unsubscribe', 'nft-event');
    flooding.emit('subscribe', 'mempool', (error: unknown) => acks.push(error));
    await waitFor(async () => disconnected, { ...WAIT, what: 'the flooding client closed' });
    // Another client's subscribe goes up the same upstream connection after anything the flooder's would have sent.
    const other = await connect(proxy.url, ['websocket']);
    await new Promise<void>((resolve) => other.emit('subscribe', 'microblock', () => resolve()));
    await waitFor(async () => channel.subscribes.includes('microblock'), { ...WAIT, what: 'microblock subscribed upstream' });
    expect(channel.subscribes).not.toContain('mempool');
    expect(acks).toEqual([]);
    expect(await metricValue(proxy, 'stacks_proxy_ws_client_drops_total', { channel: 'socket_io', reason: 'rate' })).toBe(1);
  });

  it('polling requests and upgrades meet the client\u2019s rate-limit budget first', async () => {
    const { proxy } = await setup({}, { rateLimit: { enabled: true, anonymous: { limit: 3 } } });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await fetch(`${proxy.url}/socket.io/?EIO=4&transport=polling`)).status);
    const refused = await fetch(`${proxy.url}/socket.io/?EIO=4&transport=polling`);
    expect([...statuses, refused.status]).toEqual([200, 200, 200, 429]);
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    const upgrade = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${proxy.url.replace('http', 'ws')}/socket.io/?EIO=4&transport=websocket`);
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => resolve(101));
      ws.on('error', () => {});
    });
    expect(upgrade).toBe(429);
  });

  it('passes the client bundle on to the upstream, and with fanout off leaves /socket.io/ to the tunnel', async () => {
    const { fake, proxy } = await setup();
    await fetch(`${proxy.url}/socket.io/socket.io.js`);
    expect(fake.count('/socket.io/socket.io.js')).toBe(1);

    const off = await startTestProxy({ upstreamUrls: [fake.url], overrides: { live: { fanout: { enabled: false } } } });
    defer(() => off.close());
    expect(off.socketIoFanout).toBeUndefined();
  });

  it('shutdown closes every client and the upstream connection', async () => {
    const { channel, proxy } = await setup();
    const ws = await connect(proxy.url, ['websocket'], { subscriptions: 'block' });
    const polling = await connect(proxy.url, ['polling'], { subscriptions: 'block' });
    await waitFor(async () => channel.connections === 1 && channel.roomSize('block') === 1, { ...WAIT, what: 'subscribed upstream' });
    const closed = Promise.all([ws, polling].map((socket) => new Promise<string>((resolve) => socket.once('disconnect', (reason) => resolve(reason)))));
    await proxy.close();
    expect((await closed).length).toBe(2);
    await waitFor(async () => channel.connections === 0, { ...WAIT, what: 'the upstream connection closed' });
  });
});
