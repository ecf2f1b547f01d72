/**
 * Single-flight through the primary (worker mode without Redis) as coordination logic: the
 * primary's FlightCoordinator and several workers' WorkerFlight, joined by an in-process channel
 * that delivers each message later (as IPC does), structured-cloned and validated on receipt as
 * the real channel's are. The real processes are exercised in test/integration/worker-mode-primary-flight.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { CacheEntry } from '../../src/cache/entry.js';
import { FlightCoordinator, type FlightLimits, type SetTimer } from '../../src/cluster/flight-coordinator.js';
import { isFlightAnswer, isFlightAsk, isFlightDone, type FlightAsk, type FlightDone } from '../../src/cluster/messages.js';
import { WorkerFlight } from '../../src/cluster/worker-flight.js';
import type { PrimaryFlightOutcome } from '../../src/telemetry/telemetry.js';
import { entry } from '../support/entries.js';

const KEY = 'scp:block:/extended/v2/blocks/6';
const LIMITS: FlightLimits = { maxKeys: 100, maxWaitersPerKey: 100, maxEntryBytes: 1 << 20, holdMs: 60_000 };

/** Runs `fire` later, as the other end of an IPC channel would read it. */
const later = (fire: () => void) => setImmediate(fire);

interface Host {
  coordinator: FlightCoordinator;
  workers: WorkerFlight[];
  outcomes: PrimaryFlightOutcome[];
  /** Every message a worker sent the primary. */
  sent: (FlightAsk | FlightDone)[];
  /** The primary's hold timers, fired by the test. */
  holds: (() => void)[];
}

function host(count: number, limits: Partial<FlightLimits> = {}, waitMs = 60_000): Host {
  const outcomes: PrimaryFlightOutcome[] = [];
  const sent: (FlightAsk | FlightDone)[] = [];
  const holds: (() => void)[] = [];
  const setTimer: SetTimer = (_ms, fire) => {
    holds.push(fire);
    return () => holds.splice(holds.indexOf(fire), 1);
  };
  const workers: WorkerFlight[] = [];
  const coordinator = new FlightCoordinator(
    { ...LIMITS, ...limits },
    (worker, answer) => {
      const copy = structuredClone(answer);
      later(() => workers[worker]?.received(copy));
    },
    setTimer,
  );
  for (let worker = 0; worker < count; worker++) {
    const send = (message: FlightAsk | FlightDone) => {
      sent.push(message);
      const copy: unknown = structuredClone(message);
      later(() => {
        if (isFlightAsk(copy)) coordinator.ask(worker, copy);
        else if (isFlightDone(copy)) coordinator.done(worker, copy);
      });
      return true;
    };
    workers.push(new WorkerFlight({ waitMs, maxEntryBytes: LIMITS.maxEntryBytes }, send, { primaryFlight: (_route, outcome) => outcomes.push(outcome) }));
  }
  return { coordinator, workers, outcomes, sent, holds };
}

/** A fetch the test finishes: `answer()` resolves it with an entry, `fail()` rejects it. */
function controlledFetch() {
  let calls = 0;
  let settle: { resolve: (value: CacheEntry | undefined) => void; reject: (error: Error) => void } | undefined;
  const fetch = () => {
    calls++;
    return new Promise<CacheEntry | undefined>((resolve, reject) => (settle = { resolve, reject }));
  };
  return {
    fetch,
    calls: () => calls,
    answer: (value: CacheEntry | undefined) => settle?.resolve(value),
    fail: () => settle?.reject(new Error('upstream failed')),
  };
}

const run = (flight: WorkerFlight, fetch: () => Promise<CacheEntry | undefined>, accept = (_entry: CacheEntry) => true) =>
  flight.run(KEY, 'block', fetch, accept, (value) => value);

const delivered = () => new Promise((resolve) => setImmediate(resolve));

/** Resolves once `check` holds (each message is a later delivery), and the messages it caused arrived. */
async function until(check: () => boolean): Promise<void> {
  while (!check()) await delivered();
  await delivered();
}

describe('single-flight through the primary', () => {
  it('three workers missing one key at once: one fetch, the others get its entry', async () => {
    const { workers, outcomes, coordinator } = host(3);
    const leader = controlledFetch();
    const led = run(workers[0] as WorkerFlight, leader.fetch);
    await until(() => coordinator.size === 1);
    let waiterFetches = 0;
    const waiting = workers.slice(1).map((flight) => run(flight, () => Promise.resolve(entry(`{"own":${++waiterFetches}}`))));
    await until(() => coordinator.waiters(KEY) === 2);
    leader.answer(entry('{"height":6}', { etag: '"h6"' }));
    const [first, ...others] = await Promise.all([led, ...waiting]);
    expect(first).toMatchObject({ kind: 'fetched' });
    for (const outcome of others) {
      expect(outcome.kind).toBe('filled');
      if (outcome.kind === 'filled') {
        expect(outcome.entry.body.toString()).toBe('{"height":6}');
        expect(outcome.entry.etag).toBe('"h6"');
      }
    }
    expect(waiterFetches).toBe(0);
    expect(outcomes.sort()).toEqual(['filled', 'filled', 'led']);
    expect(coordinator.size).toBe(0);
  });

  it('a leader nobody waits for sends no bytes to the primary', async () => {
    const { workers, sent } = host(2);
    await run(workers[0] as WorkerFlight, () => Promise.resolve(entry('{"height":6}')));
    const done = sent.find((message) => message.type === 'scp:flight!');
    expect(done).toBeDefined();
    expect(done && 'bytes' in done).toBe(false);
  });

  it('a leader whose fetch fails releases the key: the waiters fetch themselves, and the failure is the leader’s', async () => {
    const { workers, outcomes, coordinator } = host(3);
    const leader = controlledFetch();
    const led = run(workers[0] as WorkerFlight, leader.fetch);
    await until(() => leader.calls() === 1);
    let waiterFetches = 0;
    const waiting = workers.slice(1).map((flight) => run(flight, () => Promise.resolve(entry(`{"own":${++waiterFetches}}`))));
    await until(() => coordinator.waiters(KEY) === 2);
    leader.fail();
    await expect(led).rejects.toThrow('upstream failed');
    const results = await Promise.all(waiting);
    expect(results.map((r) => r.kind)).toEqual(['fetched', 'fetched']);
    expect(waiterFetches).toBe(2);
    expect(outcomes.sort()).toEqual(['led', 'released', 'released']);
    expect(coordinator.size).toBe(0);
  });

  it('a leader whose worker exits releases the key at once', async () => {
    const { workers, outcomes, coordinator } = host(2);
    const leader = controlledFetch();
    void run(workers[0] as WorkerFlight, leader.fetch);
    await until(() => leader.calls() === 1);
    const waiting = run(workers[1] as WorkerFlight, () => Promise.resolve(entry('{"own":1}')));
    await until(() => coordinator.waiters(KEY) === 1);
    coordinator.workerGone(0);
    expect(await waiting).toMatchObject({ kind: 'fetched' });
    expect(outcomes).toEqual(['led', 'released']);
  });

  it('a leader holding the key past holdMs is let go: waiters fetch, its late answer is ignored', async () => {
    const { workers, outcomes, coordinator, holds } = host(2);
    const leader = controlledFetch();
    const led = run(workers[0] as WorkerFlight, leader.fetch);
    await until(() => leader.calls() === 1);
    const waiting = run(workers[1] as WorkerFlight, () => Promise.resolve(entry('{"own":1}')));
    await until(() => coordinator.waiters(KEY) === 1);
    holds[0]?.();
    expect(await waiting).toMatchObject({ kind: 'fetched' });
    // A new leader for the key; the first leader's late `done` does not end its flight.
    const second = controlledFetch();
    const again = run(workers[1] as WorkerFlight, second.fetch);
    await until(() => second.calls() === 1);
    leader.answer(entry('{"late":1}'));
    await led;
    await until(() => true);
    expect(coordinator.size).toBe(1);
    second.answer(entry('{"height":6}'));
    await again;
    expect(outcomes).toEqual(['led', 'released', 'led']);
  });

  it('a waiter waits at most waitMs, then fetches itself', async () => {
    const { workers, outcomes } = host(2, {}, 20);
    const leader = controlledFetch();
    void run(workers[0] as WorkerFlight, leader.fetch).catch(() => undefined);
    await until(() => leader.calls() === 1);
    const own = controlledFetch();
    const waiting = run(workers[1] as WorkerFlight, own.fetch);
    await until(() => own.calls() === 1);
    own.answer(entry('{"own":1}'));
    expect(await waiting).toMatchObject({ kind: 'fetched' });
    expect(outcomes).toEqual(['led', 'timeout']);
  });

  it('an entry the waiter does not accept (not fresh for it) is fetched anew', async () => {
    const { workers, outcomes, coordinator } = host(2);
    const leader = controlledFetch();
    const led = run(workers[0] as WorkerFlight, leader.fetch);
    await until(() => leader.calls() === 1);
    const waiting = run(
      workers[1] as WorkerFlight,
      () => Promise.resolve(entry('{"own":1}')),
      () => false,
    );
    await until(() => coordinator.waiters(KEY) === 1);
    leader.answer(entry('{"height":6}'));
    await led;
    expect(await waiting).toMatchObject({ kind: 'fetched' });
    expect(outcomes).toEqual(['led', 'released']);
  });

  it('is bounded: keys held, waiters per key, entry bytes relayed', async () => {
    const keys = host(2, { maxKeys: 1 });
    const first = controlledFetch();
    void keys.workers[0]?.run(
      'other',
      'block',
      first.fetch,
      () => true,
      (v) => v,
    );
    await until(() => first.calls() === 1);
    expect(await run(keys.workers[1] as WorkerFlight, () => Promise.resolve(entry('{}')))).toMatchObject({ kind: 'fetched' });
    expect(keys.outcomes).toEqual(['led', 'refused']);

    const waiters = host(3, { maxWaitersPerKey: 1 });
    const leader = controlledFetch();
    const led = run(waiters.workers[0] as WorkerFlight, leader.fetch);
    await until(() => leader.calls() === 1);
    const one = run(waiters.workers[1] as WorkerFlight, () => Promise.resolve(entry('{}')));
    await until(() => waiters.coordinator.waiters(KEY) === 1);
    expect(await run(waiters.workers[2] as WorkerFlight, () => Promise.resolve(entry('{}')))).toMatchObject({ kind: 'fetched' });
    leader.answer(entry('{"height":6}'));
    await led;
    expect(await one).toMatchObject({ kind: 'filled' });
    expect(waiters.outcomes.sort()).toEqual(['filled', 'led', 'refused']);

    const bytes = host(2, { maxEntryBytes: 64 });
    const big = controlledFetch();
    const bigLed = run(bytes.workers[0] as WorkerFlight, big.fetch);
    await until(() => big.calls() === 1);
    const bigWait = run(bytes.workers[1] as WorkerFlight, () => Promise.resolve(entry('{}')));
    await until(() => bytes.coordinator.waiters(KEY) === 1);
    big.answer(entry('x'.repeat(200)));
    await bigLed;
    expect(await bigWait).toMatchObject({ kind: 'fetched' });
    expect(bytes.outcomes).toEqual(['led', 'released']);
  });

  it('messages are validated on receipt', () => {
    expect(isFlightAsk({ type: 'scp:flight?', id: 1, key: KEY })).toBe(true);
    expect(isFlightAsk({ type: 'scp:flight?', id: -1, key: KEY })).toBe(false);
    expect(isFlightAsk({ type: 'scp:flight?', id: 1, key: '' })).toBe(false);
    expect(isFlightAsk({ type: 'scp:flight?', id: 1, key: 'k'.repeat(9_000) })).toBe(false);
    expect(isFlightDone({ type: 'scp:flight!', id: 1, key: KEY, bytes: 'not bytes' })).toBe(false);
    expect(isFlightDone({ type: 'scp:flight!', id: 1, key: KEY, bytes: new Uint8Array(2) })).toBe(true);
    expect(isFlightAnswer({ type: 'scp:flight', id: 1, result: 'filled' })).toBe(false);
    expect(isFlightAnswer({ type: 'scp:flight', id: 1, result: 'maybe' })).toBe(false);
    expect(isFlightAnswer({ type: 'scp:flight', id: 1, result: 'lead' })).toBe(true);
  });
});
