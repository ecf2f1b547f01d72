/**
 * At most one log line per key and interval (pure; time comes in as an argument): an event that
 * can repeat on every request (an answer that disagrees with the chain model) is logged when it
 * starts, then once per interval with the number of lines held back meanwhile. Bounded: at most
 * `maxKeys` keys are remembered (the oldest forgotten first; a forgotten key logs again).
 */
export interface LogPermit {
  /** Whether to write a line now. */
  log: boolean;
  /** Lines not written for this key since the last one that was. */
  suppressed: number;
}

export class LogLimiter {
  private readonly keys = new Map<string, { loggedAt: number; suppressed: number }>();

  constructor(
    private readonly intervalMs: number,
    private readonly maxKeys = 256,
  ) {}

  permit(key: string, now: number): LogPermit {
    const known = this.keys.get(key);
    if (known && now - known.loggedAt < this.intervalMs) {
      known.suppressed += 1;
      return { log: false, suppressed: known.suppressed };
    }
    const suppressed = known?.suppressed ?? 0;
    this.keys.delete(key);
    this.keys.set(key, { loggedAt: now, suppressed: 0 });
    if (this.keys.size > this.maxKeys) this.keys.delete(this.keys.keys().next().value as string);
    return { log: true, suppressed };
  }
}
