/** The ordered stop (src/stop-sequence.ts): step order, a failing stop not keeping the rest from running, one run. */
import { describe, expect, it } from 'vitest';
import { StopSequence } from '../../src/stop-sequence.js';
import { judgeReadiness } from '../../src/http/readiness.js';
import { ADMIN_LISTENER, listenError, PUBLIC_LISTENER } from '../../src/http/standalone-listeners.js';
import type { UpstreamStatus } from '../../src/upstream/client.js';

describe('StopSequence', () => {
  it('runs the steps in order whatever order the parts were entered in, and the stops of a step together', async () => {
    const stops = new StopSequence();
    const seen: string[] = [];
    stops.add('connections', () => seen.push('pool'));
    stops.add('pollers', async () => {
      await new Promise((resolve) => setImmediate(resolve));
      seen.push('tracker');
    });
    stops.add('pollers', () => seen.push('notifier'));
    stops.add('refuse', () => seen.push('refuse'));
    await stops.run();
    expect(seen).toEqual(['refuse', 'notifier', 'tracker', 'pool']);
  });

  it('runs every stop when one fails, then throws the first failure; a second run is the same promise', async () => {
    const stops = new StopSequence();
    const seen: string[] = [];
    stops.add('stores', () => {
      throw new Error('redis quit failed');
    });
    stops.add('connections', () => seen.push('pool'));
    const first = stops.run();
    expect(stops.run()).toBe(first);
    await expect(first).rejects.toThrow('redis quit failed');
    expect(seen).toEqual(['pool']);
  });
});

const status = (origin: string, extra: Partial<UpstreamStatus> = {}): UpstreamStatus => ({
  origin,
  breaker: 'closed',
  usable: true,
  inFlight: 0,
  queued: 0,
  recentFailures: [],
  ...extra,
});

describe('judgeReadiness', () => {
  it("says why: each upstream's last error, or that it has not answered yet", () => {
    const upstreams = [status('http://a', { lastError: { message: 'connect from http://a: connect ECONNREFUSED', ageMs: 5 } }), status('http://b')];
    expect(judgeReadiness({ shuttingDown: false, tip: undefined, upstreams })).toEqual({
      ready: false,
      reason: 'chain tip not known yet (connect from http://a: connect ECONNREFUSED; http://b: no answer yet)',
      details: { upstreams },
    });
    const broken = upstreams.map((u) => ({ ...u, usable: false }));
    expect(judgeReadiness({ shuttingDown: false, tip: { height: 7 }, upstreams: broken }).reason).toMatch(
      /^no healthy upstream \(connect from http:\/\/a: connect/,
    );
    expect(judgeReadiness({ shuttingDown: false, tip: { height: 7 }, upstreams })).toEqual({ ready: true, details: { tipHeight: 7, upstreams } });
    expect(judgeReadiness({ shuttingDown: true, tip: { height: 7 }, upstreams })).toEqual({ ready: false, reason: 'shutting down' });
  });
});

describe('listenError', () => {
  const failure = (code: string, message: string) => Object.assign(new Error(message), { code });
  it('names the setting to change: the port when it is taken, the host when the address is not this machine’s', () => {
    expect(listenError(failure('EADDRINUSE', 'listen EADDRINUSE: address already in use 127.0.0.1:9091'), ADMIN_LISTENER, '127.0.0.1', 9091).message).toBe(
      'listen EADDRINUSE 127.0.0.1:9091: the admin port is taken (ADMIN_PORT / admin.port)',
    );
    expect(listenError(failure('EACCES', 'permission denied'), PUBLIC_LISTENER, '0.0.0.0', 80).message).toBe(
      'listen EACCES 0.0.0.0:80: the public port needs privileges this process lacks (PORT / server.port)',
    );
    const notHere = listenError(failure('EADDRNOTAVAIL', 'cannot assign'), PUBLIC_LISTENER, '::2', 8080);
    expect(notHere.message).toBe('listen EADDRNOTAVAIL [::2]:8080: the public port is on an address this machine does not have (HOST / server.host)');
    expect((notHere as Error & { code?: string }).code).toBe('EADDRNOTAVAIL');
  });
});
