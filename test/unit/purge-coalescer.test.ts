/** Purge coalescing: which purges share a batch, what a batch carries out, and what each purge is answered. */
import { describe, expect, it } from 'vitest';
import { PurgeCoalescer } from '../../src/cache/purge-coalescer.js';
import type { PurgeSelector } from '../../src/cache/purge.js';
import type { PurgeOutcome } from '../../src/cache/purger.js';

/** A purger whose purges finish when the test says so; `applied` lists what it was asked, in order. */
function controlledPurger() {
  const applied: PurgeSelector[] = [];
  const finishers: Array<(outcome: PurgeOutcome) => void> = [];
  const apply = (selector: PurgeSelector) =>
    new Promise<PurgeOutcome>((resolve) => {
      applied.push(selector);
      finishers.push(resolve);
    });
  const finishNext = async () => {
    await new Promise((resolve) => setImmediate(resolve));
    finishers.shift()?.({ memory: applied.length, redis: null });
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { applied, apply, finishNext };
}

const TX: PurgeSelector = { kind: 'tx', txId: `0x${'a'.repeat(64)}` };
const ROUTE: PurgeSelector = { kind: 'route', route: 'block' };

describe('PurgeCoalescer', () => {
  it('carries out a lone purge at once; purges arriving while it runs wait for one next batch, the same selector once', async () => {
    const purger = controlledPurger();
    const coalescer = new PurgeCoalescer({ apply: purger.apply, coalesceMs: 0 });
    const first = coalescer.purge(TX);
    expect(purger.applied).toEqual([TX]);
    // While the first runs: never joined to it (it may have passed the entries already).
    const waiting = [coalescer.purge(ROUTE), coalescer.purge(TX), coalescer.purge(ROUTE)];
    await purger.finishNext();
    expect(await first).toEqual({ memory: 1, redis: null, applied: TX, coalesced: false });
    await new Promise((resolve) => setTimeout(resolve, 5));
    // The next batch: its selectors one after the other.
    expect(purger.applied).toEqual([TX, ROUTE]);
    await purger.finishNext();
    expect(purger.applied).toEqual([TX, ROUTE, TX]);
    await purger.finishNext();
    const [route, tx, routeAgain] = await Promise.all(waiting);
    expect(route).toEqual({ memory: 2, redis: null, applied: ROUTE, coalesced: true });
    expect(routeAgain).toEqual(route);
    expect(tx).toEqual({ memory: 3, redis: null, applied: TX, coalesced: false });
  });

  it('lets an all subsume every other selector of its batch', async () => {
    const purger = controlledPurger();
    const coalescer = new PurgeCoalescer({ apply: purger.apply, coalesceMs: 0 });
    const first = coalescer.purge(ROUTE);
    const batch = [coalescer.purge(TX), coalescer.purge({ kind: 'all' }), coalescer.purge(ROUTE)];
    await purger.finishNext();
    await first;
    await new Promise((resolve) => setTimeout(resolve, 5));
    await purger.finishNext();
    expect(purger.applied).toEqual([ROUTE, { kind: 'all' }]);
    for (const answer of await Promise.all(batch)) expect(answer).toEqual({ memory: 2, redis: null, applied: { kind: 'all' }, coalesced: true });
  });

  it('passes a failed purge to every request waiting for it, and goes on with the next batch', async () => {
    let calls = 0;
    const coalescer = new PurgeCoalescer({
      apply: async () => {
        calls += 1;
        if (calls === 1) throw new Error('memory tier gone');
        return { memory: 0, redis: null };
      },
      coalesceMs: 0,
    });
    await expect(coalescer.purge(TX)).rejects.toThrow('memory tier gone');
    await expect(coalescer.purge(TX)).resolves.toMatchObject({ applied: TX });
  });
});
