/**
 * The shared JSON-RPC link to one upstream, against the fake upstream's JSON-RPC channel (a
 * real `ws` server written from the upstream's source): subscribe replies and notifications
 * byte for byte, reference-counted topics, reconnect and resubscribe, a silent upstream, the
 * operator's headers, its bounds, and frames a hostile upstream may send.
 */
import { describe, expect, it } from 'vitest';
import { notification as rpcNotification } from 'jsonrpc-lite';
import { noopTelemetry, type Telemetry } from '../../src/telemetry/telemetry.js';
import { rpcUrlOf, UpstreamRpcLink, type RpcNotification, type UpstreamRpcLinkOptions } from '../../src/live/upstream-rpc-link.js';
import { UpstreamLinks } from '../../src/live/upstream-links.js';
import { startFakeUpstream, type FailureMode, type FakeUpstream } from '../../testkit/index.js';
import { freePort } from '../../testkit/free-port.js';
import { useCleanups } from '../support/cleanups.js';

const TX = `0x${'ab'.repeat(32)}`;

interface Counts {
  opened: number;
  closed: number;
  reconnects: number;
}

function countingTelemetry(): { telemetry: Telemetry; counts: Counts } {
  const counts: Counts = { opened: 0, closed: 0, reconnects: 0 };
  const telemetry = Object.assign(Object.create(noopTelemetry) as Telemetry, {
    upstreamWsConnectionChanged: (_channel: string, open: boolean) => (open ? counts.opened++ : counts.closed++),
    upstreamWsReconnected: () => counts.reconnects++,
  });
  return { telemetry, counts };
}

describe('UpstreamRpcLink', () => {
  const { defer } = useCleanups();

  const fakeWithChannel = async (): Promise<FakeUpstream> => {
    const upstream = await startFakeUpstream({ rpcChannel: true });
    defer(() => upstream.close());
    return upstream;
  };

  const linkTo = (origin: string, overrides: Partial<UpstreamRpcLinkOptions> = {}) => {
    const { telemetry, counts } = countingTelemetry();
    const link = new UpstreamRpcLink({
      origin,
      headers: () => ({}),
      pingIntervalMs: 60_000,
      reconnectMinMs: 20,
      reconnectMaxMs: 100,
      maxSubscriptions: 100,
      telemetry,
      ...overrides,
    });
    defer(() => link.close());
    return { link, counts };
  };

  const notifications = (link: UpstreamRpcLink): RpcNotification[] => {
    const seen: RpcNotification[] = [];
    link.onNotification((n) => seen.push(n));
    return seen;
  };

  const opened = (link: UpstreamRpcLink) => expect.poll(() => link.state, { timeout: 10_000 }).toBe('open');

  it('says why it is not open while the upstream refuses the upgrade, and forgets it once open', async () => {
    const upstream = await fakeWithChannel();
    const cases: Array<[FailureMode, string]> = [
      [{ status: 404 }, 'upgrade refused 404'],
      [{ status: 401 }, 'upgrade refused 401'],
      [{ status: 403 }, 'upgrade refused 403'],
      [{ status: 502 }, 'upgrade refused 502'],
      ['reset', 'connection failed ECONNRESET'],
    ];
    for (const [how, reason] of cases) {
      upstream.setFailing(how, /^\/extended\/v1\/ws/);
      const { link } = linkTo(upstream.url);
      link.start();
      await expect.poll(() => link.failure?.reason, { timeout: 10_000 }).toBe(reason);
      expect(link.state).toBe('connecting');
      expect(link.failure?.kind).toBe(typeof how === 'string' ? 'failed' : 'refused');
      await link.close();
    }
    const { link } = linkTo(upstream.url);
    link.start();
    await expect.poll(() => link.failure).toBeDefined();
    upstream.setFailing(null);
    await opened(link);
    expect(link.failure).toBeUndefined();
    expect(upstream.rpc.connectionsOpened).toBe(1);
  });

  it('reports a failing upstream to telemetry at every attempt, and its return once', async () => {
    const upstream = await fakeWithChannel();
    upstream.setFailing({ status: 404 }, /^\/extended\/v1\/ws/);
    const failures: Array<{ reason: string; retryInMs: number }> = [];
    const returns: string[] = [];
    const telemetry = Object.assign(Object.create(noopTelemetry) as Telemetry, {
      upstreamWsUnavailable: (_channel: string, _origin: string, reason: string, retryInMs: number) => failures.push({ reason, retryInMs }),
      upstreamWsAvailable: (_channel: string, origin: string) => returns.push(origin),
    });
    const { link } = linkTo(upstream.url, { telemetry });
    link.start();
    await expect.poll(() => failures.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    // Each wait within [ceiling / 2, ceiling) of 20 ms doubling to 100 ms.
    const [first, second, third] = failures.map((f) => f.retryInMs);
    expect(first).toBeGreaterThanOrEqual(10);
    expect(first).toBeLessThan(20);
    expect(second).toBeGreaterThanOrEqual(20);
    expect(third).toBeGreaterThanOrEqual(40);
    expect(new Set(failures.map((f) => f.reason))).toEqual(new Set(['upgrade refused 404']));
    upstream.setFailing(null);
    await opened(link);
    expect(returns).toEqual([upstream.url]);
  });

  it('subscribes upstream and hands on notifications with the upstream’s exact bytes', async () => {
    const upstream = await fakeWithChannel();
    const { link } = linkTo(upstream.url);
    const seen = notifications(link);
    link.start();
    expect(await link.subscribe('block', { event: 'block' })).toEqual({ ok: true, result: {} });
    await opened(link);
    upstream.advanceTip();
    await expect.poll(() => seen.length).toBe(1);
    const [block] = seen;
    expect(block?.method).toBe('block');
    expect((block?.params as { height: number }).height).toBe(upstream.tip().height);
    expect(block?.text).toBe(rpcNotification('block', block?.params as object).serialize());
  });

  it('holds a topic once for many holders and unsubscribes upstream only when the last lets go', async () => {
    const upstream = await fakeWithChannel();
    const { link } = linkTo(upstream.url);
    link.start();
    await opened(link);
    const first = await link.subscribe(`tx_update:${TX}`, { event: 'tx_update', tx_id: TX });
    const second = await link.subscribe(`tx_update:${TX}`, { event: 'tx_update', tx_id: TX });
    expect(first).toEqual({ ok: true, result: { tx_id: TX } });
    expect(second).toEqual(first);
    expect(upstream.rpc.requests.filter((r) => r.method === 'subscribe')).toHaveLength(1);
    link.unsubscribe(`tx_update:${TX}`);
    expect(upstream.rpc.subscribers('transaction', TX)).toBe(1);
    link.unsubscribe(`tx_update:${TX}`);
    await expect.poll(() => upstream.rpc.subscribers('transaction', TX)).toBe(0);
    expect(upstream.rpc.requests.map((r) => r.method)).toEqual(['subscribe', 'unsubscribe']);
    expect(link.topics).toBe(0);
  });

  it('gives the upstream’s refusal to the holder', async () => {
    const upstream = await fakeWithChannel();
    const { link } = linkTo(upstream.url);
    link.start();
    const reply = await link.subscribe('tx_update:bad', { event: 'tx_update', tx_id: 'nope' });
    expect(reply).toEqual({ ok: false, error: { code: -32602, message: 'Invalid params', data: 'invalid tx_id' } });
  });

  it('reconnects after the upstream drops it and subscribes every held topic again before saying open', async () => {
    const upstream = await fakeWithChannel();
    const { link, counts } = linkTo(upstream.url);
    const seen = notifications(link);
    const states: string[] = [];
    link.onState((state) => states.push(state));
    link.start();
    await link.subscribe('block', { event: 'block' });
    await link.subscribe('mempool', { event: 'mempool' });
    await opened(link);
    upstream.rpc.dropAll();
    await expect.poll(() => upstream.rpc.connectionsOpened, { timeout: 5_000 }).toBe(2);
    await opened(link);
    expect(upstream.rpc.subscribers('block')).toBe(1);
    expect(upstream.rpc.subscribers('mempool')).toBe(1);
    expect(states).toEqual(['open', 'connecting', 'open']);
    expect(counts).toMatchObject({ opened: 2, closed: 1 });
    expect(counts.reconnects).toBeGreaterThanOrEqual(1);
    upstream.advanceTip();
    await expect.poll(() => seen.filter((n) => n.method === 'block').length).toBe(1);
  });

  it('answers a subscribe made while the upstream is down once it is up', async () => {
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const { link } = linkTo(origin);
    link.start();
    const reply = link.subscribe('block', { event: 'block' });
    // Refused connections first: the link keeps trying.
    await expect.poll(() => link.state).toBe('connecting');
    const upstream = await startFakeUpstream({ rpcChannel: true, port });
    defer(() => upstream.close());
    expect(await reply).toEqual({ ok: true, result: {} });
    await opened(link);
    expect(upstream.rpc.subscribers('block')).toBe(1);
  });

  it('closes and reopens a connection that stops answering pings', async () => {
    const upstream = await fakeWithChannel();
    // The reconnect waits 200-400 ms (the connection stayed up a ping interval: the backoff starts
    // again), time for the test to see the drop and end the silence first: a subscribe sent while
    // silent would go unanswered for the whole request timeout.
    const { link } = linkTo(upstream.url, { pingIntervalMs: 250, reconnectMinMs: 400, reconnectMaxMs: 800 });
    link.start();
    await link.subscribe('block', { event: 'block' });
    await opened(link);
    upstream.rpc.setSilent(true);
    await expect.poll(() => link.state, { timeout: 5_000 }).toBe('connecting');
    upstream.rpc.setSilent(false);
    await expect.poll(() => upstream.rpc.connectionsOpened, { timeout: 5_000 }).toBeGreaterThanOrEqual(2);
    await opened(link);
    expect(upstream.rpc.subscribers('block')).toBe(1);
  });

  it('sends the operator’s headers with its upgrade', async () => {
    const upstream = await fakeWithChannel();
    const { link } = linkTo(upstream.url, { headers: () => ({ 'x-api-key': 'operator-key' }) });
    link.start();
    await opened(link);
    const upgrade = upstream.requests.find((r) => r.method === 'UPGRADE');
    expect(upgrade?.path).toBe('/extended/v1/ws');
    expect(upgrade?.headers['x-api-key']).toBe('operator-key');
  });

  it('refuses a new distinct topic beyond maxSubscriptions, and still shares held ones', async () => {
    const upstream = await fakeWithChannel();
    const { link } = linkTo(upstream.url, { maxSubscriptions: 2 });
    link.start();
    expect((await link.subscribe('block', { event: 'block' })).ok).toBe(true);
    expect((await link.subscribe('mempool', { event: 'mempool' })).ok).toBe(true);
    expect(await link.subscribe('microblock', { event: 'microblock' })).toEqual({ ok: false, error: 'over-limit' });
    expect((await link.subscribe('block', { event: 'block' })).ok).toBe(true);
    expect(upstream.rpc.requests).toHaveLength(2);
  });

  it('survives malformed frames and drops a connection whose frame is over the limit', async () => {
    const upstream = await fakeWithChannel();
    const { link } = linkTo(upstream.url, { maxFrameBytes: 64 * 1024 });
    const seen = notifications(link);
    link.start();
    await link.subscribe('block', { event: 'block' });
    await opened(link);
    for (const frame of ['not json', '[1,2,3]', 'null', '{"jsonrpc":"2.0","id":999,"result":{}}', '{"method":7}', Buffer.from([0, 1, 2])]) {
      upstream.rpc.sendToAll(frame);
    }
    upstream.rpc.sendToAll('{"jsonrpc":"2.0","method":"block","params":{"height":1}}');
    await expect.poll(() => seen.length).toBe(1);
    expect(link.state).toBe('open');
    upstream.rpc.sendToAll(JSON.stringify({ jsonrpc: '2.0', method: 'block', params: { pad: 'x'.repeat(128 * 1024) } }));
    await expect.poll(() => upstream.rpc.connectionsOpened, { timeout: 5_000 }).toBe(2);
    await opened(link);
    expect(seen).toHaveLength(1);
  });

  it('answers closed once closed, and closes its connection', async () => {
    const upstream = await fakeWithChannel();
    const { link, counts } = linkTo(upstream.url);
    link.start();
    await opened(link);
    await link.close();
    expect(link.state).toBe('closed');
    expect(await link.subscribe('block', { event: 'block' })).toEqual({ ok: false, error: 'closed' });
    await expect.poll(() => upstream.rpc.connections).toBe(0);
    expect(counts).toMatchObject({ opened: 1, closed: 1 });
  });
});

describe('UpstreamLinks', () => {
  const { defer } = useCleanups();

  it('makes one started link per origin and closes them all', async () => {
    const a = await startFakeUpstream({ rpcChannel: true });
    const b = await startFakeUpstream({ rpcChannel: true });
    defer(() => Promise.all([a.close(), b.close()]));
    const links = new UpstreamLinks((origin) => ({
      origin,
      headers: () => ({}),
      pingIntervalMs: 60_000,
      reconnectMinMs: 20,
      reconnectMaxMs: 100,
      maxSubscriptions: 10,
      telemetry: noopTelemetry,
    }));
    defer(() => links.close());
    expect(links.linkFor(a.url)).toBe(links.linkFor(a.url));
    links.linkFor(b.url);
    await expect.poll(() => a.rpc.connections + b.rpc.connections).toBe(2);
    expect(a.rpc.connectionsOpened).toBe(1);
    await links.close();
    await expect.poll(() => a.rpc.connections + b.rpc.connections).toBe(0);
    expect(await links.linkFor('http://127.0.0.1:1').subscribe('block', { event: 'block' })).toEqual({ ok: false, error: 'closed' });
  });
});

describe('rpcUrlOf', () => {
  it('maps an http(s) origin to its ws(s) JSON-RPC URL', () => {
    expect(rpcUrlOf('http://127.0.0.1:3999')).toBe('ws://127.0.0.1:3999/extended/v1/ws');
    expect(rpcUrlOf('https://api.example.com')).toBe('wss://api.example.com/extended/v1/ws');
  });
});
