/**
 * Concurrent identical misses share one upstream request: the first caller runs the work,
 * later callers with the same key get the same promise until it settles.
 */
export class SingleFlight<T> {
  private readonly inFlight = new Map<string, Promise<T>>();

  /** `onJoin` runs for every caller that did not start the work (for a metric). */
  run(key: string, work: () => Promise<T>, onJoin?: () => void): Promise<T> {
    const existing = this.inFlight.get(key);
    if (existing) {
      onJoin?.();
      return existing;
    }
    const promise = work().finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, promise);
    return promise;
  }

  /** The flight running for `key`, if any (a caller that must look at its result before taking it). */
  running(key: string): Promise<T> | undefined {
    return this.inFlight.get(key);
  }

  get size(): number {
    return this.inFlight.size;
  }
}
