/**
 * The reorgs the proxy has seen, in time order, bounded without forgetting: when it is full
 * the two oldest records merge into one that is at least as strict (latest time, lowest
 * fork), so nothing they made suspect becomes trusted again. Pure.
 */
import type { ReorgRecord } from './view.js';

const REORG_RECORDS_KEPT = 256;

export class ReorgLog {
  private readonly records: ReorgRecord[] = [];

  constructor(private readonly limit = REORG_RECORDS_KEPT) {}

  add(record: ReorgRecord): void {
    this.records.push(record);
    while (this.records.length > this.limit) {
      const [first, second] = this.records.splice(0, 2) as [ReorgRecord, ReorgRecord];
      this.records.unshift({ at: Math.max(first.at, second.at), forkHeight: Math.min(first.forkHeight, second.forkHeight) });
    }
  }

  /** A copy: views handed out must not change under their holders. */
  list(): ReorgRecord[] {
    return [...this.records];
  }
}
