/**
 * The schedule of attempts to open an upstream WebSocket (issue 27): doubling with jitter over
 * the upper half, capped, started again only after a connection that stayed up; and the words
 * a failed attempt is reported in.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { failedWith, refusedWith, socketIoFailure } from '../../src/live/connect-failure.js';
import { reconnectDelay, RetryBackoff } from '../../src/live/retry-backoff.js';

const SETTINGS = { minMs: 1_000, maxMs: 300_000, stayedUpMs: 10_000 };

/** `random` answers these values in turn (the last one for ever after). */
const randoms = (values: number[]) => {
  let at = 0;
  return () => values[Math.min(at++, values.length - 1)] as number;
};

describe('reconnectDelay', () => {
  it('doubles from the minimum up to the maximum, jittered over the upper half', () => {
    expect(reconnectDelay(0, 250, 10_000, 0)).toBe(125);
    expect(reconnectDelay(0, 250, 10_000, 0.999)).toBeLessThan(250);
    expect(reconnectDelay(1, 250, 10_000, 0)).toBe(250);
    expect(reconnectDelay(3, 250, 10_000, 0)).toBe(1_000);
    expect(reconnectDelay(10, 250, 10_000, 0)).toBe(5_000);
    expect(reconnectDelay(10_000, 250, 10_000, 0.999)).toBeLessThan(10_000);
    expect(reconnectDelay(10_000, 250, 10_000, 0)).toBe(5_000);
  });

  it('stays within [ceiling / 2, ceiling) of the capped doubling, whatever the attempt and draw', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 1, max: 60_000 }),
        fc.integer({ min: 0, max: 600_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, minMs, extra, random) => {
          const maxMs = minMs + extra;
          const ceiling = Math.min(maxMs, minMs * 2 ** Math.min(attempt, 30));
          const delay = reconnectDelay(attempt, minMs, maxMs, random);
          expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
          expect(delay).toBeLessThanOrEqual(ceiling);
          expect(delay).toBeLessThanOrEqual(maxMs);
        },
      ),
    );
  });
});

describe('RetryBackoff', () => {
  it('spaces attempts against an upstream that keeps refusing: 1 s doubling to 5 min', () => {
    const backoff = new RetryBackoff(SETTINGS, () => 0.999_999);
    const delays = Array.from({ length: 12 }, () => Math.round(backoff.next()));
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000, 300_000, 300_000]);
    expect(backoff.failures).toBe(12);
  });

  it('makes a small, bounded number of attempts in any window, whatever the jitter draws', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1, maxLength: 64 }), (draws) => {
        const backoff = new RetryBackoff(SETTINGS, randoms(draws));
        // The first attempt at 0, then one after each delay: those within the first hour.
        let at = 0;
        let attempts = 1;
        while ((at += backoff.next()) <= 3_600_000) attempts += 1;
        // Earliest possible: 0.5, 1.5, 3.5, ... s, then at least every 150 s (half the cap).
        expect(attempts).toBeLessThanOrEqual(1 + 9 + Math.ceil(3_600_000 / 150_000));
        // And never more than a ceiling apart (1 + 2 + ... + 256 s, then 300 s each): it keeps trying.
        expect(attempts).toBeGreaterThanOrEqual(1 + 9 + Math.floor((3_600_000 - 511_000) / 300_000));
      }),
    );
  });

  it('starts again from the minimum after a connection that stayed up, not after one that dropped at once', () => {
    const backoff = new RetryBackoff(SETTINGS, () => 0);
    expect([backoff.next(), backoff.next(), backoff.next()]).toEqual([500, 1_000, 2_000]);
    // Opened, then cut before it stayed up (a gateway that accepts the upgrade and drops it): still backing off.
    expect(backoff.next(SETTINGS.stayedUpMs - 1)).toBe(4_000);
    expect(backoff.next(SETTINGS.stayedUpMs)).toBe(500);
    expect(backoff.next()).toBe(1_000);
    expect(backoff.failures).toBe(2);
  });
});

describe('connect failures', () => {
  it('names a refused upgrade by its status and a failed one by its error code', () => {
    expect(refusedWith(404)).toEqual({ kind: 'refused', reason: 'upgrade refused 404' });
    expect(failedWith(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }))).toEqual({
      kind: 'failed',
      reason: 'connection failed ECONNREFUSED',
    });
    expect(failedWith(new Error('Opening handshake has timed out')).reason).toBe('connection failed Opening handshake has timed out');
    expect(failedWith(new Error('x'.repeat(1_000))).reason.length).toBeLessThan(150);
  });

  it("reads socket.io-client's connect_error: ws's words for a non-101 answer, else the underlying error", () => {
    const transportError = (description: unknown) => Object.assign(new Error('websocket error'), { type: 'TransportError', description });
    expect(socketIoFailure(transportError({ message: 'Unexpected server response: 403' }))).toEqual(refusedWith(403));
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(socketIoFailure(transportError({ message: 'connect ECONNREFUSED', error: refused })).reason).toBe('connection failed ECONNREFUSED');
    expect(socketIoFailure(new Error('timeout')).reason).toBe('connection failed timeout');
  });
});
