/**
 * What the proxy knows of principals' activity beyond the tip (issue 15), as the cache policy
 * reads it: broadcasts the upstream accepted through the proxy, and what each new block (and the
 * mempool) touched. Pure types; the registry that keeps them is src/chain/activity.ts.
 */
/**
 * What an answer about a principal moves with, when narrower than "anything about it" (never
 * with a burn block alone, so PoX unlocks and matured miner rewards cannot change it):
 *   - `transactions`: any transaction naming the principal, mined or pending;
 *   - `token_events`: token events (FT and NFT transfers, mints, burns) naming the principal: not
 *     its STX transfers or fees;
 *   - `sent_transactions`: transactions the principal sends or sponsors (its nonces: the upstream
 *     counts the nonces of txs whose sender or sponsor it is, mined and pending);
 *   - `listed_transactions`: transactions the upstream's mempool list files under the principal
 *     (its sender, sponsor, token-transfer recipient, the contract called or deployed): the
 *     upstream's `getMempoolTxList({ address })`, not a principal a contract call's arguments name.
 * A transaction whose JSON or wire form does not say who sent it counts as sending and listing
 * for every principal it names (chain/tx-roles.ts).
 */
export type MovesWith = 'transactions' | 'token_events' | 'sent_transactions' | 'listed_transactions';

export interface ActivityView {
  /**
   * A broadcast accepted through the proxy (or a learned mempool change) named this principal
   * after `at` (ms): entries about it validated before then are not fresh, whatever their tip.
   * With `movesWith` narrower than any transaction, only a change in that role counts.
   */
  principalChangedAfter(principal: string, at: number, movesWith?: MovesWith): boolean;
  /**
   * A broadcast was accepted through the proxy (or the mempool watcher saw any change) after
   * `at`: global mempool entries validated before are not fresh.
   */
  mempoolChangedAfter(at: number): boolean;
  /**
   * Every block after `tipHeight` up to the current tip was learned, none touched `principal`, and
   * nothing since `at` (a burn block, a reorg, a block whose touches are unknown, a gap) made that
   * knowledge unsafe: a confirmed-state entry about it validated at `tipHeight` is still what the
   * upstream would answer. A burn block makes it unsafe too, except for an answer that moves with
   * the principal's transactions alone (`movesWith`).
   */
  unchangedSince(principal: string, tipHeight: number, at: number, movesWith?: MovesWith): boolean;
  /**
   * Whether the chain is watched at `now`: a tip poll showed the believed tip recently enough
   * that no block can have come unseen. `unchangedSince` speaks only of the blocks up to the
   * believed tip; when the polls stop answering (every upstream down), blocks may come that the
   * proxy never saw, let alone read, and those are unknown, not "unchanged".
   */
  isWatching(now: number): boolean;
  /**
   * The mempool watcher's word (chain/mempool-watcher.ts): undefined unless every poll since `at`
   * compared the upstream's mempool with the one before and none saw a change naming `principal`
   * (undefined principal: no change at all; with `movesWith`, no change in that role); else when
   * the latest poll started (ms), which the policy requires to be within the mempool TTL. Absent
   * without a watcher.
   */
  mempoolUnchangedSince?(principal: string | undefined, at: number, movesWith?: MovesWith): number | undefined;
  /**
   * Grows with every change rules (a) and (b) read (a broadcast, a mempool change): the read path
   * keys its flights by it, so a read that starts after a change never shares a fetch sent before.
   */
  readonly generation?: number;
}
