/**
 * Admin purges, coalesced. Every purge empties entries that the next requests must fetch from
 * the upstream again, so a storm of purges (a script purging everything every 20 ms) would send
 * most client traffic upstream. Purges are therefore carried out in batches, at most one batch
 * per window:
 *
 * - a purge that finds no batch running and no window open is carried out at once (a lone purge
 *   waits for nothing);
 * - purges that arrive while a batch runs, or within `coalesceMs` after it ended, wait together
 *   for the next batch, which starts when that window closes;
 * - within a batch, purges with the same selector are carried out once, and `all` subsumes every
 *   other selector; different selectors are carried out one after the other.
 *
 * So each key is purged at most once per batch, and a storm costs the upstream at most one
 * refetch per key per window. The guarantee a purge's answer gives is kept: it is answered only
 * once a purge that started after it arrived has been carried out (a batch that is already
 * running when a purge arrives is never joined: it may have passed the entries already).
 */
import type { PurgeSelector } from './purge.js';
import type { PurgeOutcome } from './purger.js';
import { noopTelemetry, type Telemetry } from '../telemetry/telemetry.js';

export interface CoalescedOutcome extends PurgeOutcome {
  /** What was carried out: the selector asked for, or `all` when an `all` in the same batch subsumed it. */
  applied: PurgeSelector;
  /** Whether this purge shared its application with other purges of the batch. */
  coalesced: boolean;
}

interface Waiter {
  resolve: (outcome: CoalescedOutcome) => void;
  reject: (error: unknown) => void;
}

/** One selector of a batch, and every purge request waiting for it. */
interface BatchEntry {
  selector: PurgeSelector;
  waiters: Waiter[];
}

// Selectors are small plain JSON (purge.ts) built by one parser in one key order: equal purges stringify alike.
const selectorKey = (selector: PurgeSelector): string => JSON.stringify(selector);

export class PurgeCoalescer {
  private pending = new Map<string, BatchEntry>();
  /** A batch is running, or the window after it is still open. */
  private busy = false;
  private readonly telemetry: Telemetry;

  constructor(
    private readonly deps: {
      /** Carries out one purge (Purger.purge). */
      apply: (selector: PurgeSelector) => Promise<PurgeOutcome>;
      /** cache.purge.coalesceMs: the window after a batch during which purges wait for the next one. */
      coalesceMs: number;
      telemetry?: Telemetry;
    },
  ) {
    this.telemetry = deps.telemetry ?? noopTelemetry;
  }

  purge(selector: PurgeSelector): Promise<CoalescedOutcome> {
    this.telemetry.purgeRequested(selector.kind);
    const outcome = new Promise<CoalescedOutcome>((resolve, reject) => {
      const key = selectorKey(selector);
      const entry = this.pending.get(key);
      if (entry) entry.waiters.push({ resolve, reject });
      else this.pending.set(key, { selector, waiters: [{ resolve, reject }] });
    });
    if (!this.busy) void this.runBatch();
    return outcome;
  }

  private async runBatch(): Promise<void> {
    this.busy = true;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    const all = batch.find((entry) => entry.selector.kind === 'all');
    // 'all' removes whatever any other selector would: the batch is that one purge.
    const applications = all ? [{ selector: all.selector, waiters: batch.flatMap((entry) => entry.waiters) }] : batch;
    for (const { selector, waiters } of applications) {
      // One request is answered by this application as its own; the others were coalesced into it.
      if (waiters.length > 1) this.telemetry.purgesCoalesced(waiters.length - 1);
      try {
        const outcome = await this.deps.apply(selector);
        for (const waiter of waiters) waiter.resolve({ ...outcome, applied: selector, coalesced: waiters.length > 1 });
      } catch (error) {
        for (const waiter of waiters) waiter.reject(error);
      }
    }
    const timer = setTimeout(() => this.windowClosed(), this.deps.coalesceMs);
    // A pending purge holds an HTTP request open, which keeps the process alive on its own.
    timer.unref();
  }

  private windowClosed(): void {
    this.busy = false;
    if (this.pending.size > 0) void this.runBatch();
  }
}
