/**
 * A Zipf-distributed choice among ranked items (rank k drawn with probability proportional to
 * 1/k^s), from a seeded generator so every run draws the same sequence.
 */
export { seededRandom } from '../../testkit/seeded-random.js';

/** Returns a function drawing an index in [0, n) with Zipf exponent `s`. */
export function zipfSampler(n: number, s: number, random: () => number): () => number {
  const cdf = new Float64Array(n);
  let total = 0;
  for (let k = 0; k < n; k++) cdf[k] = total += 1 / (k + 1) ** s;
  return () => {
    const target = random() * total;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((cdf[mid] as number) < target) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

/** Fisher-Yates shuffle, in place. */
export function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}
