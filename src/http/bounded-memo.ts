/**
 * A bounded memo for pure functions of a request target (its decided form, its route and
 * validated request): clients repeat the same URLs, so the hit path computes each once. Bounded
 * in entries and key length, so a flood of distinct or long URLs costs a recomputation each,
 * never memory: when full, the oldest entry goes (insertion order; no reordering on a hit, which
 * keeps a hit to one Map lookup).
 *
 * The oldest key is kept in a ring beside the Map, not found with `keys().next()`: V8 leaves a
 * deleted Map entry as a hole until the table is rebuilt, and the iterator walks every hole
 * before it, so under a flood of distinct URLs each eviction walked up to thousands of holes
 * (about 1.5 µs an eviction at 4,096 entries in a micro-benchmark; the ring's delete is constant time).
 * Values are never undefined, so a Map miss is a key not kept, and a key is kept at most once.
 */
export class BoundedMemo<Value extends NonNullable<unknown> | null> {
  private readonly entries = new Map<string, Value>();
  /** The kept keys in insertion order, oldest at `oldest` once the memo is full. */
  private readonly order: string[] = [];
  private oldest = 0;

  constructor(
    private readonly maxEntries: number,
    /** Longer keys are computed every time and not kept. */
    private readonly maxKeyLength: number,
  ) {}

  get(key: string, compute: (key: string) => Value): Value {
    const known = this.entries.get(key);
    if (known !== undefined) return known;
    const value = compute(key);
    if (key.length <= this.maxKeyLength) this.keep(key, value);
    return value;
  }

  get size(): number {
    return this.entries.size;
  }

  private keep(key: string, value: Value): void {
    if (this.order.length < this.maxEntries) {
      this.order.push(key);
    } else {
      this.entries.delete(this.order[this.oldest] as string);
      this.order[this.oldest] = key;
      this.oldest = (this.oldest + 1) % this.maxEntries;
    }
    this.entries.set(key, value);
  }
}
