/**
 * The mempool watcher (issue 15, "one poll serves every address"): one request of the upstream's
 * global mempool list per poll, `GET /extended/v1/tx/mempool?limit=50` with If-None-Match on its
 * mempool ETag, at the tip poll's cadence. What each poll finds, compared with the poll before,
 * goes to the activity registry (activity.ts `mempoolPolled`):
 *   - 304: the mempool is the same, anywhere (the ETag is a digest of every pending tx id);
 *   - 200 holding the whole mempool after a poll that held it too: the transactions that came or
 *     went, and so exactly which principals' pending lists changed (every principal-shaped string
 *     of those transactions: touched-principals.ts), and which of them sent those transactions or
 *     are what the mempool list files them under (tx-roles.ts). A mempool larger than one page is read in
 *     pages (`?limit=50&offset=…`, at most `maxPages` requests a poll), each of which must carry
 *     the first page's ETag: the upstream's mempool ETag is a digest of every pending tx id, so
 *     the same ETag means the pages are of one and the same mempool;
 *   - anything else (the first poll, a mempool larger than maxPages pages, pages of different
 *     mempools, an answer not understood): changed, in ways not known: every mempool entry
 *     validated before it is on its TTL again.
 * A failed poll leaves the registry as it was: the next poll compares with the last one that
 * answered, and until one does the watcher's word ages out (policy.ts rule (d) takes it only
 * while the latest poll started within the mempool TTL).
 */
import type { Clock } from '../clock.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { UpstreamRequest, UpstreamResponse } from '../upstream/client.js';
import { parseBoundedJson } from '../upstream/bounded-json.js';
import type { PrincipalActivity } from './activity.js';
import { collectPrincipals } from './touched-principals.js';
import { txRoles, type TxRoles } from './tx-roles.js';

/** The upstream's largest page of its mempool list. */
export const MEMPOOL_PAGE = 50;
const PATH = `/extended/v1/tx/mempool?limit=${MEMPOOL_PAGE}`;

export interface MempoolSource {
  getFrom(origin: string, request: UpstreamRequest): Promise<UpstreamResponse>;
}

/** The pending transactions of a whole-mempool answer, by id, with the principals each names (and in which roles). */
type MempoolSet = Map<string, TxNames>;
interface TxNames extends TxRoles {
  principals: string[];
}

export class MempoolWatcher {
  private etag: string | undefined;
  /** The last answer's transactions, when it held the whole mempool. */
  private known: MempoolSet | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly deps: {
      source: MempoolSource;
      /** The upstream to watch: the one answering reads (the watcher runs only with a single upstream). */
      origin: string;
      /** Where each poll's finding goes: the registry (and, on worker mode's tip leader, the followers too). */
      activity: Pick<PrincipalActivity, 'mempoolPolled'>;
      intervalMs: number;
      /** Requests one poll may make to read a mempool larger than one page (activity.watcherMaxPages). */
      maxPages: number;
      clock: Clock;
      telemetry: Telemetry;
    },
  ) {}

  start(): void {
    this.schedule();
  }

  /** No more polls; one in flight is not waited for (the upstream client's close ends it). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.pollOnce().then(() => this.schedule()), this.deps.intervalMs);
    this.timer.unref();
  }

  /** One poll (joining one in flight). Never throws. */
  pollOnce(): Promise<void> {
    this.polling ??= this.poll()
      .catch(() => undefined)
      .finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async poll(): Promise<void> {
    const { source, origin, activity, clock, telemetry } = this.deps;
    const startedAt = clock();
    telemetry.activityUpstreamRequest('watcher');
    const headers: Record<string, string> = this.etag ? { 'if-none-match': this.etag } : {};
    const response = await source.getFrom(origin, { path: PATH, route: 'mempool_watcher', headers, purpose: 'mempool_watcher' });
    const endedAt = clock();
    if (response.status === 304 && this.etag !== undefined) {
      activity.mempoolPolled({ kind: 'unchanged', startedAt, endedAt });
      return;
    }
    if (response.status !== 200) return;
    const etag = response.headers.etag;
    // Whatever pages were read, whole mempool or not, hold transactions the upstream's API has.
    const seenTxIds: string[] = [];
    const current = await this.readWhole(parseBoundedJson(response.body), etag, seenTxIds);
    const previous = this.known;
    this.known = current;
    // Kept even when the set is not known: a 304 on it still means "the same mempool".
    this.etag = etag?.startsWith('"') ? etag : undefined;
    if (!current || !previous) {
      activity.mempoolPolled({ kind: 'unknown', seenTxIds, startedAt, endedAt });
      return;
    }
    activity.mempoolPolled({ kind: 'changed', ...changedPrincipals(previous, current), seenTxIds, startedAt, endedAt });
  }

  /**
   * The whole mempool from its first page, reading the next ones when it holds more (up to
   * maxPages requests in all, each counted); undefined when it cannot be read whole and of one
   * mempool (a strong ETag on every page, the same as the first's).
   */
  private async readWhole(first: unknown, etag: string | undefined, seenTxIds: string[]): Promise<MempoolSet | undefined> {
    const { source, origin, telemetry, maxPages } = this.deps;
    const set: MempoolSet = new Map();
    if (!addPage(set, first)) return undefined;
    seenTxIds.push(...set.keys());
    const total = totalOf(first);
    if (total === undefined) return undefined;
    if (set.size >= total) return set.size === total ? set : undefined;
    if (!etag?.startsWith('"') || Math.ceil(total / MEMPOOL_PAGE) > maxPages) return undefined;
    for (let offset = MEMPOOL_PAGE; set.size < total; offset += MEMPOOL_PAGE) {
      telemetry.activityUpstreamRequest('watcher');
      const page = await source.getFrom(origin, { path: `${PATH}&offset=${offset}`, route: 'mempool_watcher', purpose: 'mempool_watcher' });
      const json = page.status === 200 && page.headers.etag === etag ? parseBoundedJson(page.body) : undefined;
      const before = set.size;
      // A page of another mempool, a total that moved, or a page that adds nothing new: not one whole mempool.
      // Its transactions are seen only when it is of the first page's mempool (its ETag).
      if (totalOf(json) !== total || !addPage(set, json) || set.size === before) return undefined;
      for (const id of [...set.keys()].slice(before)) seenTxIds.push(id);
    }
    return set.size === total ? set : undefined;
  }
}

function totalOf(answer: unknown): number | undefined {
  const total = (answer as { total?: unknown } | null)?.total;
  return typeof total === 'number' && Number.isSafeInteger(total) && total >= 0 ? total : undefined;
}

/** Adds a page's transactions (by id, with the principals each names); false for a page not understood. */
function addPage(set: MempoolSet, answer: unknown): boolean {
  const results = (answer as { results?: unknown } | null)?.results;
  if (!Array.isArray(results)) return false;
  for (const tx of results as { tx_id?: unknown }[]) {
    if (typeof tx?.tx_id !== 'string') return false;
    const principals = new Set<string>();
    collectPrincipals(tx, principals);
    set.set(tx.tx_id, { principals: [...principals], ...txRoles(tx, principals) });
  }
  return true;
}

/** The principals of the transactions that came or went, and those of them in each role. */
function changedPrincipals(previous: MempoolSet, current: MempoolSet): { principals: Set<string>; senders: Set<string>; listed: Set<string> } {
  const changed = { principals: new Set<string>(), senders: new Set<string>(), listed: new Set<string>() };
  const add = (names: TxNames): void => {
    for (const p of names.principals) changed.principals.add(p);
    for (const p of names.senders) changed.senders.add(p);
    for (const p of names.listed) changed.listed.add(p);
  };
  for (const [id, names] of current) if (!previous.has(id)) add(names);
  for (const [id, names] of previous) if (!current.has(id)) add(names);
  return changed;
}
