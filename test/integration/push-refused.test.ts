/**
 * An upstream that serves no WebSocket (issue 27): many Hiro API deployments, or a gateway in
 * front of them, answer the `/extended/v1/ws` upgrade 404 (or 401/403). Through the real proxy
 * against the fake upstream refusing upgrades: attempts are few and spaced out (counted at the
 * fake), the tip poll keeps its interval and the proxy keeps serving, the metric and
 * /status.json say poll and why, one warning says so (not one per attempt), and once the
 * upstream accepts upgrades the proxy connects and follows its pushes.
 */
import { pino } from 'pino';
import { io } from 'socket.io-client';
import { describe, expect, it } from 'vitest';
import type { ProxyServer } from '../../src/composition-root.js';
import type { StatusReport } from '../../src/http/admin/status-report.js';
import { RECORDED, startFakeUpstream, type FakeUpstream } from '../../testkit/index.js';
import { useCleanups } from '../support/cleanups.js';
import { fetchRaw } from '../support/http.js';
import { metricValue, startTestProxy } from '../support/proxy-harness.js';

const WAIT = { timeout: 10_000, interval: 20 };
const RPC_UPGRADE = /^\/extended\/v1\/ws/;
/** Long enough for the default schedule (live.push.reconnectMinMs 1 s, doubling) to try a few times. */
const WINDOW_MS = 5_000;
const POLL_INTERVAL_MS = 200;

type Line = Record<string, unknown>;

const latestHeight = async (proxy: ProxyServer): Promise<number> =>
  (JSON.parse((await fetchRaw(`${proxy.url}/extended/v2/blocks/latest`)).body.toString()) as { height: number }).height;

const upstreamStatus = async (proxy: ProxyServer, origin: string) => {
  const report = JSON.parse((await fetchRaw(`${proxy.adminUrl}/status.json`)).body.toString()) as StatusReport;
  return report.upstreams.find((u) => u.origin === origin);
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('an upstream that refuses WebSocket upgrades', () => {
  const { defer } = useCleanups();

  const refusingUpstream = async (): Promise<FakeUpstream> => {
    const upstream = await startFakeUpstream({ rpcChannel: true });
    defer(() => upstream.close());
    upstream.setFailing({ status: 404 }, RPC_UPGRADE);
    return upstream;
  };

  const proxyWithPush = async (upstream: FakeUpstream, push: Record<string, unknown> = {}) => {
    const lines: Line[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Line) });
    const proxy = await startTestProxy({
      upstreamUrls: [upstream.url],
      logger,
      overrides: {
        accessLog: { enabled: false },
        chainTip: { pollIntervalMs: POLL_INTERVAL_MS },
        // Believed, the feed would stretch the poll to a minute: a refused one must never be.
        live: { push: { enabled: true, crossCheckIntervalMs: 60_000, ...push } },
      },
    });
    defer(() => proxy.close());
    return { proxy, lines };
  };

  const upgrades = (upstream: FakeUpstream) => upstream.count((r) => r.method === 'UPGRADE' && RPC_UPGRADE.test(r.url));
  const linesSaying = (lines: Line[], msg: string) => lines.filter((line) => line.msg === msg);

  it('tries again a few times, spaced out, while the tip poll keeps its interval and the proxy keeps serving', async () => {
    const upstream = await refusingUpstream();
    const { proxy, lines } = await proxyWithPush(upstream);
    const pollsBefore = upstream.count('/extended');
    await sleep(WINDOW_MS);

    // The default schedule, 1 s doubling with jitter over the upper half: at most 0, 0.5, 1.5 and
    // 3.5 s into the window (before, 250 ms doubling: five within 4 s).
    const attempts = upgrades(upstream);
    expect(attempts).toBeGreaterThanOrEqual(2);
    expect(attempts).toBeLessThanOrEqual(4);
    // The interval of an upstream whose feed is not believed (a minute if it were: one poll at most).
    expect(upstream.count('/extended') - pollsBefore).toBeGreaterThanOrEqual(WINDOW_MS / POLL_INTERVAL_MS / 4);
    upstream.advanceTip();
    await expect.poll(() => latestHeight(proxy), WAIT).toBe(RECORDED.tipHeight + 1);

    expect(await metricValue(proxy, 'stacks_proxy_upstream_push_mode', { upstream: upstream.url, mode: 'poll' })).toBe(1);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_push_mode', { upstream: upstream.url, mode: 'push' })).toBe(0);
    expect(await metricValue(proxy, 'stacks_proxy_push_feed_believed', { origin: upstream.url })).toBe(0);
    const status = await upstreamStatus(proxy, upstream.url);
    expect(status?.push).toMatchObject({ mode: 'poll', reason: 'upgrade refused 404' });
    expect(status?.push?.retryInSeconds).toBeGreaterThan(0);

    // One warning for the outage, whatever the number of attempts.
    const warnings = linesSaying(lines, 'upstream WebSocket unavailable: tried again with backoff; the chain tip is polled meanwhile');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ channel: 'rpc', origin: upstream.url, reason: 'upgrade refused 404' });
  });

  it('connects and follows the pushes once the upstream accepts upgrades again', async () => {
    const upstream = await refusingUpstream();
    // A test-sized schedule: 50 ms doubling to 400 ms.
    const { proxy, lines } = await proxyWithPush(upstream, { reconnectMinMs: 50, reconnectMaxMs: 400 });
    await expect.poll(() => upgrades(upstream), WAIT).toBeGreaterThanOrEqual(4);
    expect(upstream.rpc.connectionsOpened).toBe(0);
    expect((await upstreamStatus(proxy, upstream.url))?.push?.mode).toBe('poll');

    upstream.setFailing(null);
    await expect.poll(() => metricValue(proxy, 'stacks_proxy_upstream_push_mode', { upstream: upstream.url, mode: 'push' }), WAIT).toBe(1);
    expect(upstream.rpc.connectionsOpened).toBe(1);
    expect(await metricValue(proxy, 'stacks_proxy_upstream_push_mode', { upstream: upstream.url, mode: 'poll' })).toBe(0);
    expect((await upstreamStatus(proxy, upstream.url))?.push).toEqual({ mode: 'push', reason: null, retryInSeconds: null });
    expect(linesSaying(lines, 'upstream WebSocket available again')).toHaveLength(1);
    expect(linesSaying(lines, 'upstream WebSocket unavailable: tried again with backoff; the chain tip is polled meanwhile')).toHaveLength(1);

    // A pushed block is served at once: the poll alone would take up to the minute of the cross-check.
    upstream.advanceTip();
    await expect.poll(() => latestHeight(proxy), WAIT).toBe(RECORDED.tipHeight + 1);
    expect(await metricValue(proxy, 'stacks_proxy_push_notifications_total', { origin: upstream.url, kind: 'block' })).toBe(1);
  });

  it('Socket.IO too: the fan-out tries a refusing upstream a few times, spaced out, warned once, and its client stays served', async () => {
    const upstream = await startFakeUpstream();
    defer(() => upstream.close());
    upstream.setFailing({ status: 403 }, /^\/socket\.io\//);
    const { proxy, lines } = await proxyWithPush(upstream);
    const client = io(proxy.url, { transports: ['websocket'], forceNew: true, reconnection: false });
    defer(async () => client.close());
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('connect_error', reject);
    });
    // The first subscribe opens the proxy's one upstream connection; refused, nobody waits for it.
    await client.timeout(5_000).emitWithAck('subscribe', 'block');
    await sleep(3_000);
    // 1 s doubling with jitter over the upper half: at most 0, 0.5 and 1.5 s into the window.
    const attempts = upstream.count((r) => r.method === 'UPGRADE' && r.path.startsWith('/socket.io/'));
    expect(attempts).toBeGreaterThanOrEqual(1);
    expect(attempts).toBeLessThanOrEqual(3);
    expect(client.connected).toBe(true);
    const warnings = linesSaying(lines, 'upstream WebSocket unavailable: tried again with backoff; the chain tip is polled meanwhile');
    const socketIoWarnings = warnings.filter((line) => line.channel === 'socket_io');
    expect(socketIoWarnings).toHaveLength(1);
    expect(socketIoWarnings[0]).toMatchObject({ origin: upstream.url, reason: 'upgrade refused 403' });
  });

  it('says so on /status.json with push off: every upstream is polled', async () => {
    const upstream = await refusingUpstream();
    const proxy = await startTestProxy({ upstreamUrls: [upstream.url], overrides: { live: { push: { enabled: false } } } });
    defer(() => proxy.close());
    expect((await upstreamStatus(proxy, upstream.url))?.push).toEqual({ mode: 'poll', reason: 'push feed off (live.push.enabled)', retryInSeconds: null });
    expect(await metricValue(proxy, 'stacks_proxy_upstream_push_mode', { upstream: upstream.url, mode: 'poll' })).toBe(1);
    expect(upgrades(upstream)).toBe(0);
  });
});
