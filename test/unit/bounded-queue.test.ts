/**
 * The bounded queue in front of each upstream (src/upstream/semaphore.ts): at most `limit`
 * requests in flight, at most `maxQueue` waiting (first come, first served), none waiting past
 * its deadline. Deadlines run on fake timers; whether a promise has settled is read after the
 * pending callbacks ran, never after a sleep.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { QueueFullError, Semaphore } from '../../src/upstream/semaphore.js';

type Outcome<T> = { state: 'pending' } | { state: 'fulfilled'; value: T } | { state: 'rejected'; error: unknown };

/** Records how a promise settles, so a test can assert that it has not (yet). */
function track<T>(promise: Promise<T>): { readonly outcome: Outcome<T> } {
  const tracked: { outcome: Outcome<T> } = { outcome: { state: 'pending' } };
  promise.then(
    (value) => (tracked.outcome = { state: 'fulfilled', value }),
    (error: unknown) => (tracked.outcome = { state: 'rejected', error }),
  );
  return tracked;
}

/** Runs every pending promise callback (setImmediate is not faked here). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('bounded queue', () => {
  it('grants up to `limit` slots at once', async () => {
    const gate = new Semaphore(2, 5);
    await gate.acquire();
    await gate.acquire();
    expect(gate.inFlight).toBe(2);
    expect(gate.queued).toBe(0);
  });

  it('queues callers past the limit and hands a released slot to the first in line', async () => {
    const gate = new Semaphore(1, 5);
    const release = await gate.acquire();
    const first = track(gate.acquire());
    const second = track(gate.acquire());
    await settle();
    expect(first.outcome.state).toBe('pending');
    expect(second.outcome.state).toBe('pending');
    expect(gate.queued).toBe(2);

    release();
    await settle();
    expect(first.outcome.state).toBe('fulfilled');
    expect(second.outcome.state).toBe('pending');
    // The slot went straight to the waiter: still one in flight.
    expect(gate.inFlight).toBe(1);
    expect(gate.queued).toBe(1);
  });

  it('refuses at once when the queue is full', async () => {
    const gate = new Semaphore(1, 1);
    await gate.acquire();
    void gate.acquire();
    await expect(gate.acquire()).rejects.toBeInstanceOf(QueueFullError);
    expect(gate.inFlight).toBe(1);
    expect(gate.queued).toBe(1);
  });

  it('with no queue, refuses every caller past the limit', async () => {
    const gate = new Semaphore(1, 0);
    await gate.acquire();
    await expect(gate.acquire()).rejects.toThrow('upstream request queue is full');
  });

  it('refuses a waiter when its deadline passes, and takes it out of the queue', async () => {
    const gate = new Semaphore(1, 5);
    const release = await gate.acquire();
    const waiter = track(gate.acquire(100));
    await vi.advanceTimersByTimeAsync(99);
    expect(waiter.outcome.state).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(waiter.outcome).toEqual({ state: 'rejected', error: expect.any(QueueFullError) });
    expect(gate.queued).toBe(0);
    // No one is waiting any more: releasing frees the slot.
    release();
    expect(gate.inFlight).toBe(0);
  });

  it('does not refuse a waiter served before its deadline', async () => {
    const gate = new Semaphore(1, 5);
    const release = await gate.acquire();
    const waiter = track(gate.acquire(100));
    await vi.advanceTimersByTimeAsync(50);
    release();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(waiter.outcome.state).toBe('fulfilled');
    expect(gate.inFlight).toBe(1);
  });

  it('without a deadline, a waiter waits as long as it takes', async () => {
    const gate = new Semaphore(1, 5);
    const release = await gate.acquire();
    const waiter = track(gate.acquire());
    await vi.advanceTimersByTimeAsync(24 * 3_600_000);
    expect(waiter.outcome.state).toBe('pending');
    release();
    await settle();
    expect(waiter.outcome.state).toBe('fulfilled');
  });

  it('counts a release only once, however often it is called', async () => {
    const gate = new Semaphore(2, 5);
    const release = await gate.acquire();
    await gate.acquire();
    release();
    release();
    expect(gate.inFlight).toBe(1);
  });

  it('frees the slot when the last holder releases and nobody waits', async () => {
    const gate = new Semaphore(1, 5);
    const release = await gate.acquire();
    release();
    expect(gate.inFlight).toBe(0);
    await gate.acquire();
    expect(gate.inFlight).toBe(1);
  });
});
