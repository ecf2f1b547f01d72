/**
 * Bounded restarts of dead workers: at most `max` within any `windowMs`. A worker that dies now
 * and then is replaced; one that dies as soon as it starts (a bug, a host out of memory) would
 * otherwise be restarted in a tight loop forever, so past the budget the primary gives up.
 */
import type { Clock } from '../clock.js';

export class RestartBudget {
  private readonly restarts: number[] = [];

  constructor(
    private readonly max: number,
    private readonly windowMs: number,
    private readonly clock: Clock,
  ) {}

  /** Whether one more restart fits; counts it when it does. */
  take(): boolean {
    const now = this.clock();
    while (this.restarts.length > 0 && (this.restarts[0] as number) <= now - this.windowMs) this.restarts.shift();
    if (this.restarts.length >= this.max) return false;
    this.restarts.push(now);
    return true;
  }
}
