import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BoundedMemo } from '../../src/http/bounded-memo.js';

describe('BoundedMemo', () => {
  it('computes a key once and answers it from memory after', () => {
    const memo = new BoundedMemo<string>(4, 100);
    let computed = 0;
    const compute = (key: string) => {
      computed++;
      return key.toUpperCase();
    };
    expect(memo.get('/a', compute)).toBe('/A');
    expect(memo.get('/a', compute)).toBe('/A');
    expect(computed).toBe(1);
  });

  it('holds at most maxEntries, dropping the oldest, and recomputes what it dropped', () => {
    const memo = new BoundedMemo<number>(3, 100);
    let computed = 0;
    const compute = (key: string) => {
      computed++;
      return key.length;
    };
    for (const key of ['a', 'bb', 'ccc', 'dddd']) memo.get(key, compute);
    expect(memo.size).toBe(3);
    expect(computed).toBe(4);
    memo.get('dddd', compute);
    expect(computed).toBe(4);
    expect(memo.get('a', compute)).toBe(1);
    expect(computed).toBe(5);
    expect(memo.size).toBe(3);
  });

  it('never keeps a key longer than maxKeyLength, so long URLs cost no memory', () => {
    const memo = new BoundedMemo<number>(10, 8);
    let computed = 0;
    const compute = () => ++computed;
    memo.get('x'.repeat(9), compute);
    memo.get('x'.repeat(9), compute);
    expect(computed).toBe(2);
    expect(memo.size).toBe(0);
  });

  it('stays bounded under a flood of distinct keys', () => {
    const memo = new BoundedMemo<number>(100, 64);
    for (let i = 0; i < 100_000; i++) memo.get(`/extended/v1/tx/${i}`, () => i);
    expect(memo.size).toBe(100);
  });

  it('drops keys oldest first through many rounds of eviction, as a list of the kept keys would', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 200 }), (maxEntries, keys) => {
        const memo = new BoundedMemo<number>(maxEntries, 100);
        const kept: string[] = [];
        for (const n of keys) {
          const key = `/k/${n}`;
          let computed = false;
          memo.get(key, () => {
            computed = true;
            return n;
          });
          expect(computed).toBe(!kept.includes(key));
          if (computed) {
            kept.push(key);
            if (kept.length > maxEntries) kept.shift();
          }
          expect(memo.size).toBe(kept.length);
        }
      }),
    );
  });
});
