/**
 * What the operator's status page needs beyond the metric samples (src/http/admin/status-*.ts):
 * each upstream's last failure (its text, which the metrics' bounded labels cannot carry), the
 * last failed tip poll, and client requests by freshness class and cache result. Kept here
 * because telemetry already hears every one of these events. Bounded: one record per upstream
 * (origins come from the configuration; at most MAX_UPSTREAMS are kept), texts cut to
 * MAX_TEXT_CHARS, class and cache values are the proxy's own few.
 */
import { cellTree } from './label-children.js';
import { cutText } from '../cut-text.js';

export interface FailureRecord {
  /** The failure kind (timeout, connect, 5xx, ...). */
  kind: string;
  /** As the proxy worded it; may hold text an upstream chose. Whoever shows it must escape it. */
  message: string;
  /** The route id or request kind that failed (chain_tip, passthrough, ...). */
  route: string;
  /** Clock time (ms). */
  at: number;
}

export interface ClassCount {
  cls: string;
  cache: string;
  count: number;
}

export interface PurgeRecord {
  at: number;
  /** The selector's kind (keys, route, tx, principal, block, all). */
  kind: string;
  /** admin: asked of this instance; peer: announced by another instance and applied here. */
  origin: string;
  removed: { memory: number; redis: number | null };
}

export interface ReorgEvent {
  at: number;
  forkHeight: number;
  from: { height: number; burnHeight: number };
  to: { height: number; burnHeight: number };
}

const MAX_UPSTREAMS = 64;
/** Recent purges and reorgs kept for the page (the counters count them all). */
export const RECENT_KEPT = 20;
const MAX_TEXT_CHARS = 500;

const cut = (text: string): string => cutText(text, MAX_TEXT_CHARS);

export class StatusRecord {
  private readonly failures = new Map<string, FailureRecord>();
  private tipPoll: { message: string; at: number; upstream?: string } | undefined;
  private readonly classCells: Array<ClassCount> = [];
  private readonly classCell = cellTree(2, (values): ClassCount => {
    const cell = { cls: values[0] as string, cache: values[1] as string, count: 0 };
    this.classCells.push(cell);
    return cell;
  });

  private readonly purges: PurgeRecord[] = [];
  private readonly reorgs: ReorgEvent[] = [];

  constructor(private readonly now: () => number) {}

  purged(kind: string, origin: string, removed: { memory: number; redis: number | null }): void {
    keepRecent(this.purges, { at: this.now(), kind: cut(kind), origin: cut(origin), removed: { ...removed } });
  }

  reorgDetected(forkHeight: number, from: { height: number; burnHeight: number }, to: { height: number; burnHeight: number }): void {
    keepRecent(this.reorgs, {
      at: this.now(),
      forkHeight,
      from: { height: from.height, burnHeight: from.burnHeight },
      to: { height: to.height, burnHeight: to.burnHeight },
    });
  }

  /** Newest first. */
  recentPurges(): PurgeRecord[] {
    return this.purges.map((p) => ({ ...p, removed: { ...p.removed } })).reverse();
  }

  /** Newest first. */
  recentReorgs(): ReorgEvent[] {
    return this.reorgs.map((r) => ({ ...r })).reverse();
  }

  upstreamFailed(upstream: string, route: string, error: { kind: string; message: string }): void {
    if (!this.failures.has(upstream) && this.failures.size >= MAX_UPSTREAMS) return;
    this.failures.set(upstream, { kind: cut(error.kind), message: cut(error.message), route: cut(route), at: this.now() });
  }

  /** A failed tip poll; an error that names its upstream (an UpstreamError) counts as that upstream's failure too. */
  tipPollFailed(error: unknown): void {
    const message = cut(error instanceof Error ? error.message : String(error));
    const { upstream, kind } = (error ?? {}) as { upstream?: unknown; kind?: unknown };
    const named = typeof upstream === 'string' && upstream !== 'none' ? upstream : undefined;
    this.tipPoll = { message, at: this.now(), upstream: named };
    if (named !== undefined) this.upstreamFailed(named, 'chain_tip', { kind: typeof kind === 'string' ? kind : 'invalid', message });
  }

  requestServed(cls: string | undefined, cache: string): void {
    this.classCell([cls ?? 'none', cache]).count++;
  }

  /** Each upstream's last failure, by origin (copies). */
  lastFailures(): Record<string, FailureRecord> {
    return Object.fromEntries([...this.failures].map(([origin, failure]) => [origin, { ...failure }]));
  }

  lastTipPollFailure(): { message: string; at: number; upstream?: string } | undefined {
    return this.tipPoll;
  }

  classCounts(): ClassCount[] {
    return this.classCells.map((c) => ({ ...c }));
  }
}

function keepRecent<T>(list: T[], item: T): void {
  list.push(item);
  if (list.length > RECENT_KEPT) list.shift();
}
