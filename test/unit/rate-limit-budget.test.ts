/** The per-process budget: fixed windows on the given clock, refusals take nothing, bounded memory. */
import { describe, expect, it } from 'vitest';
import { MemoryBudget } from '../../src/limits/budget.js';
import { ApiKeyBook, sha256Hex } from '../../src/limits/api-keys.js';

describe('MemoryBudget', () => {
  it('allows up to the limit per window, refuses without charging, and starts again in the next window', () => {
    const budget = new MemoryBudget(60_000, 100);
    const t = 120_000; // the start of window 2
    expect(budget.take('a', 1, 3, t)).toEqual({ allowed: true, used: 1, resetAtMs: 180_000 });
    expect(budget.take('a', 2, 3, t + 10)).toEqual({ allowed: true, used: 3, resetAtMs: 180_000 });
    expect(budget.take('a', 1, 3, t + 20)).toEqual({ allowed: false, used: 3, resetAtMs: 180_000 });
    expect(budget.take('b', 1, 3, t + 20)).toEqual({ allowed: true, used: 1, resetAtMs: 180_000 });
    expect(budget.take('a', 1, 3, 180_000)).toEqual({ allowed: true, used: 1, resetAtMs: 240_000 });
  });

  it('refuses a cost larger than what is left, and charges nothing for it', () => {
    const budget = new MemoryBudget(1_000, 100);
    expect(budget.take('a', 4, 5, 0).allowed).toBe(true);
    expect(budget.take('a', 2, 5, 0)).toEqual({ allowed: false, used: 4, resetAtMs: 1_000 });
    expect(budget.take('a', 1, 5, 0)).toEqual({ allowed: true, used: 5, resetAtMs: 1_000 });
  });

  it('when full, forgets the least recently seen client: a new client always has its own budget', () => {
    const budget = new MemoryBudget(1_000, 2);
    budget.take('a', 1, 2, 0);
    budget.take('b', 1, 2, 0);
    budget.take('a', 1, 2, 0); // a is now the most recent, and spent
    // c takes b's room: c starts from a budget of its own, and so does d (taking a's).
    expect(budget.take('c', 2, 2, 0)).toMatchObject({ allowed: true, used: 2 });
    expect(budget.take('d', 1, 2, 0)).toMatchObject({ allowed: true, used: 1 });
    expect(budget.trackedClients).toBe(2);
    // The bounded leniency: a, forgotten, starts again from a fresh budget within the window.
    expect(budget.take('a', 1, 2, 0)).toMatchObject({ allowed: true, used: 1 });
    // d, still tracked, keeps its count.
    expect(budget.take('d', 1, 2, 0)).toMatchObject({ allowed: true, used: 2 });
    expect(budget.take('d', 1, 2, 0)).toMatchObject({ allowed: false, used: 2 });
  });

  it('holds at most its cap however many clients come', () => {
    const budget = new MemoryBudget(1_000, 50);
    for (let i = 0; i < 10_000; i++) expect(budget.take(`ip:${i}`, 1, 1, 0).allowed).toBe(true);
    expect(budget.trackedClients).toBe(50);
  });
});

describe('ApiKeyBook', () => {
  it('finds a key by the hash of what the client presents, and nothing else', () => {
    const book = new ApiKeyBook([{ name: 'partner', sha256: sha256Hex('s3cret'), limit: 5 }]);
    expect(book.find('s3cret')).toEqual({ name: 'partner', sha256: sha256Hex('s3cret'), limit: 5 });
    expect(book.find(sha256Hex('s3cret'))).toBeUndefined();
    expect(book.find('s3cre')).toBeUndefined();
    expect(book.find('')).toBeUndefined();
  });

  it('hashes as `printf %s "$KEY" | sha256sum` does', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
