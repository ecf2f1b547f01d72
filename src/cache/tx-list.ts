/**
 * `/extended/v1/tx/multiple` built from per-transaction entries: each id is looked up on
 * its own, only the missing ids go upstream (one request), each answer is stored under its
 * own class, and the list is reassembled in the upstream's order from the stored bytes.
 *
 * Upstream order (searchTxs): canonical mined txs (database order, which follows block
 * height), then mempool txs, then not-found ids as requested. Keys are lowercase tx ids for
 * found entries and the id as requested for missing ones.
 */
import type { RouteSpec } from '../routes/route-spec.js';
import { serializeQuery, type CanonicalRequest } from '../routes/validate.js';
import { UpstreamError } from '../upstream/errors.js';
import type { UpstreamResponse } from '../upstream/client.js';
import { txListItemKey } from './key.js';
import type { CacheEntry, FreshnessClass } from './entry.js';
import { classifyTransaction, evaluate, type Classification } from './policy.js';
import { assertWellFormed, bodyEtag, type ReadResult, type ReadThrough, type ReadThroughDeps, type Snapshot } from './read-through.js';
import { scanObjectMembers } from './json-object-scan.js';
import { SingleFlight } from './single-flight.js';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
const CLASS_RANK: Record<FreshnessClass, number> = { mempool: 0, tip: 1, final: 2 };

interface Item {
  id: string;
  entry: CacheEntry;
}

interface ListMember {
  found?: boolean;
  result?: { tx_status?: string; block_height?: number };
}

/** Orders items like the upstream: mined by height (stable), then mempool, then not found. */
export function orderItems(items: Item[]): Item[] {
  const group = (item: Item): number => {
    const meta = item.entry.listItem;
    if (!meta?.found) return 2;
    return meta.minedHeight === undefined ? 1 : 0;
  };
  return items
    .map((item, index) => ({ item, index }))
    .sort((a, b) => {
      const byGroup = group(a.item) - group(b.item);
      if (byGroup !== 0) return byGroup;
      const heightA = a.item.entry.listItem?.minedHeight ?? 0;
      const heightB = b.item.entry.listItem?.minedHeight ?? 0;
      return heightA - heightB || a.index - b.index;
    })
    .map(({ item }) => item);
}

export function composeList(items: Item[]): Buffer {
  const members = orderItems(items).map(({ id, entry }) => `${JSON.stringify(id)}:${entry.body.toString('utf8')}`);
  return Buffer.from(`{${members.join(',')}}`, 'utf8');
}

export class TxListReader {
  private readonly flights = new SingleFlight<UpstreamResponse>();
  private readonly now: () => number;

  constructor(
    private readonly deps: ReadThroughDeps,
    private readonly readThrough: ReadThrough,
  ) {
    this.now = deps.now ?? Date.now;
  }

  async read(route: RouteSpec, request: CanonicalRequest): Promise<ReadResult> {
    const ids = [...new Set(request.values.tx_id as string[])];
    const itemQuery = new Map(request.query);
    itemQuery.delete('tx_id');
    const queryText = serializeQuery(itemQuery);
    // A mixed-case id makes the upstream answer twice for one tx (found lowercase, missing
    // as requested); such lists are fetched whole rather than composed.
    if (ids.some((id) => id !== id.toLowerCase())) return this.readThrough.read(route, request);

    const cached = await this.lookup(ids, queryText);
    const missing = ids.filter((id) => !cached.has(id));
    if (missing.length === 0) return this.compose(ids, cached, 'HIT');

    const asked = this.readThrough.snapshot();
    const started = asked.at;
    const response = await this.fetchMissing(route, missing, queryText);
    const upstreamSeconds = (this.now() - started) / 1000;
    if (response.status !== 200) return { ...this.readThrough.bypass(response), upstreamSeconds };
    const fetched = this.admit(response, queryText, asked);
    if (!fetched) throw new UpstreamError('invalid', response.upstream, 'tx/multiple answer is not an object');
    for (const [id, entry] of fetched) cached.set(id, entry);
    // Every id fetched at once: the upstream's bytes are the answer as they are.
    if (missing.length === ids.length) return { ...this.result(response.body, cached, ids, 'MISS'), upstreamSeconds };
    return { ...this.compose(ids, cached, 'MISS'), upstreamSeconds };
  }

  private async lookup(ids: string[], queryText: string): Promise<Map<string, CacheEntry>> {
    const chain = this.deps.chain();
    const found = new Map<string, CacheEntry>();
    await Promise.all(
      ids.map(async (id) => {
        const hit = await this.deps.store.get(txListItemKey(this.deps.keyPrefix, id, queryText));
        if (!hit) return;
        const fresh = evaluate(hit.entry, this.now(), chain, this.deps.ttl) === 'fresh';
        if (hit.tier === 'memory') this.deps.store.countLookup('memory', hit.entry.cls, fresh ? 'hit' : 'miss');
        if (fresh) found.set(id, hit.entry);
      }),
    );
    return found;
  }

  private fetchMissing(route: RouteSpec, missing: string[], queryText: string): Promise<UpstreamResponse> {
    const path = `/extended/v1/tx/multiple?${serializeQuery(new Map([['tx_id', missing.join(',')]]))}${queryText ? `&${queryText}` : ''}`;
    return this.flights.run(
      path,
      () => this.deps.upstream.get({ path, route: route.id, validate: assertWellFormed }),
      () => this.deps.observer?.onJoin?.(route.id),
    );
  }

  /** Splits the upstream's object into members and stores each under its own class. */
  private admit(response: UpstreamResponse, queryText: string, asked: Snapshot): Map<string, CacheEntry> | undefined {
    const members = scanObjectMembers(response.body.toString('utf8'));
    if (!members) return undefined;
    const { chain } = asked;
    const entries = new Map<string, CacheEntry>();
    for (const { key, raw } of members) {
      const member = JSON.parse(raw) as ListMember;
      const tx = member.result ?? {};
      const classification: Classification = member.found ? classifyTransaction(tx, chain) : { cls: 'mempool' };
      const body = Buffer.from(raw, 'utf8');
      const minedHeight = member.found && classification.cls !== 'mempool' ? tx.block_height : undefined;
      const entry: CacheEntry = {
        status: 200,
        body,
        headers: {},
        etag: '',
        ...this.readThrough.stamp(classification, asked),
        listItem: { found: member.found === true, minedHeight },
      };
      entries.set(key, entry);
      void this.deps.store.set(txListItemKey(this.deps.keyPrefix, key, queryText), entry);
    }
    return entries;
  }

  private compose(ids: string[], entries: Map<string, CacheEntry>, cacheStatus: 'HIT' | 'MISS'): ReadResult {
    const items = ids.flatMap((id) => {
      const entry = entries.get(id);
      return entry ? [{ id, entry }] : [];
    });
    return this.result(composeList(items), entries, ids, cacheStatus);
  }

  /** The list answer takes the weakest class of its members and a hash of its bytes as ETag. */
  private result(body: Buffer, entries: Map<string, CacheEntry>, ids: string[], cacheStatus: 'HIT' | 'MISS'): ReadResult {
    let cls: FreshnessClass = 'final';
    let validatedAt = this.now();
    for (const id of ids) {
      const entry = entries.get(id);
      if (!entry) continue;
      if (CLASS_RANK[entry.cls] < CLASS_RANK[cls]) cls = entry.cls;
      validatedAt = Math.min(validatedAt, entry.validatedAt);
    }
    return {
      cacheStatus,
      entry: { status: 200, body, headers: { 'content-type': JSON_CONTENT_TYPE }, etag: bodyEtag(body), cls, validatedAt },
    };
  }
}
