/**
 * When the upstream's API has learned the broadcasts the proxy forwarded (issue 28). The API
 * learns a transaction from its node a moment after the node accepted it, so an answer validated
 * in that moment may still be the old one: the registry keeps answers about a broadcast's
 * principals validated within `settleMs` after it not fresh (activity.ts). The mempool watcher's
 * polls read the API's own mempool list: once a poll's answer holds a broadcast's transaction,
 * the API has it, and an answer asked after that answer arrived reflects it. So the settling of
 * a principal ends early once every broadcast naming it has been seen so.
 *
 * Only broadcasts whose transaction id is known can be looked for. One that names a principal
 * without one (another instance's announcement, a push notice, an undecodable body: every
 * principal), and one that leaves its window unseen, poison: whatever settled before is
 * forgotten, and nothing settles for answers validated within their window. Bounded: at most
 * `maxTracked` broadcasts are looked for (beyond, a broadcast counts as one without an id), and
 * `maxSettled` principals' settling remembered (the oldest forgotten first: not settled then).
 *
 * Pure state: no I/O, no clock (every method takes the time).
 */

interface Settled {
  /** Every broadcast naming it up to this time (ms) was seen. */
  through: number;
  /** Answers validated after this reflect them: the answer that saw the last one, or a poison's window end. */
  from: number;
}

interface Tracked {
  at: number;
  principals: readonly string[];
}

export class BroadcastSettling {
  private readonly tracked = new Map<string, Tracked>();
  /** Per principal: broadcasts naming it not seen yet, and the latest broadcast time among those since it last settled. */
  private readonly open = new Map<string, { count: number; latest: number }>();
  private readonly settled = new Map<string, Settled>();
  /** Per principal: the end of the latest poison's window (ms); answers validated before it never settle. */
  private readonly poisonedUntil = new Map<string, number>();
  private globalSettled: Settled | undefined;
  private globalPoisonedUntil = Number.NEGATIVE_INFINITY;
  private latestTracked = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly settleMs: number,
    private readonly maxTracked = 4096,
    /** Principals whose settling is remembered at most (a forgotten one is not settled: conservative). */
    private readonly maxSettled = 100_000,
  ) {}

  /** An accepted broadcast: its transaction id (any case, with or without 0x; undefined: not known), when, and whom it named. */
  accepted(txId: string | undefined, principals: readonly string[], at: number): void {
    const id = txId === undefined ? undefined : normalId(txId);
    if (id === undefined || this.tracked.size >= this.maxTracked || this.tracked.has(id)) {
      this.poison(principals, at);
      return;
    }
    this.tracked.set(id, { at, principals });
    this.latestTracked = Math.max(this.latestTracked, at);
    for (const principal of principals) {
      const open = this.open.get(principal);
      this.open.set(principal, { count: (open?.count ?? 0) + 1, latest: Math.max(open?.latest ?? at, at) });
    }
  }

  /** A broadcast that cannot be looked for, naming `principals` (every principal, when undefined), at `at`. */
  poison(principals: readonly string[] | undefined, at: number): void {
    const until = at + this.settleMs;
    this.globalSettled = undefined;
    this.globalPoisonedUntil = Math.max(this.globalPoisonedUntil, until);
    for (const principal of principals ?? []) {
      this.settled.delete(principal);
      this.poisonedUntil.set(principal, Math.max(this.poisonedUntil.get(principal) ?? until, until));
    }
    if (principals === undefined) this.settled.clear();
  }

  /** A watcher poll's answer, arrived at `at`, held these transactions: the API has them. */
  seen(txIds: Iterable<string>, at: number): void {
    for (const raw of txIds) {
      const id = normalId(raw);
      const tracked = id === undefined ? undefined : this.tracked.get(id);
      if (id === undefined || !tracked) continue;
      this.tracked.delete(id);
      for (const principal of tracked.principals) this.close(principal, at);
    }
    this.expire(at);
    if (this.tracked.size === 0 && this.latestTracked > Number.NEGATIVE_INFINITY) {
      this.globalSettled = { through: Math.max(this.latestTracked, this.globalPoisonedUntil - this.settleMs), from: Math.max(at, this.globalPoisonedUntil) };
    }
  }

  /**
   * Whether an answer validated at `validatedAt`, after the latest broadcast naming `principal`
   * (any broadcast, for none) at `changedAt`, is known to reflect every broadcast up to then.
   */
  hasSettled(principal: string | undefined, changedAt: number, validatedAt: number): boolean {
    const settled = principal === undefined ? this.globalSettled : this.settled.get(principal);
    return settled !== undefined && settled.through >= changedAt && validatedAt > settled.from;
  }

  private close(principal: string, seenAt: number): void {
    const open = this.open.get(principal);
    if (!open || --open.count > 0) return;
    this.open.delete(principal);
    this.settle(principal, open.latest, seenAt);
  }

  /**
   * Every broadcast naming `principal` up to `latest` was seen (or left its window, poisoning)
   * by `at`. A poison's broadcast counts as covered for answers validated after its window.
   */
  private settle(principal: string, latest: number, at: number): void {
    const previous = this.settled.get(principal);
    const poisonedUntil = this.poisonedUntil.get(principal) ?? Number.NEGATIVE_INFINITY;
    const through = Math.max(latest, previous?.through ?? latest, poisonedUntil - this.settleMs);
    // Kept until a later broadcast names it (an answer validated just after can be asked about
    // long after the window); re-inserted so the oldest goes first when over the bound.
    this.settled.delete(principal);
    this.settled.set(principal, { through, from: Math.max(at, poisonedUntil) });
    if (this.settled.size > this.maxSettled) this.settled.delete(this.settled.keys().next().value as string);
  }

  /** Broadcasts past their window unseen poison what they named; what no answer can depend on any more is forgotten. */
  private expire(now: number): void {
    const horizon = now - this.settleMs;
    const closed = new Map<string, number>();
    for (const [id, tracked] of this.tracked) {
      if (tracked.at >= horizon) continue;
      this.tracked.delete(id);
      this.poison(tracked.principals, tracked.at);
      for (const principal of tracked.principals) {
        const open = this.open.get(principal);
        if (!open || --open.count > 0) continue;
        this.open.delete(principal);
        closed.set(principal, open.latest);
      }
    }
    // Each of these has nothing open any more: what it named was seen or left its window.
    for (const [principal, latest] of closed) this.settle(principal, latest, now);
    for (const [principal, until] of this.poisonedUntil) if (until < now) this.poisonedUntil.delete(principal);
  }
}

function normalId(raw: string): string | undefined {
  const id = raw.toLowerCase().replace(/^0x/, '');
  return /^[0-9a-f]{64}$/.test(id) ? id : undefined;
}
