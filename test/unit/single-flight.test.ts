/**
 * Single-flight (src/cache/single-flight.ts): identical concurrent work shares one run. The work
 * is a promise the test settles by hand, so "concurrent" is exact, not a matter of timing.
 */
import { describe, expect, it } from 'vitest';
import { SingleFlight } from '../../src/cache/single-flight.js';

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Work that counts its runs and settles when the test says so. */
function controlledWork<T>() {
  const runs: Deferred<T>[] = [];
  const work = () => {
    const run = deferred<T>();
    runs.push(run);
    return run.promise;
  };
  return { runs, work };
}

describe('single-flight', () => {
  it('runs the work once for concurrent callers of one key, and they all get its result', async () => {
    const flights = new SingleFlight<string>();
    const { runs, work } = controlledWork<string>();
    let joins = 0;
    const callers = [1, 2, 3].map(() => flights.run('k', work, () => joins++));
    expect(runs).toHaveLength(1);
    expect(joins).toBe(2);
    expect(flights.size).toBe(1);
    runs[0]!.resolve('answer');
    expect(await Promise.all(callers)).toEqual(['answer', 'answer', 'answer']);
  });

  it('does not count the caller that started the work as joining', () => {
    const flights = new SingleFlight<string>();
    const { work } = controlledWork<string>();
    let joins = 0;
    void flights.run('k', work, () => joins++);
    expect(joins).toBe(0);
  });

  it('runs different keys separately', async () => {
    const flights = new SingleFlight<string>();
    const { runs, work } = controlledWork<string>();
    const a = flights.run('a', work);
    const b = flights.run('b', work);
    expect(runs).toHaveLength(2);
    expect(flights.size).toBe(2);
    runs[0]!.resolve('for a');
    runs[1]!.resolve('for b');
    expect(await a).toBe('for a');
    expect(await b).toBe('for b');
  });

  it('forgets a key once its work has settled: the next call runs the work again', async () => {
    const flights = new SingleFlight<string>();
    const { runs, work } = controlledWork<string>();
    const first = flights.run('k', work);
    runs[0]!.resolve('first');
    expect(await first).toBe('first');
    expect(flights.size).toBe(0);
    const second = flights.run('k', work);
    expect(runs).toHaveLength(2);
    runs[1]!.resolve('second');
    expect(await second).toBe('second');
  });

  it('gives every caller the same failure, and forgets the key after it', async () => {
    const flights = new SingleFlight<string>();
    const { runs, work } = controlledWork<string>();
    const failure = new Error('upstream down');
    const callers = [1, 2].map(() => flights.run('k', work));
    runs[0]!.reject(failure);
    const outcomes = await Promise.allSettled(callers);
    expect(outcomes).toEqual([
      { status: 'rejected', reason: failure },
      { status: 'rejected', reason: failure },
    ]);
    expect(flights.size).toBe(0);
    void flights.run('k', work);
    expect(runs).toHaveLength(2);
  });

  it('does not keep a key whose work rejects at once', async () => {
    const flights = new SingleFlight<string>();
    const failing = () => Promise.reject(new Error('at once'));
    await expect(flights.run('k', failing)).rejects.toThrow('at once');
    expect(flights.size).toBe(0);
  });
});
