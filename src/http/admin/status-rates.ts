/**
 * Rates (per second) of ever-growing counters, from samples taken inside the process: each read
 * of the status page records the counters' totals, and a rate is the growth between the oldest
 * and the newest sample within the window. Nothing runs between reads (no timer to stop), so the
 * first read after a quiet spell has no rate yet (null) and the page shows one from its next
 * refresh. Bounded: samples closer than MIN_GAP_MS to the previous one replace it, and samples
 * older than the window are dropped, so at most windowMs / MIN_GAP_MS + 1 are kept however
 * often it is read. A counter that went down (a restart of what it counts) starts over. Pure:
 * time comes in with each sample.
 */

export interface RateSettings {
  /** How far back a rate looks (ms). */
  windowMs: number;
}

/** Samples closer together than this replace one another (many viewers refresh at once). */
export const MIN_GAP_MS = 250;

interface Sample {
  at: number;
  totals: ReadonlyMap<string, number>;
}

export class CounterRates {
  private samples: Sample[] = [];

  constructor(private readonly settings: RateSettings) {}

  /**
   * Records the counters' totals at `at` and returns each one's rate per second over the window,
   * null for a counter without an earlier sample in the window to compare with.
   */
  sample(at: number, totals: Record<string, number>): Record<string, number | null> {
    const current: Sample = { at, totals: new Map(Object.entries(totals)) };
    const last = this.samples.at(-1);
    // A clock that went back: what was sampled cannot be compared with now.
    if (last !== undefined && at < last.at) this.samples = [];
    if (last !== undefined && at >= last.at && at - last.at < MIN_GAP_MS && this.samples.length > 1) this.samples.pop();
    this.samples.push(current);
    while (this.samples.length > 1 && at - (this.samples[0] as Sample).at > this.settings.windowMs) this.samples.shift();
    return this.rates(current);
  }

  private rates(current: Sample): Record<string, number | null> {
    const rates: Record<string, number | null> = {};
    for (const [name, total] of current.totals) rates[name] = this.rateOf(name, total, current.at);
    return rates;
  }

  /** Growth per second since the oldest sample in the window that holds the counter, before a restart. */
  private rateOf(name: string, total: number, at: number): number | null {
    let base: Sample | undefined;
    // Newest to oldest: stop at a decrease (the counter restarted after it).
    let later = total;
    for (let i = this.samples.length - 2; i >= 0; i--) {
      const sample = this.samples[i] as Sample;
      const value = sample.totals.get(name);
      if (value === undefined || value > later) break;
      base = sample;
      later = value;
    }
    if (base === undefined || at <= base.at) return null;
    return (total - (base.totals.get(name) as number)) / ((at - base.at) / 1000);
  }
}
