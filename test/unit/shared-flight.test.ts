/**
 * Cross-instance single-flight's waiting side, as pure coordination logic: a memory store stands
 * in for the shared tier and a scripted lock for Redis's (the Redis-backed lock is exercised in
 * test/integration/faults.test.ts). The race here: the holder lands its answer and releases the
 * lock between a waiter's look at the tier and its check of the lock.
 */
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/cache/memory-store.js';
import { SharedFlight } from '../../src/cache/shared-flight.js';
import type { SharedLock } from '../../src/cache/store.js';
import { entry } from '../support/entries.js';

const KEY = 'scp:block:/extended/v2/blocks/6';

function tier(): MemoryStore {
  return new MemoryStore({ maxBytes: 1 << 20, maxEntryBytes: 1 << 20 });
}

/** A lock another instance holds; `onIsHeld` runs when the waiter asks, before the answer. */
function heldElsewhere(onIsHeld: (calls: number) => Promise<boolean>): SharedLock {
  let calls = 0;
  return {
    acquire: () => Promise.resolve('busy'),
    isHeld: () => onIsHeld(++calls),
  };
}

describe('SharedFlight, waiting for a peer', () => {
  it('takes the answer a holder landed just before releasing, though its look at the tier came first', async () => {
    const shared = tier();
    const landed = entry('{"height":6}');
    // The first check of the lock is when the holder lands and releases: the waiter's look at
    // the tier that preceded it found nothing.
    const lock = heldElsewhere(async () => {
      await shared.set(KEY, landed, null);
      return false;
    });
    let fetched = 0;
    const flight = new SharedFlight({ lock, lockTtlMs: 1_000, waitMs: 5_000 }, shared, Date.now);
    const outcome = await flight.run(
      KEY,
      'block',
      () => Promise.resolve(++fetched),
      () => true,
    );
    expect(outcome).toEqual({ kind: 'filled', entry: landed });
    expect(fetched).toBe(0);
  });

  it('fetches itself when the holder released without landing an answer (it failed)', async () => {
    const lock = heldElsewhere(() => Promise.resolve(false));
    const flight = new SharedFlight({ lock, lockTtlMs: 1_000, waitMs: 5_000 }, tier(), Date.now);
    const outcome = await flight.run(
      KEY,
      'block',
      () => Promise.resolve('own answer'),
      () => true,
    );
    expect(outcome).toEqual({ kind: 'fetched', value: 'own answer' });
  });

  it('does not take a landed answer the caller cannot use (not fresh)', async () => {
    const shared = tier();
    const lock = heldElsewhere(async () => {
      await shared.set(KEY, entry('{"old":true}'), null);
      return false;
    });
    const flight = new SharedFlight({ lock, lockTtlMs: 1_000, waitMs: 5_000 }, shared, Date.now);
    const outcome = await flight.run(
      KEY,
      'block',
      () => Promise.resolve('own answer'),
      () => false,
    );
    expect(outcome).toEqual({ kind: 'fetched', value: 'own answer' });
  });
});

/** A free lock: taking it succeeds, and `released` counts the releases. */
function freeLock(): SharedLock & { released: number } {
  const lock = {
    released: 0,
    acquire: () => Promise.resolve(async () => void lock.released++),
    isHeld: () => Promise.resolve(false),
  };
  return lock;
}

describe('SharedFlight, taking the lock', () => {
  it('takes the answer a previous holder landed before this instance took the lock, and fetches nothing', async () => {
    // The caller's look at the tier missed; the previous holder then landed its answer and released.
    const shared = tier();
    const landed = entry('{"height":6}');
    await shared.set(KEY, landed, null);
    const lock = freeLock();
    let fetched = 0;
    const flight = new SharedFlight({ lock, lockTtlMs: 1_000, waitMs: 5_000 }, shared, Date.now);
    const outcome = await flight.run(
      KEY,
      'block',
      () => Promise.resolve(++fetched),
      () => true,
    );
    expect(outcome).toEqual({ kind: 'filled', entry: landed });
    expect(fetched).toBe(0);
    expect(lock.released).toBe(1);
  });

  it('fetches, as the holder that must land, when the tier has nothing the caller can use', async () => {
    const shared = tier();
    await shared.set(KEY, entry('{"old":true}'), null);
    const lock = freeLock();
    const flight = new SharedFlight({ lock, lockTtlMs: 1_000, waitMs: 5_000 }, shared, Date.now);
    const outcome = await flight.run(
      KEY,
      'block',
      (mustLand) => Promise.resolve(mustLand ? 'landing answer' : 'unlocked answer'),
      () => false,
    );
    expect(outcome).toEqual({ kind: 'fetched', value: 'landing answer' });
    expect(lock.released).toBe(1);
  });
});
