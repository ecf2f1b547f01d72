/**
 * Block learning (issue 15): for each new canonical tip the tracker believes, which principals
 * its block touched, fed to the activity registry (activity.ts) so that entries about the others
 * stay fresh across the block (learned freshness, cache/policy.ts rule (c)).
 *
 * The cheapest exact source the upstream offers, per block:
 *   1. its transactions, `GET /extended/v2/blocks/{index_block_hash}/transactions?limit=50&offset=…`
 *      (pages of 50 until `total`; at most `learnerMaxTxPages`): each transaction's principals
 *      (every principal-shaped string of its JSON: touched-principals.ts);
 *   2. the events of those with `event_count > 0` (balances move through events: STX, FT and NFT
 *      transfers, mints, burns, stx_lock), `GET /extended/v1/tx/multiple?tx_id=…&event_limit=100`
 *      for 20 transactions at a time (at most `learnerMaxEventRequests` requests).
 * A block whose transactions have no events costs one request. Anything not read in full (a page or event
 * list cut by a cap, an error, an answer about another block, a transaction with more events
 * than one answer carries or without its event_count, JSON nested deeper than the principal scan
 * goes, no transactions at all: the upstream's answer for a block no longer
 * canonical) makes the block's touches unknown: the registry then voids all it
 * learned. Learning restarts on its own at the next tip. Every request is counted
 * (telemetry.activityUpstreamRequest) and sent to the upstream that gave the tip.
 *
 * In worker mode one learner per host asks the upstream (`shared`): the tip leader learns each
 * block and its word goes to the other workers, whose learners take it for the same block (by its
 * index block hash) instead of asking; a follower that has no word from the leader in time (a
 * leader that died, or is slow) learns the block itself.
 */
import type { Clock } from '../clock.js';
import type { Telemetry } from '../telemetry/telemetry.js';
import type { UpstreamRequest, UpstreamResponse } from '../upstream/client.js';
import { parseBoundedJson } from '../upstream/bounded-json.js';
import type { BlockTouches, PrincipalActivity, TipRef } from './activity.js';
import { coinbaseRecipients, collectPrincipals } from './touched-principals.js';
import { txRoles } from './tx-roles.js';

/** Worker mode: one learner per host (cluster/worker-tip-share.ts). */
export interface SharedLearning {
  /** Whether this process learns blocks itself now (the tip leader); a follower waits for the leader's word. */
  learnsItself(): boolean;
  /** The leader: what it learned of a block (and the block's transaction ids, for the warm-up), for the followers. */
  learned(tip: TipRef, touches: BlockTouches, txIds: string[] | undefined): void;
  /** A follower: the leader's word on this block; undefined when none came in time (it then learns the block itself). */
  leaderLearned(tip: TipRef): Promise<{ touches: BlockTouches; txIds: string[] } | undefined>;
}

export interface LearnerSettings {
  maxTxPages: number;
  maxEventRequests: number;
}

/** One request to a named upstream (the upstream client's getFrom). */
export interface LearnSource {
  getFrom(origin: string, request: UpstreamRequest): Promise<UpstreamResponse>;
}

const TX_PAGE = 50;
const EVENTS_PER_TX = 100;
const TXS_PER_EVENT_REQUEST = 20;
/** Blocks learned at once; a tip arriving beyond it is unknown (learning restarts). */
const LEARNING_AT_ONCE = 4;
const HASH = /^0x[0-9a-f]{64}$/;

class Unknown extends Error {
  override name = 'Unknown';
}

interface TxJson {
  tx_id?: unknown;
  canonical?: unknown;
  block_height?: unknown;
  event_count?: unknown;
  events?: unknown;
}

export class BlockLearner {
  private inFlight = 0;

  constructor(
    private readonly deps: {
      source: LearnSource;
      activity: PrincipalActivity;
      settings: LearnerSettings;
      clock: Clock;
      telemetry: Telemetry;
      /** Told the ids of a block's transactions once read in full (the warm-up asks for them: live/block-warmer.ts). */
      onTransactions?: (tip: TipRef, txIds: unknown[]) => void;
      /** Worker mode: the tip leader learns for the host. */
      shared?: SharedLearning;
    },
  ) {}

  /**
   * The tracker's hook: a new believed tip from `origin`. Tells the registry at once (in the
   * tracker's turn), then learns the block in the background. Never throws.
   */
  onTip(tip: TipRef, origin: string, reorg: boolean): void {
    const { activity, telemetry, clock } = this.deps;
    const outcome = activity.tipChanged(tip, reorg, clock());
    if (outcome.kind === 'void') {
      telemetry.blockLearned(outcome.why);
      return;
    }
    // Counted apart: what was learned of principals' state is void; the block is learned all the same.
    if (outcome.burnBlock) telemetry.blockLearned('burn_block');
    if (this.inFlight >= LEARNING_AT_ONCE) {
      this.settle(tip, outcome.epoch, { kind: 'unknown', why: 'too many blocks being learned at once' });
      return;
    }
    this.inFlight += 1;
    this.learn(tip, origin)
      .then((touches) => this.settle(tip, outcome.epoch, touches))
      .finally(() => (this.inFlight -= 1));
  }

  /** The block's touches: the leader's word (a follower in worker mode), or read from the upstream. Never rejects. */
  private async learn(tip: TipRef, origin: string): Promise<BlockTouches> {
    const shared = this.deps.shared;
    if (shared && !shared.learnsItself()) {
      const word = await shared.leaderLearned(tip).catch(() => undefined);
      if (word) {
        if (word.touches.kind === 'known') this.tellTransactions(tip, word.txIds);
        return word.touches;
      }
    }
    let txIds: string[] | undefined;
    const touches = await this.touchesOf(tip, origin, (ids) => (txIds = ids)).catch((error: unknown): BlockTouches => ({
      kind: 'unknown',
      why: error instanceof Error ? error.message : String(error),
    }));
    if (shared?.learnsItself()) shared.learned(tip, touches, txIds);
    return touches;
  }

  private tellTransactions(tip: TipRef, txIds: string[]): void {
    try {
      this.deps.onTransactions?.(tip, txIds);
    } catch {
      // The warm-up's fault is not the learner's.
    }
  }

  private settle(tip: TipRef, epoch: number, touches: BlockTouches): void {
    const outcome = this.deps.activity.blockLearned(tip, epoch, touches, this.deps.clock());
    this.deps.telemetry.blockLearned(outcome, touches.kind === 'unknown' ? touches.why : undefined);
  }

  private async get(origin: string, path: string): Promise<unknown> {
    this.deps.telemetry.activityUpstreamRequest('learner');
    const response = await this.deps.source.getFrom(origin, { path, route: 'activity_learner', purpose: 'block_learner' });
    if (response.status !== 200) throw new Unknown(`${path} answered ${response.status}`);
    const json = parseBoundedJson(response.body);
    if (json === undefined) throw new Unknown(`${path} answered no JSON`);
    return json;
  }

  /** `readAll`: told the block's transaction ids once they are read in full. */
  private async touchesOf(tip: TipRef, origin: string, readAll: (txIds: string[]) => void): Promise<BlockTouches> {
    if (!HASH.test(tip.indexBlockHash)) throw new Unknown('the tip has no index block hash to ask by');
    const txs = await this.transactions(tip, origin);
    const txIds = txs.map((tx) => tx.tx_id as string);
    readAll(txIds);
    this.tellTransactions(tip, txIds);
    const principals = new Set<string>();
    const coinbase = new Set<string>();
    const senderPrincipals = new Set<string>();
    const listedPrincipals = new Set<string>();
    for (const tx of txs) {
      const named = new Set<string>();
      if (!collectPrincipals(tx, named)) throw new Unknown(`transaction ${String(tx.tx_id)} nests deeper than the learner reads`);
      for (const principal of named) principals.add(principal);
      // Nonces and mempool lists move with a transaction's own fields; its events name only recipients of value.
      const roles = txRoles(tx, named);
      for (const principal of roles.senders) senderPrincipals.add(principal);
      for (const principal of roles.listed) listedPrincipals.add(principal);
      for (const recipient of coinbaseRecipients(tx)) coinbase.add(recipient);
    }
    const tokenPrincipals = new Set<string>();
    await this.events(txs, origin, principals, tokenPrincipals);
    return { kind: 'known', principals, coinbaseRecipients: coinbase, tokenPrincipals, senderPrincipals, listedPrincipals };
  }

  /** Every transaction of the block, each checked to be in it (canonical, at its height). */
  private async transactions(tip: TipRef, origin: string): Promise<TxJson[]> {
    const txs: TxJson[] = [];
    for (let page = 0; ; page++) {
      if (page >= this.deps.settings.maxTxPages) throw new Unknown(`more than ${page} pages of transactions`);
      const path = `/extended/v2/blocks/${tip.indexBlockHash}/transactions?limit=${TX_PAGE}&offset=${page * TX_PAGE}`;
      const answer = (await this.get(origin, path)) as { total?: unknown; results?: unknown } | null;
      const results = answer?.results;
      if (typeof answer?.total !== 'number' || !Array.isArray(results)) throw new Unknown(`${path}: not a page of transactions`);
      for (const tx of results as TxJson[]) {
        if (tx?.canonical !== true || tx.block_height !== tip.height) throw new Unknown(`${path}: a transaction not in block ${tip.height}`);
        // Without its count, whether a transaction has events (where balances move) is not known: not "none".
        if (!Number.isSafeInteger(tx.event_count) || (tx.event_count as number) < 0) throw new Unknown(`${path}: a transaction without its event_count`);
        txs.push(tx);
      }
      // Every block holds a transaction (a coinbase or tenure change at least): an empty answer is
      // the upstream's for a block that is no longer canonical, not an empty block.
      if (answer.total === 0) throw new Unknown(`${path}: no transactions (the block is not canonical any more)`);
      if (txs.length >= answer.total) return txs;
      if (results.length === 0) throw new Unknown(`${path}: a page short of the total`);
    }
  }

  /** The principals the events of the block's transactions name (tx/multiple carries them inline). */
  private async events(txs: readonly TxJson[], origin: string, into: Set<string>, tokensInto: Set<string>): Promise<void> {
    const withEvents = txs.filter((tx) => (tx.event_count as number) > 0);
    if (withEvents.length === 0) return;
    const requests = Math.ceil(withEvents.length / TXS_PER_EVENT_REQUEST);
    if (requests > this.deps.settings.maxEventRequests)
      throw new Unknown(`events of ${withEvents.length} transactions take more than ${this.deps.settings.maxEventRequests} requests`);
    for (let i = 0; i < withEvents.length; i += TXS_PER_EVENT_REQUEST) {
      const batch = withEvents.slice(i, i + TXS_PER_EVENT_REQUEST);
      const ids = batch.map((tx) => {
        if (typeof tx.tx_id !== 'string' || !HASH.test(tx.tx_id)) throw new Unknown('a transaction without a well-formed tx_id');
        return tx.tx_id;
      });
      const query = ids.map((id) => `tx_id=${id}`).join('&');
      const answer = (await this.get(origin, `/extended/v1/tx/multiple?${query}&event_limit=${EVENTS_PER_TX}`)) as Record<string, unknown> | null;
      batch.forEach((tx, n) => {
        const member = answer?.[ids[n] as string] as { found?: unknown; result?: TxJson } | undefined;
        const events = member?.found === true ? member.result?.events : undefined;
        if (!Array.isArray(events) || events.length < (tx.event_count as number)) throw new Unknown(`events of ${ids[n]} not read in full`);
        if (!collectPrincipals(events, into)) throw new Unknown(`events of ${ids[n]} nest deeper than the learner reads`);
        // Token balances move only through events; every event but an STX one counts (an unknown type too).
        for (const event of events as unknown[]) if (!isStxEvent(event)) collectPrincipals(event, tokensInto);
      });
    }
  }
}

/** An STX transfer, mint, burn or lock event: it moves STX only, never a token balance. */
function isStxEvent(event: unknown): boolean {
  const type = (event as { event_type?: unknown } | null)?.event_type;
  return type === 'stx_asset' || type === 'stx_lock';
}
