/**
 * Bounds concurrent requests to one upstream. Past `limit`, callers wait in a FIFO queue of
 * at most `maxQueue`, and no longer than their own deadline; past either they are refused,
 * so an overloaded upstream turns into quick 503s instead of an ever-growing backlog.
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

  async acquire(maxWaitMs: number = Infinity): Promise<() => void> {
    if (this.active < this.limit) {
      this.active++;
      return this.releaser();
    }
    if (this.waiting.length >= this.maxQueue) throw new QueueFullError('upstream request queue is full');
    await new Promise<void>((resolve, reject) => {
      const waiter = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = Number.isFinite(maxWaitMs)
        ? setTimeout(
            () => {
              const at = this.waiting.indexOf(waiter);
              if (at >= 0) this.waiting.splice(at, 1);
              reject(new QueueFullError('waited in the upstream request queue past the deadline'));
            },
            Math.max(0, maxWaitMs),
          )
        : undefined;
      this.waiting.push(waiter);
    });
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
