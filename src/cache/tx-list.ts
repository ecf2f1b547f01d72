/**
 * `/extended/v1/tx/multiple` built from one entry per transaction (tx-member.ts): each id is
 * looked up on its own (an entry /tx/{id} stored serves too), only the missing ids go
 * upstream (one request), each answer is stored under its own class, and the list is
 * reassembled in the upstream's order from the stored bytes.
 *
 * Upstream order (searchTxs): canonical mined txs (database order, which follows block
 * height), then mempool txs, then not-found ids as requested. Keys are lowercase tx ids for
 * found entries and the id as requested for missing ones.
 */
import type { Clock } from '../clock.js';
import type { BlockRef, ChainView } from '../chain/view.js';
import type { RouteSpec } from '../routes/route-spec.js';
import { serializeQuery, type CanonicalRequest } from '../routes/validate.js';
import type { UpstreamClient, UpstreamResponse } from '../upstream/client.js';
import { admitList, bodyEtag, passOn, type ListAdmission, type Snapshot } from './admit.js';
import type { CacheEntry } from './entry.js';
import { listMemberKey, transactionKey } from './key.js';
import { weakest, type Classification } from './policy.js';
import { CacheLookups } from './lookup.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { ReadContext, ReadResult } from './read-path.js';
import type { Decider } from './decider.js';
import { askAndAdmit } from './upstream-exchange.js';
import { SingleFlight } from './single-flight.js';
import type { TieredStore } from './tiered-store.js';
import { memberText, servesListMember, servesTransaction } from './tx-member.js';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

interface Fetched {
  response: UpstreamResponse;
  admission: Exclude<ListAdmission, { kind: 'failure' }>;
  upstreamSeconds: number;
}

interface Item {
  id: string;
  entry: CacheEntry;
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
  const members = orderItems(items).map(({ id, entry }) => `${JSON.stringify(id)}:${memberText(entry)}`);
  return Buffer.from(`{${members.join(',')}}`, 'utf8');
}

export interface TxListDeps {
  store: TieredStore;
  upstream: UpstreamClient;
  chain: () => ChainView;
  /** THE decision (decider.ts): a member is served only when it would be served for /tx/{id}. */
  decider: Decider;
  keyPrefix: string;
  clock: Clock;
  /** Headers a /tx/{id} answer carries that a list does not (its deprecation Warning): found members serve /tx/{id} too. */
  transactionHeaders: Record<string, string>;
  /** Reads a list the upstream must answer whole, as one entry for the request (the single reader). */
  readWhole(route: RouteSpec, request: CanonicalRequest, context: ReadContext): Promise<ReadResult>;
  telemetry: Telemetry;
  /** Checks that a block is the canonical one at its height (see ReadPathDeps.verifyCanonical). */
  verifyCanonical?: (block: BlockRef) => Promise<void>;
}

export class TxListReader {
  private readonly flights = new SingleFlight<Fetched>();
  private readonly lookups: CacheLookups;
  /** The proxy's own reads' lookups (the warm-up): decided alike, counted nowhere. */
  private readonly ownLookups: CacheLookups;

  constructor(private readonly deps: TxListDeps) {
    this.lookups = new CacheLookups(deps, false);
    this.ownLookups = new CacheLookups(deps, false, false);
  }

  async read(route: RouteSpec, request: CanonicalRequest, context: ReadContext = {}): Promise<ReadResult> {
    const ids = [...new Set(request.values.tx_id as string[])];
    const itemQuery = new Map(request.query);
    itemQuery.delete('tx_id');
    const queryText = serializeQuery(itemQuery);
    // A mixed-case id makes the upstream answer twice for one tx (found lowercase, missing
    // as requested); such lists are fetched whole rather than composed.
    if (ids.some((id) => id !== id.toLowerCase())) return this.deps.readWhole(route, request, context);

    const cached = await this.lookup(ids, queryText, context.own ? this.ownLookups : this.lookups);
    const missing = ids.filter((id) => !cached.has(id));
    if (missing.length === 0) return this.compose(ids, cached, 'HIT');

    const forwarded = new Map(request.forwardedQuery);
    forwarded.delete('tx_id');
    const { response, admission, upstreamSeconds } = await this.fetchMissing(
      route,
      missing,
      { canonical: queryText, forwarded: serializeQuery(forwarded) },
      context,
    );
    // admitList made sure the answer holds exactly the missing ids: nothing else is stored.
    if (admission.kind === 'pass-on') return { cacheStatus: 'BYPASS', passed: admission.passed, upstreamSeconds };
    for (const [id, entry] of admission.members) {
      cached.set(id, entry);
      void this.deps.store.set(this.keyOf(id, queryText, entry), entry);
    }
    // Every id fetched at once: the upstream's bytes are the answer as they are.
    if (missing.length === ids.length) return { ...this.result(response.body, cached, ids, 'MISS'), upstreamSeconds };
    return { ...this.compose(ids, cached, 'MISS'), upstreamSeconds };
  }

  /** Where a member is kept: at the transaction's key when /tx/{id} can serve it too, else apart. */
  private keyOf(id: string, queryText: string, entry: CacheEntry): string {
    return servesTransaction(entry) ? transactionKey(this.deps.keyPrefix, id, queryText) : listMemberKey(this.deps.keyPrefix, id, queryText);
  }

  /**
   * One lookup per id: the transaction's own entry (also what /tx/{id} stored), else a
   * list-only member; memory first, then the shared tier. A /tx/{id} 404 is that route's own:
   * a list member cannot repeat it byte for byte, so it is passed over.
   */
  private async lookup(ids: string[], queryText: string, lookups: CacheLookups): Promise<Map<string, CacheEntry>> {
    const found = new Map<string, CacheEntry>();
    await Promise.all(
      ids.map(async (id) => {
        const keys = [transactionKey(this.deps.keyPrefix, id, queryText), listMemberKey(this.deps.keyPrefix, id, queryText)];
        let member = lookups.memory(keys, servesListMember);
        if (!member.entry) member = (await lookups.shared(keys, servesListMember)) ?? member;
        if (member.decision.action === 'fresh') found.set(id, member.decision.entry);
      }),
    );
    return found;
  }

  /**
   * One upstream request for the missing ids, shared by concurrent identical lists (alike in
   * their canonical query; the leader's spelling of it is forwarded) of the same activity
   * generation: a list read after a broadcast never shares a fetch sent before it (a pending
   * transaction the old answer did not know yet).
   */
  private fetchMissing(route: RouteSpec, missing: string[], query: { canonical: string; forwarded: string }, context: ReadContext): Promise<Fetched> {
    const list = `/extended/v1/tx/multiple?${serializeQuery(new Map([['tx_id', missing.join(',')]]))}`;
    const withQuery = (text: string) => (text ? `${list}&${text}` : list);
    const path = withQuery(query.forwarded);
    const generation = this.deps.decider.activityGeneration();
    return this.flights.run(
      `${withQuery(query.canonical)}\u0000${generation}`,
      () => this.fetch(route, path, missing, context),
      () => this.deps.telemetry.singleflightJoined(route.id),
    );
  }

  private async fetch(route: RouteSpec, path: string, askedIds: readonly string[], context: ReadContext): Promise<Fetched> {
    // Stamped with the chain and time from before the request: a block landing meanwhile makes it stale.
    const asked: Snapshot = { chain: this.deps.chain(), at: this.deps.clock() };
    // Each attempt's answer is split (and its body parsed) once, here: a malformed one is tried on another upstream.
    const { response, admission: admitted } = await askAndAdmit(
      this.deps.upstream,
      // The client request's id, so the upstream's logs correlate with ours.
      { method: 'GET', path, headers: context.requestId === undefined ? undefined : { 'x-request-id': context.requestId } },
      route.id,
      async (answer) => {
        const admitOnce = () => admitList({ response: answer, asked, askedIds, transactionHeaders: this.deps.transactionHeaders });
        const admission = admitOnce();
        // Members that only wait for their block to be checked: one check per block, then admitted again.
        const verify = this.deps.verifyCanonical;
        if (admission.kind !== 'members' || admission.unverified.size === 0 || !verify) return admission;
        await Promise.all([...admission.unverified.values()].map((block) => verify(block)));
        return admitOnce();
      },
    );
    // A server error (every attempt failed) is not admitted: passed on as the upstream sent it.
    const admission: ListAdmission = admitted ?? passOn(response);
    if (admission.kind === 'failure') throw admission.error;
    if (admission.kind === 'pass-on' && admission.disagreement) {
      const { reason, why } = admission.disagreement;
      this.deps.telemetry.chainDisagreement(route.id, response.upstream, reason, why);
    }
    return { response, admission, upstreamSeconds: (this.deps.clock() - asked.at) / 1000 };
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
    let classification: Classification = { cls: 'final' };
    let validatedAt = this.deps.clock();
    for (const id of ids) {
      const entry = entries.get(id);
      if (!entry) continue;
      classification = weakest(classification, { cls: entry.cls });
      validatedAt = Math.min(validatedAt, entry.validatedAt);
    }
    return {
      cacheStatus,
      entry: { status: 200, body, headers: { 'content-type': JSON_CONTENT_TYPE }, etag: bodyEtag(body), cls: classification.cls, validatedAt },
    };
  }
}
