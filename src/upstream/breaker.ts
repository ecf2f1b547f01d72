/**
 * A circuit breaker per upstream (pure; time comes in as an argument). It opens after
 * `failureThreshold` consecutive failures, lets one trial request through after `cooldownMs`
 * (half-open), and closes again on the first success.
 */
export type BreakerState = 'closed' | 'open' | 'half_open';

export interface BreakerSettings {
  failureThreshold: number;
  cooldownMs: number;
}

export class CircuitBreaker {
  private failures = 0;
  private openedAt: number | undefined;
  private trialInFlight = false;

  constructor(private readonly settings: BreakerSettings) {}

  state(now: number): BreakerState {
    if (this.openedAt === undefined) return 'closed';
    return now - this.openedAt >= this.settings.cooldownMs ? 'half_open' : 'open';
  }

  /** Whether a request may go now; in half-open state only one trial at a time. */
  tryAcquire(now: number): boolean {
    const state = this.state(now);
    if (state === 'closed') return true;
    if (state === 'open' || this.trialInFlight) return false;
    this.trialInFlight = true;
    return true;
  }

  /** The acquired slot was not used (the request never left): free a half-open trial. */
  release(): void {
    this.trialInFlight = false;
  }

  /** Returns true when this success closed an open breaker. */
  onSuccess(): boolean {
    const wasOpen = this.openedAt !== undefined;
    this.failures = 0;
    this.openedAt = undefined;
    this.trialInFlight = false;
    return wasOpen;
  }

  /** Returns true when this failure opened the breaker. */
  onFailure(now: number): boolean {
    this.trialInFlight = false;
    this.failures += 1;
    if (this.openedAt !== undefined) {
      this.openedAt = now; // a failed trial starts a new cool-down
      return false;
    }
    if (this.failures < this.settings.failureThreshold) return false;
    this.openedAt = now;
    return true;
  }
}
