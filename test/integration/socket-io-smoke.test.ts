import { io } from 'socket.io-client';
import { describe, expect, it } from 'vitest';
import { attachSocketIoChannel } from '../../testkit/live-upstream/socket-io-channel.js';
import { waitFor } from '../../testkit/index.js';
import { startTestProxy } from '../support/proxy-harness.js';
import { useCleanups } from '../support/cleanups.js';

const { defer, fakeUpstream } = useCleanups();

describe('smoke', () => {
  it('delivers', async () => {
    const fake = await fakeUpstream();
    const channel = attachSocketIoChannel(fake);
    defer(() => channel.close());
    const proxy = await startTestProxy({ upstreamUrls: [fake.url] });
    defer(() => proxy.close());
    for (const transports of [['websocket'], ['polling']]) {
      const client = io(proxy.url, { transports, forceNew: true, query: { subscriptions: 'block' } });
      defer(async () => client.close());
      const got: unknown[] = [];
      client.on('block', (b) => got.push(b));
      await new Promise<void>((resolve, reject) => { client.once('connect', () => resolve()); client.once('connect_error', reject); });
      await waitFor(async () => channel.roomSize('block') === 1, { timeoutMs: 5000, what: 'room' });
      channel.publish('block', { height: 1 });
      await waitFor(async () => got.length === 1, { timeoutMs: 5000, what: 'event' });
      expect(got).toEqual([{ height: 1 }]);
      client.close();
    }
    expect(channel.connectionsEver).toBe(1);
  });
});
