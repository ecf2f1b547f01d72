/**
 * A bounded memo for pure functions of a request target (its decided form, its route and
 * validated request): clients repeat the same URLs, so the hit path computes each once. Bounded
 * in entries and key length, so a flood of distinct or long URLs costs a recomputation each,
 * never memory: when full, the oldest entry goes (insertion order; no reordering on a hit, which
 * keeps a hit to one Map lookup).
 */
export class BoundedMemo<Value> {
  private readonly entries = new Map<string, Value>();

  constructor(
    private readonly maxEntries: number,
    /** Longer keys are computed every time and not kept. */
    private readonly maxKeyLength: number,
  ) {}

  get(key: string, compute: (key: string) => Value): Value {
    const known = this.entries.get(key);
    if (known !== undefined) return known;
    const value = compute(key);
    if (key.length <= this.maxKeyLength) {
      if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
      this.entries.set(key, value);
    }
    return value;
  }

  get size(): number {
    return this.entries.size;
  }
}
