/**
 * Bounds concurrent requests to one upstream. Past `limit`, callers wait in a FIFO queue of
 * at most `maxQueue`; past that they are refused at once, so an overloaded upstream turns
 * into quick 503s instead of an ever-growing backlog.
 */
export class QueueFullError extends Error {
  override name = 'QueueFullError';
}

export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly limit: number,
    private readonly maxQueue: number,
  ) {}

  get inFlight(): number {
    return this.active;
  }

  get queued(): number {
    return this.waiting.length;
  }

  async acquire(): Promise<() => void> {
    if (this.active < this.limit) {
      this.active++;
      return this.releaser();
    }
    if (this.waiting.length >= this.maxQueue) throw new QueueFullError('upstream request queue is full');
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    return this.releaser();
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // Hand the slot straight to the next waiter: `active` stays the same.
      if (next) next();
      else this.active--;
    };
  }
}
