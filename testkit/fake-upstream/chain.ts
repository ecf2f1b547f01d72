/**
 * The chain model: canonical and orphaned blocks, transactions and the mempool clock, starting
 * from the recorded chain. Tests move it (new blocks, reorgs, pending and mined txs) and the
 * routes read it, so answers and ETags change as the real upstream's would.
 *
 * Two chains, as on a real node (upstream-contract §5): the burn chain (Bitcoin) has a tip of
 * its own, which GET /extended reports as `chain_tip.burn_block_height`, and Stacks blocks are
 * anchored in burn blocks in tenures:
 * - `advance(n)` (the default, `tenure: 'new'`): each block opens a new tenure, anchored in the
 *   burn tip when a burn block was announced that no block is anchored in yet, otherwise in a
 *   new burn block mined for it (so, on a chain that only ever advances, one burn block each);
 * - `advance(n, 'same')`: blocks in the tip's tenure, at its burn height (same burn block,
 *   same `tenure_height`); by_burn_block_height answers the highest of them;
 * - `advanceBurn(n)`: burn blocks without a Stacks block. The burn tip moves ahead of the tip
 *   block's anchor, by_burn_block_height answers 404 for them, and the status ETag (the tip's
 *   index_block_hash) stays, so a conditional poll of /extended answers 304. `advanceBurn(1)`
 *   then `advance(1)` is Nakamoto's "burn block announced before the tenure's first block";
 * - `mineOrphan()`: a block in a new tenure that lost (`canonical: false`), seen only by
 *   by_burn_block_height at its burn height; the tip stays where it was;
 * - `reorg(depth)`: the last blocks orphaned at their burn heights, new tenures mined on top.
 */
import { minedTokenTransfer, placement } from './bodies.js';
import type { ChainBlock, ChainTx, NakamotoBlock, TxBody } from './model.js';
import { assertCount, HASH_HEX, isoTime, parseEpochMicros, sha256Hex, withHexPrefix } from './primitives.js';
import { recordedChain, recordedMempoolEtag } from './recorded-chain.js';

/** DbTxStatus values: the transaction ETag hashes the number, not the name (§3). */
const TX_STATUS_CODES: Record<string, number> = {
  pending: 0,
  success: 1,
  abort_by_response: -1,
  abort_by_post_condition: -2,
};
/** Spacing of synthesized blocks; the recorded ones are 0 to 25 s apart. */
const BLOCK_INTERVAL_S = 5;
/** Each mempool change moves `mempool_updated_at` on by 1 s: deterministic and always increasing. */
const MEMPOOL_TICK_MICROS = 1_000_000;

export type PrincipalEtags = 'every-block' | 'exact';

/** `new`: a block opens a new tenure (a new burn block, or the announced one); `same`: it extends the tip's tenure. */
export type Tenure = 'new' | 'same';

/** A burn (Bitcoin) block, as the Stacks blocks anchored in it carry it. */
interface BurnBlock {
  height: number;
  hash: string;
  time: number;
}

/** What the chain tells its listeners (the pushing channels): a new canonical block, a tx entering the mempool or mined. */
export type ChainEvent = { kind: 'block'; block: ChainBlock } | { kind: 'mempool'; tx: TxBody } | { kind: 'mined'; tx: TxBody };

export class FakeChain {
  private readonly canonical: ChainBlock[];
  private readonly orphaned: ChainBlock[] = [];
  private readonly txs: Map<string, ChainTx>;
  private readonly pendingTemplate: TxBody;
  private readonly initialTip: string;
  private readonly initialMempool: string;
  private mempoolMicros: number;
  /** The burn chain's tip: what GET /extended reports as burn_block_height (§5), at or above the tip block's anchor. */
  private burnTip: BurnBlock;
  /** Whether some block (canonical or orphaned) is anchored in the burn tip: a new tenure then needs a new burn block. */
  private burnTipTenured = true;
  private seq = 0;
  /** How far ahead of the real tip GET /extended claims to be (a node with a wrong view). */
  private tipJump = 0;
  /**
   * `exact`: a principal's ETags move only when a transaction involving it is mined or enters the
   * mempool (and on every reorg), as the upstream's do; `every-block` (the default): also on
   * every new tip, more often than the upstream (see principalEtag).
   */
  private readonly principalEtags: PrincipalEtags;
  /** Since the start, per principal: new txs involving it that were mined and that entered the mempool. */
  private readonly activity = new Map<string, { mined: number; pending: number }>();
  private reorgs = 0;
  /** Recorded txs a reorg re-mined into another block: replayed bodies that embed them are relocated (relocate.ts). */
  private readonly moved = new Set<string>();
  private readonly listeners: ((event: ChainEvent) => void)[] = [];

  constructor(principalEtags: PrincipalEtags = 'every-block') {
    this.principalEtags = principalEtags;
    const { blocks, txs } = recordedChain();
    this.canonical = blocks;
    this.txs = txs;
    this.pendingTemplate = this.recordedPendingTx();
    this.initialTip = this.tipBlock().index_block_hash;
    this.initialMempool = recordedMempoolEtag();
    this.mempoolMicros = parseEpochMicros(this.initialMempool);
    const tip = this.tipBlock();
    this.burnTip = { height: tip.burn_block_height, hash: tip.burn_block_hash, time: tip.burn_block_time };
  }

  /** Called with every new canonical block and mempool change, after the chain has it (as the upstream pushes after its write). */
  onEvent(listener: (event: ChainEvent) => void): void {
    this.listeners.push(listener);
  }

  tipBlock(): NakamotoBlock {
    const tip = this.canonical.at(-1);
    if (!tip) throw new Error('the chain has no blocks');
    return tip.block;
  }

  /** The burn chain's tip height (GET /extended's and /v2/info's burn_block_height). */
  burnTipHeight(): number {
    return this.burnTip.height;
  }

  /**
   * The tip GET /extended reports: the real tip block with the burn chain's tip (not the block's
   * anchor, §5), or a made-up one `tipJump` blocks (and burn blocks) ahead.
   */
  reportedTip(): Pick<NakamotoBlock, 'height' | 'hash' | 'index_block_hash' | 'burn_block_height'> {
    const tip = this.tipBlock();
    if (this.tipJump === 0) return { height: tip.height, hash: tip.hash, index_block_hash: tip.index_block_hash, burn_block_height: this.burnTip.height };
    const height = tip.height + this.tipJump;
    return {
      height,
      hash: `0x${sha256Hex(`fake-upstream:jumped-block:${height}`)}`,
      index_block_hash: `0x${sha256Hex(`fake-upstream:jumped-index-block:${height}`)}`,
      burn_block_height: this.burnTip.height + this.tipJump,
    };
  }

  jumpTip(blocks: number): void {
    assertCount(blocks, 0, 'jumpTip(blocks)');
    this.tipJump = blocks;
  }

  blockAtHeight(height: number): NakamotoBlock | undefined {
    return this.canonical[height - 1]?.block;
  }

  /** A canonical block by block_hash or index_block_hash (lowercase 0x hex). */
  blockByHash(hash: string): NakamotoBlock | undefined {
    return this.canonical.find(({ block }) => block.hash === hash || block.index_block_hash === hash)?.block;
  }

  /**
   * `ORDER BY canonical DESC, block_height DESC LIMIT 1` (§4.12): an orphan only when no canonical
   * block is left at that burn height.
   */
  highestAtBurnHeight(burnHeight: number): ChainBlock | undefined {
    const byRank = (a: ChainBlock, b: ChainBlock) => Number(b.block.canonical) - Number(a.block.canonical) || b.block.height - a.block.height;
    return [...this.canonical, ...this.orphaned].filter(({ block }) => block.burn_block_height === burnHeight).sort(byRank)[0];
  }

  /** The ids of txs a reorg moved to another block since the start. */
  movedTxIds(): string[] {
    return [...this.moved];
  }

  findTx(txId: string): ChainTx | undefined {
    return this.txs.get(withHexPrefix(txId).toLowerCase());
  }

  /** sha256(`<tx_id>:<index_block_hash>:<microblock_hash>:<status>`) (§3); none for unknown txs. */
  txEtag(txId: string): string | undefined {
    const tx = this.findTx(txId);
    if (!tx) return undefined;
    const microblock = tx.blockIndexHash === undefined ? '' : String(tx.body.microblock_hash);
    const status = TX_STATUS_CODES[String(tx.body.tx_status)];
    return sha256Hex(`${String(tx.body.tx_id)}:${tx.blockIndexHash ?? ''}:${microblock}:${status}`);
  }

  /** The transactions in the mempool, oldest first. */
  pendingTxs(): TxBody[] {
    return [...this.txs.values()].filter((tx) => tx.blockIndexHash === undefined).map((tx) => tx.body);
  }

  mempoolEtag(): string {
    const micros = String(this.mempoolMicros % 1_000_000).padStart(6, '0');
    return `${Math.floor(this.mempoolMicros / 1_000_000)}.${micros}`;
  }

  /**
   * The real principal ETags hash the principal's last tx (and last mempool tx). The fake keeps the
   * recorded value while nothing has happened, so replays stay byte-for-byte, and afterwards derives
   * a new one from every new tip (and mempool change): more changes than upstream, never fewer.
   */
  principalEtag(recorded: string, withMempool: boolean, principal: string): string {
    if (this.principalEtags === 'exact') {
      const { mined, pending } = this.activity.get(principal) ?? { mined: 0, pending: 0 };
      const now = [mined, this.reorgs, ...(withMempool ? [pending] : [])];
      return now.every((n) => n === 0) ? recorded : sha256Hex([recorded, ...now].join(':'));
    }
    const now = [this.tipBlock().index_block_hash, ...(withMempool ? [this.mempoolEtag()] : [])];
    const initial = [this.initialTip, ...(withMempool ? [this.initialMempool] : [])];
    return now.join() === initial.join() ? recorded : sha256Hex([recorded, ...now].join(':'));
  }

  /** The principals a new transaction involves (sender and token-transfer recipient). */
  private touch(body: TxBody, what: 'mined' | 'pending'): void {
    const recipient = (body.token_transfer as { recipient_address?: unknown } | undefined)?.recipient_address;
    for (const principal of new Set([body.sender_address, recipient])) {
      if (typeof principal !== 'string') continue;
      const counts = this.activity.get(principal) ?? { mined: 0, pending: 0 };
      counts[what] += 1;
      this.activity.set(principal, counts);
    }
  }

  advance(blocks: number, tenure: Tenure = 'new'): void {
    assertCount(blocks, 0, 'advanceTip(blocks)');
    for (let i = 0; i < blocks; i++) this.appendBlock([], tenure);
  }

  /** Mines `blocks` burn blocks without a Stacks block: only the burn tip moves. */
  advanceBurn(blocks: number): void {
    assertCount(blocks, 0, 'advanceBurn(blocks)');
    for (let i = 0; i < blocks; i++) this.mineBurnBlock(this.burnTip.time + BLOCK_INTERVAL_S);
  }

  /**
   * A block on top of the tip in a new tenure that lost: `canonical: false` from the start, so
   * the tip, the status ETag and the canonical heights stay; by_burn_block_height at its burn
   * height answers it while no canonical block is anchored there (§4.12).
   */
  mineOrphan(): NakamotoBlock {
    const orphan = { block: this.newBlock(this.tipBlock(), 'new'), txIds: [] };
    orphan.block.canonical = false;
    this.orphaned.push(orphan);
    return orphan.block;
  }

  reorg(depth: number): void {
    assertCount(depth, 1, 'reorg(depth)');
    if (depth >= this.canonical.length) throw new RangeError(`reorg(${depth}) is deeper than the chain`);
    const orphans = this.canonical.splice(this.canonical.length - depth);
    for (const orphan of orphans) orphan.block.canonical = false;
    this.reorgs += 1;
    this.orphaned.push(...orphans);
    // A fork usually re-mines the orphaned txs: they move to the new blocks (new block hash, new ETag).
    for (const orphan of orphans) this.appendBlock([...orphan.txIds]);
    this.appendBlock([]);
  }

  addPending(txId?: string): string {
    const id = txId === undefined ? this.newHash('tx') : withHexPrefix(txId).toLowerCase();
    if (!HASH_HEX.test(id)) throw new TypeError(`addPendingTx: ${txId} is not a 32-byte hex tx id`);
    if (this.txs.has(id)) throw new Error(`addPendingTx: ${id} already exists`);
    const receiptTime = Math.floor(Date.now() / 1000);
    const body = {
      ...this.pendingTemplate,
      tx_id: id,
      receipt_time: receiptTime,
      receipt_time_iso: isoTime(receiptTime),
    };
    this.txs.set(id, { body });
    this.touch(body, 'pending');
    this.bumpMempool();
    this.emit({ kind: 'mempool', tx: body });
    return id;
  }

  confirm(txId: string): void {
    const tx = this.findTx(txId);
    if (!tx || tx.blockIndexHash !== undefined) throw new Error(`confirmTx: ${txId} is not pending`);
    this.appendBlock([String(tx.body.tx_id)]);
    // Mining prunes the tx from the mempool, which moves mempool_updated_at (§3).
    this.bumpMempool();
  }

  bumpMempool(): void {
    this.mempoolMicros += MEMPOOL_TICK_MICROS;
  }

  private appendBlock(txIds: string[], tenure: Tenure = 'new'): void {
    const parent = this.tipBlock();
    const block = this.newBlock(parent, tenure, txIds.length);
    const appended = { block, txIds };
    this.canonical.push(appended);
    for (const id of txIds) this.mine(id, block, parent);
    this.emit({ kind: 'block', block: appended });
    for (const id of txIds) {
      const tx = this.findTx(id);
      if (tx) this.emit({ kind: 'mined', tx: tx.body });
    }
  }

  /**
   * A block on `parent`: in the parent's tenure and burn block (`same`), or opening a new tenure
   * (`new`) in the announced burn block no block is anchored in yet, else in a new burn block.
   * The hashes are drawn in the same order as before burn blocks were modelled (block, index,
   * burn, miner), so the default chain is the same, hash for hash.
   */
  private newBlock(parent: NakamotoBlock, tenure: Tenure, txCount = 0): NakamotoBlock {
    const announced = tenure === 'new' && !this.burnTipTenured;
    const time = Math.max(parent.block_time, announced ? this.burnTip.time : 0) + BLOCK_INTERVAL_S;
    const hash = this.newHash('block');
    const indexBlockHash = this.newHash('index-block');
    const anchor: BurnBlock =
      tenure === 'same'
        ? { height: parent.burn_block_height, hash: parent.burn_block_hash, time: parent.burn_block_time }
        : announced
          ? this.burnTip
          : this.mineBurnBlock(time);
    if (anchor.height === this.burnTip.height) this.burnTipTenured = true;
    return {
      canonical: true,
      height: parent.height + 1,
      hash,
      block_time: time,
      block_time_iso: isoTime(time),
      tenure_height: parent.tenure_height + (tenure === 'new' ? 1 : 0),
      index_block_hash: indexBlockHash,
      parent_block_hash: parent.hash,
      parent_index_block_hash: parent.index_block_hash,
      burn_block_time: anchor.time,
      burn_block_time_iso: isoTime(anchor.time),
      burn_block_hash: anchor.hash,
      burn_block_height: anchor.height,
      miner_txid: this.newHash('miner-tx'),
      tx_count: txCount,
      execution_cost_read_count: 0,
      execution_cost_read_length: 0,
      execution_cost_runtime: 0,
      execution_cost_write_count: 0,
      execution_cost_write_length: 0,
    };
  }

  /** The next burn block, with no Stacks block anchored in it yet. */
  private mineBurnBlock(time: number): BurnBlock {
    this.burnTip = { height: this.burnTip.height + 1, hash: this.newHash('burn-block'), time };
    this.burnTipTenured = false;
    return this.burnTip;
  }

  private emit(event: ChainEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  private mine(txId: string, block: NakamotoBlock, parent: NakamotoBlock): void {
    const tx = this.findTx(txId);
    if (!tx) throw new Error(`unknown tx ${txId}`);
    if (tx.blockIndexHash !== undefined) this.moved.add(String(tx.body.tx_id));
    tx.body =
      tx.blockIndexHash === undefined
        ? minedTokenTransfer(tx.body, block, parent)
        : Object.assign(tx.body, placement(block, parent), { parent_block_hash: block.parent_block_hash });
    tx.blockIndexHash = block.index_block_hash;
    this.touch(tx.body, 'mined');
  }

  /** Deterministic per fake instance, unique across blocks, txs and reorgs. */
  private newHash(label: string): string {
    this.seq += 1;
    return `0x${sha256Hex(`fake-upstream:${label}:${this.seq}`)}`;
  }

  private recordedPendingTx(): TxBody {
    const pending = [...this.txs.values()].find((tx) => tx.blockIndexHash === undefined);
    if (!pending) throw new Error('the recordings hold no pending tx');
    return pending.body;
  }
}
