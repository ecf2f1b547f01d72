/**
 * The registry of principals' activity (issue 15) behind `ActivityView`: what the proxy has seen
 * happen to principals beyond the chain tip, kept so the cache policy can tell, per entry,
 * whether the upstream could answer differently now.
 *
 *   - Broadcasts the upstream accepted through the proxy (or announced by another instance):
 *     the principals a transaction names are "changed" from that moment, and the global mempool
 *     with them (`principalChangedAfter`, `mempoolChangedAfter`). A change stays "after" any
 *     validation for `settleMs` more: the upstream's API learns a transaction from its node a
 *     moment after the node accepted it, so an answer fetched in that moment may still be the old
 *     one and must not be kept as fresh.
 *   - The mempool watcher's polls (mempool-watcher.ts): a change it saw naming a principal makes
 *     that principal "changed" from the poll's answer on (no settling: the watcher read the API
 *     itself), any change it saw makes the global mempool changed; a poll that saw none vouches
 *     for the principals' mempool entries (`mempoolUnchangedSince`).
 *   - Blocks: for each new canonical tip, which principals its block touched (block-learner.ts).
 *     `unchangedSince(p, h, at)` is true only while every block above `h` up to the tip was
 *     learned, none touched `p`, and nothing voided the learning since: a reorg, a gap (a block
 *     never seen), a block whose touches could not be read in full. A void forgets everything
 *     learned before it. A burn block voids only what was learned about principals' state (PoX
 *     unlocks change balances without a transaction): answers that move with a principal's
 *     transactions alone (`movesWith: 'transactions'`: its nonces, its pending list) keep it.
 *     Blocks are seen only through the tracker's tip polls: while no poll showed the believed tip
 *     for `watchMs` (every upstream down, or no longer polled), blocks may have come that nobody
 *     read, so nothing counts as unchanged (`isWatching`): what is not known is not "unchanged".
 *
 * Roles (issue 28): each mark is also kept for two narrower roles a principal can have in a
 * transaction, its sender or sponsor (`sent`: what its nonces move with) and what the mempool list
 * files the transaction under (`listed`: what its pending list moves with), told apart by the
 * watcher, the learner and the broadcast decoder (tx-roles.ts); an entry that moves with one of
 * those (`movesWith`) reads that role's marks. A source that does not tell them apart (a
 * broadcast another instance announced, a worker follower's relayed word) marks every role.
 *
 * Bounded memory: at most `maxPrincipals` principals are remembered, the least recently touched
 * evicted first. An evicted principal leaves its marks on two watermarks (latest change, highest
 * touched block) that every principal not remembered inherits: eviction can only make the
 * registry more conservative (an evicted principal counts as changed), never less. Worst case,
 * each remembered principal costs its key (at most 170 characters: an address, ".", a contract
 * name of up to 128) plus a small record and a map slot: about 400 bytes, 40 MB for the default 100,000.
 *
 * Pure state: no I/O, no clock (every method takes the time), no telemetry.
 */
import type { ActivityView, MovesWith } from './activity-view.js';
import { BroadcastSettling } from './broadcast-settling.js';

export interface ActivitySettings {
  /** Principals remembered at most; beyond, the least recently touched is evicted (conservatively). */
  maxPrincipals: number;
  /** How long after a broadcast an answer validated meanwhile is still not fresh (ms). */
  settleMs: number;
  /** Blocks for which a principal a coinbase names counts as touched by every block (matured rewards). */
  coinbaseWindowBlocks: number;
  /**
   * How long the believed tip may go without a tip poll showing it before the chain counts as
   * not watched (ms): the longest a working tracker goes between two answered polls. Blocks are
   * seen only through those polls, so past it blocks may have come that the proxy never saw, and
   * nothing is vouched for as unchanged (`isWatching`).
   */
  watchMs: number;
  /**
   * How many blocks behind the believed tip an answer may be (0 with one upstream, whose answers
   * follow the tip it reported; upstream.maxLagBlocks with several, as a lagging one may answer):
   * an entry stamped at tip h leans on learning only from h - lagBlocks.
   */
  lagBlocks?: number;
}

/** What one poll of the upstream's mempool list found, compared with the poll before (mempool-watcher.ts). */
export type MempoolPoll =
  /** The same mempool (a 304 on its ETag). */
  | { kind: 'unchanged'; startedAt: number; endedAt: number }
  /**
   * Changed, and exactly these principals' pending transactions changed (the whole mempool fit in
   * the answer); `senders` and `listed`: those of them in that role (chain/tx-roles.ts), absent
   * when not told apart (then `principals` stands in).
   */
  | {
      kind: 'changed';
      principals: Iterable<string>;
      senders?: Iterable<string>;
      listed?: Iterable<string>;
      /** The ids of the transactions the poll's answer held (broadcast-settling.ts). */
      seenTxIds?: Iterable<string>;
      startedAt: number;
      endedAt: number;
    }
  /** Changed in ways not known (the first poll, a mempool larger than one answer, an answer not understood). */
  | { kind: 'unknown'; seenTxIds?: Iterable<string>; startedAt: number; endedAt: number };

/** A canonical tip as the tracker believed it. */
export interface TipRef {
  height: number;
  indexBlockHash: string;
  /** 0 when the tip poll did not say (then nothing is known of the burn chain: a void). */
  burnHeight: number;
}

/** What one block touched: its principals (a superset is fine), and those its coinbase credits. */
export type BlockTouches =
  | {
      kind: 'known';
      principals: Iterable<string>;
      coinbaseRecipients: Iterable<string>;
      /**
       * The principals its token events name (a subset of `principals`: every event that is not an
       * STX transfer or lock, whatever its type). Absent: not known apart, so `principals` stands in.
       */
      tokenPrincipals?: Iterable<string>;
      /** The senders and sponsors of its transactions, and what its transactions are listed under (tx-roles.ts); absent: `principals` stands in. */
      senderPrincipals?: Iterable<string>;
      listedPrincipals?: Iterable<string>;
    }
  /** The block's touches could not be read in full (pages, errors, a cap): learning is void. */
  | { kind: 'unknown'; why: string };

/**
 * Why learning was voided, or that a new block is to be learned (`burnBlock`: it starts a new burn
 * block, so what was learned about principals' state before it is void; their transactions' is not).
 */
export type TipOutcome =
  { kind: 'learn'; block: TipRef; epoch: number; burnBlock?: true } | { kind: 'void'; why: 'first' | 'reorg' | 'gap' | 'no_burn_height' | 'same_height' };

export type LearnOutcome = 'learned' | 'unknown' | 'outdated';

/**
 * Who a broadcast names in the narrower roles (tx-roles.ts): its sender and sponsor, and what the
 * mempool list files it under. Absent (a broadcast announced by another instance, a push event):
 * every principal named counts in every role.
 */
export interface BroadcastRoles {
  senders: Iterable<string>;
  listed: Iterable<string>;
}

/**
 * What was seen of one principal. Each of the three marks (latest broadcast, highest touching
 * block, latest mempool poll that saw a change) is kept for any transaction naming it and for
 * the two narrower roles (`sent*`: as sender or sponsor; `listed*`: as what the mempool list
 * files a transaction under), which an answer moving only with that role reads (`movesWith`).
 */
interface PrincipalMarks {
  /** Latest broadcast (or mempool change) that named it, ms. */
  changedAt?: number;
  sentChangedAt?: number;
  listedChangedAt?: number;
  /** Highest learned block that touched it. */
  touchedHeight?: number;
  /** Highest learned block whose token events named it (never above touchedHeight). */
  tokenTouchedHeight?: number;
  sentTouchedHeight?: number;
  listedTouchedHeight?: number;
  /** Latest mempool poll (its answer's arrival, ms) that saw its pending transactions change. */
  mempoolSeenAt?: number;
  sentMempoolSeenAt?: number;
  listedMempoolSeenAt?: number;
}

type Mark = 'changedAt' | 'touchedHeight' | 'mempoolSeenAt';
type Role = 'any' | 'sent' | 'listed';
/** The field of each mark for each role. */
const FIELD: Record<Role, Record<Mark, keyof PrincipalMarks>> = {
  any: { changedAt: 'changedAt', touchedHeight: 'touchedHeight', mempoolSeenAt: 'mempoolSeenAt' },
  sent: { changedAt: 'sentChangedAt', touchedHeight: 'sentTouchedHeight', mempoolSeenAt: 'sentMempoolSeenAt' },
  listed: { changedAt: 'listedChangedAt', touchedHeight: 'listedTouchedHeight', mempoolSeenAt: 'listedMempoolSeenAt' },
};
const NARROW_ROLES = ['sent', 'listed'] as const;

function roleOf(movesWith: MovesWith | undefined): Role {
  return movesWith === 'sent_transactions' ? 'sent' : movesWith === 'listed_transactions' ? 'listed' : 'any';
}

export class PrincipalActivity implements ActivityView {
  private readonly principals = new Map<string, PrincipalMarks>();
  /** What every principal not remembered inherits: the latest marks of any evicted one. */
  private evictedChangedAt = Number.NEGATIVE_INFINITY;
  private evictedTouchedHeight = Number.NEGATIVE_INFINITY;
  private evictedTokenTouchedHeight = Number.NEGATIVE_INFINITY;
  private mempoolChangedAt = Number.NEGATIVE_INFINITY;
  /**
   * When an accepted broadcast whose principals are unknown (undecodable, not captured) was seen:
   * its sender could be anyone, so every principal counts as changed then (remembered or not).
   */
  private everyoneChangedAt = Number.NEGATIVE_INFINITY;
  /** Counts the changes rules (a) and (b) read: a flight begun before one does not answer for after it. */
  private changes = 0;
  private evictedMempoolSeenAt = Number.NEGATIVE_INFINITY;
  /** The marks of every principal not remembered (from the watermarks above). */
  private inherited: PrincipalMarks = {};
  /** The mempool watcher: when a poll last saw any change (its answer's arrival), and when the latest poll started. */
  private anyMempoolChangeSeenAt = Number.NEGATIVE_INFINITY;
  private unknownMempoolChangeSeenAt = Number.NEGATIVE_INFINITY;
  private lastMempoolPollAt: number | undefined;

  /** The believed tip, as the tracker last told it. */
  private tip: TipRef | undefined;
  /** Blocks above this height up to the tip are (being) learned; those at or below are not. */
  private learnedFrom = Number.POSITIVE_INFINITY;
  /** When learning was last voided (ms): nothing validated before then can lean on it. */
  private voidedAt = Number.POSITIVE_INFINITY;
  /**
   * The same two for principals' state alone, voided by burn blocks too: PoX unlocks (and the
   * upstream's principal ETags with them) move balances without any transaction.
   */
  private stateLearnedFrom = Number.NEGATIVE_INFINITY;
  private stateVoidedAt = Number.NEGATIVE_INFINITY;
  /** When a tip poll last showed the believed tip (ms): what came after it is not seen yet. */
  private tipSeenAt = Number.NEGATIVE_INFINITY;
  /** Counts voids: an answer about a block from before the latest void is ignored. */
  private epoch = 0;
  /** Blocks of this epoch whose touches are not known yet (by height). */
  private readonly pending = new Map<number, string>();
  /** Principals a coinbase named, and the last tip height they count as touched at. */
  private readonly coinbaseUntil = new Map<string, number>();

  /** When the upstream's API was seen holding the broadcasts (ends their settling early). */
  private readonly settling: BroadcastSettling;

  constructor(private readonly settings: ActivitySettings) {
    this.settling = new BroadcastSettling(settings.settleMs);
  }

  // ---- broadcasts and mempool changes ----

  /**
   * A transaction naming `principals` was accepted at `at`: they and the global mempool changed
   * (in the narrower roles, those `roles` names; without it, all of them).
   */
  recordBroadcast(principals: Iterable<string>, at: number, roles?: BroadcastRoles, txId?: string): void {
    const named = [...principals];
    this.markAll('changedAt', at, named, roles);
    this.settling.accepted(txId, named, at);
    this.recordMempoolChange(at);
  }

  /** The mempool changed at `at` in a way the proxy cannot tie to principals (an undecodable broadcast). */
  recordMempoolChange(at: number): void {
    this.mempoolChangedAt = Math.max(this.mempoolChangedAt, at);
    this.changes += 1;
  }

  /**
   * An accepted broadcast the proxy could not tie to principals (undecodable, over the capture
   * budget, cut short): its sender is unknown, so every principal's entries and the global
   * mempool's count as changed at `at`, and the sender's next nonce read goes upstream.
   */
  recordUnknownBroadcast(at: number): void {
    this.everyoneChangedAt = Math.max(this.everyoneChangedAt, at);
    this.settling.poison(undefined, at);
    this.recordMempoolChange(at);
  }

  /**
   * Grows with every broadcast and every mempool change seen: the read path keys its flights by
   * it, so a read that starts after a change never shares an upstream request sent before it.
   */
  get generation(): number {
    return this.changes;
  }

  principalChangedAfter(principal: string, at: number, movesWith?: MovesWith): boolean {
    // Inclusive: an answer validated in the very millisecond a change was recorded may predate it.
    // A change the mempool watcher saw needs no settling: it read the upstream's API itself.
    if (at <= this.everyoneChangedAt + this.settings.settleMs) return true;
    const marks = this.marksOf(principal);
    const field = FIELD[roleOf(movesWith)];
    const changedAt = marks[field.changedAt];
    const mempoolSeenAt = marks[field.mempoolSeenAt];
    return (changedAt !== undefined && this.unsettled(principal, changedAt, at)) || (mempoolSeenAt !== undefined && at <= mempoolSeenAt);
  }

  mempoolChangedAfter(at: number): boolean {
    return this.unsettled(undefined, this.mempoolChangedAt, at) || at <= this.anyMempoolChangeSeenAt;
  }

  /**
   * Whether an answer validated at `at` may predate a broadcast at `changedAt`: validated before
   * it, or within `settleMs` after it unless the watcher saw the upstream's API hold every
   * broadcast since (broadcast-settling.ts).
   */
  private unsettled(principal: string | undefined, changedAt: number, at: number): boolean {
    if (at <= changedAt) return true;
    return at <= changedAt + this.settings.settleMs && !this.settling.hasSettled(principal, changedAt, at);
  }

  // ---- the mempool watcher ----

  /**
   * One poll of the upstream's mempool list, compared with the one before. A change is dated when
   * the poll's answer arrived: it happened before then, and an answer validated before then may
   * not hold it. The poll vouches for what it saw as of its start.
   */
  mempoolPolled(poll: MempoolPoll): void {
    if (poll.kind !== 'unchanged' && poll.seenTxIds) this.settling.seen(poll.seenTxIds, poll.endedAt);
    if (poll.kind !== 'unchanged') {
      this.anyMempoolChangeSeenAt = Math.max(this.anyMempoolChangeSeenAt, poll.endedAt);
      this.changes += 1;
    }
    if (poll.kind === 'unknown') this.unknownMempoolChangeSeenAt = Math.max(this.unknownMempoolChangeSeenAt, poll.endedAt);
    if (poll.kind === 'changed') {
      const roles = poll.senders && poll.listed ? { senders: poll.senders, listed: poll.listed } : undefined;
      this.markAll('mempoolSeenAt', poll.endedAt, poll.principals, roles);
    }
    this.lastMempoolPollAt = poll.startedAt;
  }

  mempoolUnchangedSince(principal: string | undefined, at: number, movesWith?: MovesWith): number | undefined {
    // The watcher's first poll is an 'unknown' one: nothing is vouched for before its answer.
    // Inclusive, as principalChangedAfter: validated in the millisecond a change was seen is before it.
    if (this.lastMempoolPollAt === undefined || at <= this.unknownMempoolChangeSeenAt) return undefined;
    const seenAt = principal === undefined ? this.anyMempoolChangeSeenAt : this.marksOf(principal)[FIELD[roleOf(movesWith)].mempoolSeenAt];
    return seenAt !== undefined && at <= seenAt ? undefined : this.lastMempoolPollAt;
  }

  // ---- blocks ----

  /**
   * The tracker believes a new tip (`reorg`: it does not extend the previous one). Called in the
   * same turn the tracker publishes it, so no decision sees the new tip with the old knowledge.
   * Returns the block to learn, or why learning restarts from this tip.
   */
  tipChanged(next: TipRef, reorg: boolean, at: number): TipOutcome {
    const previous = this.tip;
    this.tip = next;
    this.tipSeenAt = at;
    for (const [principal, until] of this.coinbaseUntil) if (until < next.height) this.coinbaseUntil.delete(principal);
    const why = this.voidReason(previous, next, reorg);
    if (why) {
      this.voidAt(next.height, at);
      return { kind: 'void', why };
    }
    this.pending.set(next.height, next.indexBlockHash);
    if (next.burnHeight === previous?.burnHeight) return { kind: 'learn', block: next, epoch: this.epoch };
    // A new burn block: state learned before it is void (entries from this tip on may lean on
    // what is learned from here); this block's transactions are learned as any block's.
    this.stateLearnedFrom = next.height;
    this.stateVoidedAt = at;
    return { kind: 'learn', block: next, epoch: this.epoch, burnBlock: true };
  }

  private voidReason(previous: TipRef | undefined, next: TipRef, reorg: boolean): (TipOutcome & { kind: 'void' })['why'] | undefined {
    if (!previous) return 'first';
    if (reorg) return 'reorg';
    if (next.burnHeight === 0 || previous.burnHeight === 0) return 'no_burn_height';
    if (next.height === previous.height) return 'same_height';
    if (next.height !== previous.height + 1) return 'gap';
    return undefined;
  }

  /** Learning restarts at `height`: every block above it must be learned again, from `at`. */
  private voidAt(height: number, at: number): void {
    this.epoch += 1;
    this.pending.clear();
    this.learnedFrom = height;
    this.voidedAt = at;
  }

  /**
   * A tip poll answered at `at` with this block as that upstream's tip (the tracker's onPolled, a
   * 304 included). Only the believed tip counts: an upstream behind it, or one ahead whose tip is
   * not believed (yet), says nothing about whether blocks came on top of the believed one.
   */
  tipPolled(indexBlockHash: string, at: number): void {
    if (this.tip?.indexBlockHash === indexBlockHash) this.tipSeenAt = Math.max(this.tipSeenAt, at);
  }

  isWatching(now: number): boolean {
    return now - this.tipSeenAt <= this.settings.watchMs;
  }

  /** What the learner found for a block tipChanged asked for. */
  blockLearned(block: TipRef, epoch: number, touches: BlockTouches, at: number): LearnOutcome {
    if (epoch !== this.epoch || this.pending.get(block.height) !== block.indexBlockHash) return 'outdated';
    if (touches.kind === 'unknown') {
      this.voidAt(this.tip?.height ?? block.height, at);
      return 'unknown';
    }
    const roles = touches.senderPrincipals && touches.listedPrincipals ? { senders: touches.senderPrincipals, listed: touches.listedPrincipals } : undefined;
    this.markAll('touchedHeight', block.height, touches.principals, roles);
    for (const principal of touches.tokenPrincipals ?? touches.principals) this.touchTokens(principal, block.height);
    for (const principal of touches.coinbaseRecipients) {
      this.touch(principal, block.height);
      this.coinbaseUntil.set(principal, block.height + this.settings.coinbaseWindowBlocks);
    }
    this.pending.delete(block.height);
    return 'learned';
  }

  unchangedSince(principal: string, tipHeight: number, at: number, movesWith?: MovesWith): boolean {
    const tip = this.tip;
    if (!tip || this.pending.size > 0) return false;
    // The answer may come from an upstream up to lagBlocks behind the tip it was stamped with.
    const from = tipHeight - (this.settings.lagBlocks ?? 0);
    if (at < this.voidedAt || from < this.learnedFrom || tipHeight > tip.height) return false;
    if (movesWith === undefined && (at < this.stateVoidedAt || from < this.stateLearnedFrom)) return false;
    if ((this.coinbaseUntil.get(principal) ?? Number.NEGATIVE_INFINITY) >= tip.height) return false;
    const marks = this.marksOf(principal);
    const touchedHeight = movesWith === 'token_events' ? marks.tokenTouchedHeight : marks[FIELD[roleOf(movesWith)].touchedHeight];
    return touchedHeight === undefined || touchedHeight <= from;
  }

  /** Principals remembered now (for tests and the admin view). */
  get size(): number {
    return this.principals.size;
  }

  private touch(principal: string, height: number): void {
    this.markAll('touchedHeight', height, [principal]);
  }

  /**
   * Raises one mark to `value` for every principal named: for any transaction, and in each
   * narrower role for those `roles` names there (every principal named when `roles` is absent:
   * not told apart, so in every role). A principal named in a role only (never the case for what
   * tx-roles.ts derives) is marked for any transaction too, so a narrow mark is never above the
   * broad one: eviction's watermarks, taken from the broad marks, then cover the narrow ones.
   */
  private markAll(mark: Mark, value: number, principals: Iterable<string>, roles?: BroadcastRoles): void {
    const raise = (marks: PrincipalMarks, field: keyof PrincipalMarks): void => {
      marks[field] = Math.max(marks[field] ?? value, value);
    };
    const inRole = roles && { sent: new Set(roles.senders), listed: new Set(roles.listed) };
    const named = new Set(principals);
    if (inRole) for (const role of NARROW_ROLES) for (const principal of inRole[role]) named.add(principal);
    for (const principal of named) {
      this.mark(principal, (marks) => {
        raise(marks, FIELD.any[mark]);
        for (const role of NARROW_ROLES) if (!inRole || inRole[role].has(principal)) raise(marks, FIELD[role][mark]);
      });
    }
  }

  private touchTokens(principal: string, height: number): void {
    this.mark(principal, (marks) => (marks.tokenTouchedHeight = Math.max(marks.tokenTouchedHeight ?? height, height)));
  }

  /**
   * A principal's marks: its own, or, when it is not remembered (never seen, or evicted), what the
   * evicted ones left (`inherited`, shared: read only): a principal seen again after its eviction
   * starts from those, never from none. No allocation: this runs on the hit path.
   */
  private marksOf(principal: string): PrincipalMarks {
    return this.principals.get(principal) ?? this.inherited;
  }

  /** Updates a principal's marks and makes it the most recently touched; evicts beyond the bound. */
  private mark(principal: string, update: (marks: PrincipalMarks) => void): void {
    const marks = this.principals.get(principal) ?? { ...this.inherited };
    update(marks);
    this.principals.delete(principal);
    this.principals.set(principal, marks);
    if (this.principals.size <= this.settings.maxPrincipals) return;
    const oldest = this.principals.keys().next().value as string;
    const evicted = this.principals.get(oldest);
    this.principals.delete(oldest);
    if (evicted?.changedAt !== undefined) this.evictedChangedAt = Math.max(this.evictedChangedAt, evicted.changedAt);
    if (evicted?.touchedHeight !== undefined) this.evictedTouchedHeight = Math.max(this.evictedTouchedHeight, evicted.touchedHeight);
    if (evicted?.tokenTouchedHeight !== undefined) this.evictedTokenTouchedHeight = Math.max(this.evictedTokenTouchedHeight, evicted.tokenTouchedHeight);
    if (evicted?.mempoolSeenAt !== undefined) this.evictedMempoolSeenAt = Math.max(this.evictedMempoolSeenAt, evicted.mempoolSeenAt);
    this.inherited = this.inheritedMarks();
  }

  /** A principal not remembered inherits the broad watermarks in every role: the narrow marks are never above the broad ones. */
  private inheritedMarks(): PrincipalMarks {
    const inherited: PrincipalMarks = {};
    const watermarks: Record<Mark, number> = {
      changedAt: this.evictedChangedAt,
      touchedHeight: this.evictedTouchedHeight,
      mempoolSeenAt: this.evictedMempoolSeenAt,
    };
    for (const mark of Object.keys(watermarks) as Mark[]) {
      if (!Number.isFinite(watermarks[mark])) continue;
      for (const role of Object.keys(FIELD) as Role[]) inherited[FIELD[role][mark]] = watermarks[mark];
    }
    if (Number.isFinite(this.evictedTokenTouchedHeight)) inherited.tokenTouchedHeight = this.evictedTokenTouchedHeight;
    return inherited;
  }
}
